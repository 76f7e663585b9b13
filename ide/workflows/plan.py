"""Plan assembly: a workflow plus the orchestrator's stage decisions → an execution plan. No model.

Required stages are always planned; optional ones when the orchestrator included them. A route that
points at a skipped stage follows that stage's success route instead (skipping a stage counts as
passing it), so the routing table only names planned stages, ``DONE`` and ``ABORT``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from ide.workflows.schema import ABORT, DONE, TERMINALS, Aggregation, Workflow


class StageDecision(BaseModel):
    include: bool
    reason: str = ""


class Route(BaseModel):
    """Where a planned stage goes next, and how its agents' results are judged."""

    next_on_success: str
    next_on_failure: str
    max_attempts: int
    agents: list[str] = Field(description="Agent profiles run in parallel")
    tools: list[list[str]] = Field(default_factory=list, description="Extra tools per agent (mcp_tools)")
    failure_aggregation: Aggregation = "any"
    tests_must_pass: bool = False
    agent_defined: bool = True
    read_only: bool = False


class StageContext(BaseModel):
    """What the retrieval agent and the stage's agents are told about a stage."""

    name: str
    description: str = ""
    type: str | None = None
    retrieval_guidance: str = ""
    token_budget: int


class ExecutionPlan(BaseModel):
    """The fixed plan one workflow run executes; plain data, kept in the run's checkpoints."""

    workflow: str
    workflow_type: str
    is_code: bool
    entry: str
    order: list[str] = Field(description="Planned stage ids in workflow order")
    skipped: dict[str, str] = Field(default_factory=dict, description="Skipped stage id → why")
    decisions: dict[str, StageDecision] = Field(default_factory=dict)
    routing_table: dict[str, Route]
    task_context: dict[str, StageContext]
    allows_enrichment: bool = True
    names: dict[str, str] = Field(default_factory=dict, description="Every stage id → its name")

    def name_of(self, stage: str) -> str:
        return self.names.get(stage, stage)


def assemble_plan(
    workflow: Workflow, decisions: Mapping[str, StageDecision], *, default_budget: int = 8000
) -> ExecutionPlan:
    """The execution plan of ``workflow`` with optional stages included per ``decisions`` (by stage id).

    An optional stage with no decision is skipped. Raises ``ValueError`` when every stage is skipped.
    """
    planned: list[str] = []
    skipped: dict[str, str] = {}
    for stage in workflow.stages:
        decision = decisions.get(stage.key)
        if stage.required or (decision is not None and decision.include):
            planned.append(stage.key)
        else:
            skipped[stage.key] = decision.reason if decision is not None else "no decision: left out"
    if not planned:
        raise ValueError(f"workflow {workflow.name} has no stage left to run")
    budgets = workflow.retrieval_strategy_config.retrieval_hints.token_budget

    def resolve(target: Any) -> str:
        seen: set[str] = set()
        key = str(target)
        while key not in TERMINALS and key in skipped:
            if key in seen:
                return DONE
            seen.add(key)
            key = str(workflow.stage(key).routing.next_stage_on_success)
        return key

    table: dict[str, Route] = {}
    context: dict[str, StageContext] = {}
    for key in planned:
        stage = workflow.stage(key)
        table[key] = Route(
            next_on_success=resolve(stage.routing.next_stage_on_success),
            next_on_failure=resolve(stage.routing.next_stage_on_failure),
            max_attempts=stage.routing.max_attempts,
            agents=[ref.profile for ref in stage.parallel_agents],
            tools=[list(ref.mcp_tools) for ref in stage.parallel_agents],
            failure_aggregation=stage.parallel_config.failure_aggregation,
            tests_must_pass=stage.failure_criteria.tests_must_pass,
            agent_defined=stage.failure_criteria.agent_defined,
            read_only=stage.read_only,
        )
        context[key] = StageContext(
            name=stage.name,
            description=stage.description,
            type=stage.type,
            retrieval_guidance=(stage.retrieval_guidance or "").strip(),
            token_budget=budgets.get(stage.name) or budgets.get(stage.type or "") or default_budget,
        )
    return ExecutionPlan(
        workflow=workflow.name,
        workflow_type=workflow.metadata.workflow_type,
        is_code=workflow.metadata.is_code,
        entry=planned[0],
        order=planned,
        skipped=skipped,
        decisions=dict(decisions),
        routing_table=table,
        task_context=context,
        allows_enrichment=workflow.retrieval_strategy_config.allows_enrichment,
        names={stage.key: stage.name for stage in workflow.stages},
    )


__all__ = ["ABORT", "DONE", "ExecutionPlan", "Route", "StageContext", "StageDecision", "assemble_plan"]
