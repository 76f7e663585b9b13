"""A real llama-server with a real tiny model, once per module; the tests skip (saying how to get them)
when scripts/realmodel.py has not cached them on this machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.realmodel import GET_IT, RealServer, cached, llama_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A real model on 2 busy cores generates a few tokens a second: these tests get more than the usual 120 s.
    for item in items:
        if "realmodel" in item.nodeid:
            item.add_marker(pytest.mark.timeout(300))


@pytest.fixture(scope="module")
def real_server() -> Iterator[RealServer]:
    found = cached()
    if found is None:
        pytest.skip(f"no llama-server and model cached here: run {GET_IT}")
    with llama_server(*found, context=8192) as server:
        yield server


@pytest.fixture(scope="module")
def real_build() -> tuple[Path, Path]:
    """The cached server binary and model, for a test that runs (and kills) a server of its own."""
    found = cached()
    if found is None:
        pytest.skip(f"no llama-server and model cached here: run {GET_IT}")
    return found
