"""The slash commands a session offers (ACP ``available_commands_update``): ``/workflow`` lists, picks or runs
a YAML workflow, ``/resume`` goes on with an interrupted one.

A command is answered here, in words, or becomes a run of the workflow mode (:class:`CommandRun`), which the
turn runs like any other (:mod:`ide.backend.turn`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import AvailableCommand, AvailableCommandsUpdate, CurrentModeUpdate, UnstructuredCommandInput

if TYPE_CHECKING:
    from ide.backend.session import Session
    from ide.backend.turn import Emit
    from ide.search.architectures import Architecture
    from ide.workflows.mode import ActiveRun

COMMANDS = (
    AvailableCommand(
        name="workflow",
        description="Run a YAML workflow: /workflow lists them, /workflow NAME picks one for this session "
        "(auto: the orchestrator picks), /workflow NAME TASK runs TASK with it once",
        input=UnstructuredCommandInput(hint="NAME [task]"),
    ),
    AvailableCommand(
        name="resume", description="Go on with an interrupted workflow from its last finished step"
    ),
)
"""Slash commands the agent offers (ACP available_commands_update)."""


def parse_command(text: str) -> tuple[str, str] | None:
    """``("workflow", rest)`` or ``("resume", rest)`` for a prompt that is one of our slash commands."""
    stripped = text.strip()
    for command in COMMANDS:
        word = "/" + command.name
        if stripped == word or stripped.startswith(word + " ") or stripped.startswith(word + "\n"):
            return command.name, stripped[len(word) :].strip()
    return None


def commands_update() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=list(COMMANDS)
    )


@dataclass(frozen=True)
class CommandRun:
    """A command that runs ``task`` with ``architecture`` (the workflow mode) in this turn."""

    task: str
    architecture: Architecture


def workflow_mode(
    session: Session, chosen: str | None = None, resume: ActiveRun | None = None
) -> Architecture:
    """The workflow mode over the session's chosen workflow (or ``chosen``), keeping its run in the session
    so that an interrupted one can be resumed."""
    from ide.workflows.mode import WorkflowMode

    return WorkflowMode(chosen=chosen or session.workflow, remember=session.keep_workflow_run, resume=resume)


async def answer_command(session: Session, name: str, rest: str, emit: Emit) -> str | CommandRun:
    """``/workflow [NAME [TASK]]`` and ``/resume``: the answer when no model is needed, else the run."""
    from ide.backend.config_options import config_options, options_update
    from ide.workflows.loader import load_catalog
    from ide.workflows.mode import AUTO

    if name == "resume":
        active = session.interrupted
        if active is None or not active.resumable:
            return "There is no interrupted workflow in this session to resume."
        return CommandRun(active.task, workflow_mode(session, resume=active))
    catalog = await asyncio.to_thread(load_catalog, Path(session.cwd))
    if not rest:
        lines = [
            f"- **{w.name}** ({w.metadata.workflow_type}): {w.metadata.description}"
            for w in catalog.workflows.values()
        ]
        lines += [f"- could not load {problem}" for problem in catalog.problems]
        current = "the orchestrator picks" if session.workflow == AUTO else session.workflow
        return (
            f"Workflows (now: {current}; `/workflow NAME` picks one, `/workflow auto` lets the "
            "orchestrator pick):\n" + "\n".join(lines)
        )
    chosen, _, task = rest.partition(" ")
    if chosen != AUTO and chosen not in catalog.workflows:
        known = ", ".join(sorted(catalog.workflows))
        return f"There is no workflow {chosen!r}. The workflows are: {known}."
    if task.strip():
        return CommandRun(task.strip(), workflow_mode(session, chosen=chosen))
    if session.choose_workflow(chosen):
        await emit(CurrentModeUpdate(session_update="current_mode_update", current_mode_id="workflow"))
    names = [AUTO, *(name for name in catalog.workflows if name != AUTO)]
    await emit(options_update(await config_options(session, names)))
    picked = "the orchestrator picks the workflow" if chosen == AUTO else f"the workflow is {chosen}"
    return f"Workflow mode: {picked} for the next prompts."
