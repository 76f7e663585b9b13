"""A real llama-server with a real tiny model, once per module; the tests skip (saying how to get them)
when scripts/realmodel.py has not cached them on this machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.realmodel import GET_IT, RealServer, cached, llama_server


@pytest.fixture(scope="module")
def real_server() -> Iterator[RealServer]:
    found = cached()
    if found is None:
        pytest.skip(f"no llama-server and model cached here: run {GET_IT}")
    with llama_server(*found, context=8192) as server:
        yield server
