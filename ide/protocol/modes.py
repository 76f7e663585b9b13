"""The one registry of agent architectures and session modes: ids, names and what each does.

The backend offers them as ACP session modes, the CLI (``arbor run --mode``, ``arbor mcp --mode``), the
settings (``agent.architecture``) and workflow agent profiles (``architecture:``) read them from here, and
:mod:`ide.search.architectures` maps each architecture to the class that runs it.
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


ARCHITECTURES = ("react", "lats", "tot", "plan")
"""Architectures that run one task on a RunContext (workflow stage agents and ``arbor mcp`` use these)."""

SESSION_MODES = (*ARCHITECTURES, "workflow", "auto")
"""Every mode a session can be in: the architectures, YAML workflows, and ``auto`` (the model picks)."""

ArchitectureName = Literal["react", "lats", "tot", "plan"]
ModeName = Literal["react", "lats", "tot", "plan", "workflow", "auto"]

MODES: dict[str, ModeInfo] = {
    "react": ModeInfo(
        "react", "ReAct", "Think, call a tool, read the result, repeat until the answer is found"
    ),
    "lats": ModeInfo(
        "lats",
        "LATS tree search",
        "Try several actions in parallel branches, score them, search on from the best (UCT), learn from "
        "failures; you review the best branch's changes",
    ),
    "tot": ModeInfo(
        "tot",
        "Tree of Thoughts",
        "Planner, researcher, analyzer and critic explore approaches; the synthesizer answers from the best "
        "ones (read-only)",
    ),
    "plan": ModeInfo(
        "plan",
        "Plan / execute / replan",
        "A planner writes tasks, an executor does them one by one, a replanner revises the plan after each",
    ),
    "workflow": ModeInfo(
        "workflow",
        "Workflow",
        "The orchestrator picks a YAML workflow (feature, bugfix, refactor, investigate…) and its optional "
        "stages; stages get retrieved context, tests and routing on failure (/workflow NAME)",
    ),
    "auto": ModeInfo(
        "auto",
        "Auto",
        "The orchestrator model picks the mode per task: ReAct for simple questions, LATS for fixes worth "
        "searching, Tree of Thoughts for open design questions, plan for multi-part changes, a workflow "
        "where one fits",
    ),
}
"""Session modes in the order clients list them."""

assert tuple(MODES) == SESSION_MODES


def architecture_or(mode: str, default: str = "react") -> str:
    """``mode`` when it is an architecture that runs one task by itself, else ``default`` (``auto`` and
    ``workflow`` choose per task, so a caller that needs one architecture uses the default)."""
    return mode if mode in ARCHITECTURES else default
