"""Fixtures of the search-tree tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.runs import Run, scripted_run


@pytest.fixture
def eager_thread_switching() -> Iterator[None]:
    """Switch threads every microsecond, so an unlocked read-modify-write races within a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.fixture
def make_run(git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]) -> Callable[..., Run]:
    """``make_run(script_lines, architecture="lats", task="…", **section_overrides)`` → :class:`Run`.

    Section overrides are dicts merged into Settings, e.g. ``lats={"max_iterations": 2}``,
    ``llm={"concurrency": {"scripted": 5}}``, ``llm_roles={"lats": {"evaluation": "scripted:other.jsonl"}}``.
    """

    def make(
        lines: list[dict[str, Any]],
        *,
        architecture: str = "lats",
        task: str = "Fix the greeting so it says Hi",
        **overrides: Any,
    ) -> Run:
        return scripted_run(
            git_workspace, write_script(lines), architecture=architecture, task=task, **overrides
        )

    return make
