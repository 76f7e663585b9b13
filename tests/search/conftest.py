"""Fixtures of the search-tree tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ide.changes import ChangeSet
from ide.llm import ModelRouter
from ide.protocol.tree import TreeEvent
from ide.search.base import RunContext
from ide.search.tree import TreeRecorder
from ide.settings import Settings


@pytest.fixture
def eager_thread_switching() -> Iterator[None]:
    """Switch threads every microsecond, so an unlocked read-modify-write races within a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@dataclass
class Run:
    """A RunContext over a real git workspace with a scripted model, and what it reported."""

    ctx: RunContext
    progress: list[dict[str, Any]]
    events: list[TreeEvent]
    workspace: Path


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
        script = write_script(lines)
        llm = {"model": f"scripted:{script}", **overrides.pop("llm", {})}
        settings = Settings.model_validate({"llm": llm, **overrides})
        progress: list[dict[str, Any]] = []
        events: list[TreeEvent] = []

        async def report(event: dict[str, Any]) -> None:
            progress.append(event)

        ctx = RunContext(
            task=task,
            settings=settings,
            router=ModelRouter(settings, base_dir=git_workspace),
            changeset=ChangeSet(git_workspace),
            recorder=TreeRecorder(architecture=architecture, emit=events.append),
            progress=report,
            session_id="test-session",
            thread_id="test-session",
        )
        return Run(ctx, progress, events, git_workspace)

    return make
