"""A RunContext over a real workspace with a scripted model, for the search and workflow tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ide.changes import ChangeSet
from ide.llm import ModelRouter
from ide.protocol.tree import TreeEvent
from ide.search.base import RunContext
from ide.search.tree import TreeRecorder
from ide.settings import Settings


@dataclass
class Run:
    """A RunContext over a real workspace with a scripted model, and what it reported."""

    ctx: RunContext
    progress: list[dict[str, Any]]
    events: list[TreeEvent]
    workspace: Path


def scripted_run(
    workspace: Path, script: Path, *, architecture: str, task: str, checkpointer: Any = None, **overrides: Any
) -> Run:
    """A :class:`Run` whose model is ``scripted:script``; ``overrides`` are Settings sections (dicts)."""
    llm = {"model": f"scripted:{script}", **overrides.pop("llm", {})}
    settings = Settings.model_validate({"llm": llm, **overrides})
    progress: list[dict[str, Any]] = []
    events: list[TreeEvent] = []

    async def report(event: dict[str, Any]) -> None:
        progress.append(event)

    ctx = RunContext(
        task=task,
        settings=settings,
        router=ModelRouter(settings, base_dir=workspace),
        changeset=ChangeSet(workspace),
        recorder=TreeRecorder(architecture=architecture, emit=events.append),
        progress=report,
        session_id="test-session",
        thread_id="test-session",
        checkpointer=checkpointer,
    )
    return Run(ctx, progress, events, workspace)
