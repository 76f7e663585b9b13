"""The architectures a session can run, by mode name, and ``auto``: the orchestrator model picks one.

Every architecture — ReAct, LATS, Tree of Thoughts, plan/execute/replan, and the workflow mode — runs on a
:class:`~ide.search.base.RunContext`; the classes are imported when first used. Mode ids, names and
descriptions live in the table of :mod:`ide.protocol.modes`; what this module adds is keyed by it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ide.protocol.modes import AUTO_CHOICES, AutoChoiceName
from ide.search.base import Router, RunContext, RunOutcome, StructuredOutputError, ask_structured

CLASSES: dict[str, tuple[str, str]] = {
    "react": ("ide.search.react", "ReactArchitecture"),
    "lats": ("ide.search.lats", "LatsSearch"),
    "tot": ("ide.search.tot", "TotSearch"),
    "plan": ("ide.search.plan", "PlanExecute"),
}
"""Architecture → (module, class), for every :data:`ide.protocol.modes.ARCHITECTURES` (the workflow mode
is ``ide.workflows.mode.WorkflowMode``, which the session builds with its workflow state)."""

WHEN_TO_CHOOSE: dict[str, str] = {
    "react": """for questions and simple, single-step work: explaining code, finding where something is,
a small fix in a named place.""",
    "lats": """for a change whose right approach is uncertain and can be checked: a bug whose cause is
unknown, a fix several approaches could make, where trying branches and scoring them (with the tests)
pays off.""",
    "tot": """for open design or analysis questions that need no edits: comparing approaches, weighing
trade-offs, "how should we…", "what is the best way to…".""",
    "plan": """for a multi-part change whose steps are clear: several related edits across files done
one after another (add X, then use it in Y, then update Z).""",
    "workflow": """when the task is a whole feature with tests, a bug to reproduce, fix and verify, a
refactor to keep behaviour, or an investigation: a YAML workflow with stages and test runs fits it.""",
}
"""When ``auto`` should pick each of :data:`ide.protocol.modes.AUTO_CHOICES` (its line of the prompt)."""

AUTO_PROMPT = "You route a coding agent's task to the agent architecture that fits it best.\n" + "\n".join(
    f'Answer "{mode}" {WHEN_TO_CHOOSE[mode]}' for mode in AUTO_CHOICES
)


class Architecture(Protocol):
    """Runs one task on a RunContext and records it as a tree. One that sets ``keeps_conversation``
    adds the question and answer to the session's conversation itself (ReAct's graph does); for the
    others the session adds them."""

    name: str

    async def run(self, ctx: RunContext) -> RunOutcome: ...


class AutoChoice(BaseModel):
    """The orchestrator's answer in ``auto`` mode."""

    architecture: AutoChoiceName = Field(description=f"{', '.join(AUTO_CHOICES[:-1])} or {AUTO_CHOICES[-1]}")
    reason: str = Field("", description="one short sentence")


def load_architecture(mode: str) -> Architecture:
    """A new instance of the architecture for ``mode`` (one of :data:`CLASSES`)."""
    if mode not in CLASSES:
        raise ValueError(f"no architecture {mode!r}; there are {', '.join(CLASSES)}")
    module, name = CLASSES[mode]
    cls: Any = getattr(importlib.import_module(module), name)
    return cls()


async def choose_architecture(
    router: Router, task: str, history: Sequence[BaseMessage] = ()
) -> tuple[str, str]:
    """``auto`` mode: ask the orchestrator role which mode of :data:`AUTO_CHOICES` fits ``task``;
    (mode, reason).

    An answer that stays malformed after one repair falls back to ReAct, saying so in the reason.
    """
    recent = [m for m in history if m.type in ("human", "ai")][-4:]
    context = "\n".join(f"{m.type}: {m.text[:300]}" for m in recent)
    prompt = f"Earlier in this conversation:\n{context}\n\nTask:\n{task}" if context else f"Task:\n{task}"
    try:
        choice, _reply = await ask_structured(
            router, "orchestrator", [SystemMessage(AUTO_PROMPT), HumanMessage(prompt)], AutoChoice
        )
    except StructuredOutputError as exc:
        return "react", f"the orchestrator's answer was unusable ({exc}); using ReAct"
    return choice.architecture, choice.reason.strip() or f"the orchestrator chose {choice.architecture}"
