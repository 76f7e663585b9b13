"""The orchestrator: a model picks the workflow for a task and decides each optional stage, with reasons.

One call of the ``orchestrator`` role, answered as JSON. The user may have chosen the workflow already
(``/workflow NAME`` or the window's picker); then the model only decides the optional stages, and a
workflow with no optional stage needs no call at all. An answer that stays unusable after one repair
falls back to a rule the user can predict: the first workflow whose selection patterns match the task
(else ``investigate`` for questions, else the first code workflow), optional stages left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ide.search.base import Router, StructuredOutputError, ask_structured
from ide.workflows.plan import StageDecision
from ide.workflows.schema import Workflow

ROLE = "orchestrator"

SELECT_PROMPT = """You are the orchestrator of Arbor, a coding agent. Pick the workflow that fits the
user's task, then decide for each optional stage of that workflow whether to include it, following the
stage's guidance. Required stages always run. Give a short reason for every choice.

Workflows:
{workflows}"""

STAGES_PROMPT = """You are the orchestrator of Arbor, a coding agent. The user chose the workflow
{name} ({description}). Decide for each optional stage whether to include it for this task, following
the stage's guidance, with a short reason.

Optional stages:
{stages}"""


class StageChoice(BaseModel):
    stage_id: str = Field(description="an optional stage's stage_id")
    include: bool
    reason: str = ""


class OrchestratorChoice(BaseModel):
    workflow: str = Field(description="the chosen workflow's name")
    reason: str = Field("", description="why, one sentence")
    stages: list[StageChoice] = Field(default_factory=list, description="one entry per optional stage")


class StagesChoice(BaseModel):
    stages: list[StageChoice] = Field(default_factory=list, description="one entry per optional stage")


@dataclass
class Selection:
    workflow: Workflow
    reason: str
    decisions: dict[str, StageDecision] = field(default_factory=dict)
    chosen_by: str = "orchestrator"
    """``orchestrator``, ``user`` or ``fallback``."""


def describe_workflow(workflow: Workflow) -> str:
    meta = workflow.metadata
    lines = [f"- {meta.name} ({meta.workflow_type}): {meta.description}"]
    if meta.selection_criteria.applicable_patterns:
        lines.append(f"  fits tasks like: {', '.join(meta.selection_criteria.applicable_patterns)}")
    lines.extend(_optional_lines(workflow, indent="  "))
    return "\n".join(lines)


def _optional_lines(workflow: Workflow, indent: str = "") -> list[str]:
    lines = []
    for stage in workflow.stages:
        if not stage.required:
            guidance = " ".join((stage.reasoning_guidance or "no guidance").split())
            lines.append(f"{indent}optional stage {stage.stage_id} {stage.name}: {guidance}")
    return lines


async def select_workflow(
    router: Router, task: str, workflows: dict[str, Workflow], *, chosen: str | None = None
) -> Selection:
    """The workflow for ``task`` and its stage decisions (``chosen``: the user's pick, by name)."""
    if chosen is not None:
        workflow = workflows[chosen]
        optional = [s for s in workflow.stages if not s.required]
        if not optional:
            return Selection(workflow, "chosen by the user", {}, "user")
        prompt = STAGES_PROMPT.format(
            name=workflow.name,
            description=workflow.metadata.description,
            stages="\n".join(_optional_lines(workflow)),
        )
        try:
            answer, _ = await ask_structured(
                router, ROLE, [SystemMessage(prompt), HumanMessage(f"Task:\n{task}")], StagesChoice
            )
        except StructuredOutputError as exc:
            return Selection(workflow, f"chosen by the user; optional stages left out ({exc})", {}, "user")
        return Selection(workflow, "chosen by the user", _decisions(workflow, answer.stages), "user")

    prompt = SELECT_PROMPT.format(workflows="\n".join(describe_workflow(w) for w in workflows.values()))
    try:
        answer, _ = await ask_structured(
            router, ROLE, [SystemMessage(prompt), HumanMessage(f"Task:\n{task}")], OrchestratorChoice
        )
    except StructuredOutputError as exc:
        return _fallback(task, workflows, f"the orchestrator's answer was unusable ({exc})")
    if answer.workflow not in workflows:
        return _fallback(task, workflows, f"the orchestrator named no known workflow ({answer.workflow!r})")
    workflow = workflows[answer.workflow]
    return Selection(
        workflow, answer.reason.strip() or "no reason given", _decisions(workflow, answer.stages)
    )


def _decisions(workflow: Workflow, choices: list[StageChoice]) -> dict[str, StageDecision]:
    # The model may name a stage by its id or by its name.
    given = {c.stage_id.strip(): c for c in choices}
    decisions: dict[str, StageDecision] = {}
    for stage in workflow.stages:
        if stage.required:
            continue
        choice = given.get(stage.key) or given.get(stage.name)
        if choice is None:
            decisions[stage.key] = StageDecision(
                include=False, reason="the orchestrator did not decide: left out"
            )
        else:
            decisions[stage.key] = StageDecision(include=choice.include, reason=choice.reason.strip())
    return decisions


QUESTION = re.compile(r"^\s*(what|where|why|how|which|who|when|explain|is|are|does|do|can)\b|\?\s*$", re.I)


def _fallback(task: str, workflows: dict[str, Workflow], why: str) -> Selection:
    for workflow in workflows.values():
        for pattern in workflow.metadata.selection_criteria.applicable_patterns:
            try:
                if re.search(pattern, task, re.I):
                    return Selection(
                        workflow, f"{why}; its pattern {pattern!r} matches the task", {}, "fallback"
                    )
            except re.error:
                continue
    if QUESTION.search(task) and "investigate" in workflows:
        return Selection(workflows["investigate"], f"{why}; the task reads as a question", {}, "fallback")
    code = [w for w in workflows.values() if w.metadata.is_code] or list(workflows.values())
    return Selection(code[0], f"{why}; using the first code workflow", {}, "fallback")
