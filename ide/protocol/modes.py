"""The one table of agent architectures and session modes: ids, names and what each does.

Everything else about modes derives from :data:`MODE_TABLE`: the backend offers them as ACP session modes,
the CLI (``arbor run --mode``, ``arbor mcp --mode``), the settings (``agent.architecture``) and workflow
agent profiles (``architecture:``) read the tuples and Literals below, and :mod:`ide.search.architectures`
maps each architecture to the class that runs it and says when ``auto`` picks each choice (keyed by this
table, checked complete by its tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class ModeInfo:
    """One session mode as a client shows it."""

    id: str
    name: str
    description: str
    architecture: bool = True
    """Runs one task by itself on a RunContext; ``workflow`` and ``auto`` choose per task."""


AUTO = "auto"
"""The mode in which the orchestrator model picks another mode for each task."""

MODE_TABLE = (
    ModeInfo("react", "ReAct", "Think, call a tool, read the result, repeat until the answer is found"),
    ModeInfo(
        "lats",
        "LATS tree search",
        "Try several actions in parallel branches, score them, search on from the best (UCT), learn from "
        "failures; you review the best branch's changes",
    ),
    ModeInfo(
        "tot",
        "Tree of Thoughts",
        "Planner, researcher, analyzer and critic explore approaches; the synthesizer answers from the best "
        "ones (read-only)",
    ),
    ModeInfo(
        "plan",
        "Plan / execute / replan",
        "A planner writes tasks, an executor does them one by one, a replanner revises the plan after each",
    ),
    ModeInfo(
        "workflow",
        "Workflow",
        "The orchestrator picks a YAML workflow (feature, bugfix, refactor, investigate…) and its optional "
        "stages; stages get retrieved context, tests and routing on failure (/workflow NAME)",
        architecture=False,
    ),
    ModeInfo(
        AUTO,
        "Auto",
        "The orchestrator model picks the mode per task: ReAct for simple questions, LATS for fixes worth "
        "searching, Tree of Thoughts for open design questions, plan for multi-part changes, a workflow "
        "where one fits",
        architecture=False,
    ),
)
"""Session modes in the order clients list them."""

MODES: dict[str, ModeInfo] = {mode.id: mode for mode in MODE_TABLE}
"""The table by mode id."""

SESSION_MODES = tuple(MODES)
"""Every mode a session can be in: the architectures, YAML workflows, and ``auto`` (the model picks)."""

ARCHITECTURES = tuple(mode.id for mode in MODE_TABLE if mode.architecture)
"""Architectures that run one task on a RunContext (workflow stage agents and ``arbor mcp`` use these)."""

AUTO_CHOICES = tuple(mode for mode in SESSION_MODES if mode != AUTO)
"""What ``auto`` chooses among: every architecture and the workflow mode."""

# Literals built from the table (a tuple subscript is a Literal of its items), for pydantic fields.
ModeName = Literal[SESSION_MODES]  # type: ignore[valid-type]
ArchitectureName = Literal[ARCHITECTURES]  # type: ignore[valid-type]
AutoChoiceName = Literal[AUTO_CHOICES]  # type: ignore[valid-type]


def architecture_or(mode: str, default: str = "react") -> str:
    """``mode`` when it is an architecture that runs one task by itself, else ``default`` (``auto`` and
    ``workflow`` choose per task, so a caller that needs one architecture uses the default)."""
    return mode if mode in ARCHITECTURES else default
