"""The workflow's state machine: a LangGraph StateGraph built from an execution plan, routing by rule.

For every planned stage S (named by its stage name)::

    S ─(Send per agent)→ S_agents ─→ S_join ─(route)→ next stage | adaptive_retrieval | done | abort
      └─(no agents: the stage only runs the tests)──→ S_join
    adaptive_retrieval ─→ the stage that failed (retried with the enriched context)

``S`` counts the attempt and prepares the stage's context, ``S_agents`` runs one agent (fanned out with
``Send``), ``S_join`` aggregates the agents' failures (any / all / majority), merges their edits, runs
the tests when the stage asks for them and evaluates the route with :func:`decide_route`. Routing is
deterministic: nothing but the failure flag and the counters in state decide where the run goes, and
each decision is kept in ``state["log"]``. The work of the nodes is done by a :class:`StageWork`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Protocol, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from ide.workflows.plan import ExecutionPlan, Route
from ide.workflows.schema import ABORT, DONE, Aggregation

ADAPTIVE = "adaptive_retrieval"
DONE_NODE = "done"
ABORT_NODE = "abort"
RESERVED = (ADAPTIVE, DONE_NODE, ABORT_NODE)


def _merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    return {**(left or {}), **(right or {})}


class WorkflowState(TypedDict, total=False):
    """Plain data only: it is checkpointed after every node (see docs/traps.md: msgpack round-trips)."""

    plan: dict[str, Any]
    task: str
    current: str
    """The stage running, or the one adaptive retrieval works for."""
    previous: str | None
    attempts: dict[str, int]
    enrichments: dict[str, int]
    stage_runs: int
    agent_results: Annotated[dict[str, Any], _merge]
    """``"<stage>#<run>/<i>"`` → one agent's result (see StageWork.run_agent)."""
    failure: dict[str, Any] | None
    """The last stage failure: {"stage", "summary", "details"}; cleared by a success."""
    context: dict[str, str]
    """Retrieved context per stage, rendered for the prompt (upfront, then enriched)."""
    changes: dict[str, Any]
    """The run's change set so far (ide.changes.snapshot.encode_changeset)."""
    summaries: dict[str, str]
    """What each stage's agents last said, by stage id."""
    log: Annotated[list[dict[str, Any]], operator.add]
    next: str
    outcome: str
    answer: str


class StageWork(Protocol):
    """What the nodes do; the graph only wires them and routes."""

    async def start_stage(self, state: WorkflowState, stage: str) -> dict[str, Any]: ...

    async def run_agent(self, payload: dict[str, Any]) -> dict[str, Any]: ...

    async def join_stage(self, state: WorkflowState, stage: str) -> dict[str, Any]:
        """Returns at least ``{"failed": bool, "summary": str}`` plus state updates under ``"update"``."""
        ...

    async def adaptive_retrieval(self, state: WorkflowState) -> dict[str, Any]: ...

    async def record_route(self, state: WorkflowState, stage: str, decision: dict[str, Any]) -> None: ...

    async def finish(self, state: WorkflowState, outcome: str) -> dict[str, Any]: ...


def aggregate(failures: list[bool], rule: Aggregation) -> bool:
    """Whether a stage whose agents failed as ``failures`` fails under ``rule`` (no agents: no failure)."""
    if not failures:
        return False
    failed = sum(failures)
    if rule == "all":
        return failed == len(failures)
    if rule == "majority":
        return failed * 2 > len(failures)
    return failed > 0


def decide_route(
    route: Route,
    *,
    failed: bool,
    attempts: int,
    enrichments: int,
    allows_enrichment: bool,
    max_enrichments: int,
    has_agents: bool,
    stage_runs: int,
    max_stage_runs: int,
) -> tuple[str, str]:
    """(target, the condition that chose it): a stage id, ``adaptive_retrieval``, ``DONE`` or ``ABORT``.

    1. success → next_on_success;
    2. failure with ``attempts`` ≥ max_attempts → next_on_failure;
    3. failure, enrichment allowed, fewer than ``max_enrichments`` enrichments, and agents to retry →
       adaptive retrieval, then the same stage again;
    4. any other failure → next_on_failure.
    A stage target after ``max_stage_runs`` stage runs becomes ABORT, so routing loops end.
    """
    if not failed:
        target, why = route.next_on_success, "succeeded → next_stage_on_success"
    elif attempts >= route.max_attempts:
        target = route.next_on_failure
        why = f"failed, attempt {attempts} of max_attempts {route.max_attempts} → next_stage_on_failure"
    elif allows_enrichment and has_agents and enrichments < max_enrichments:
        return ADAPTIVE, (
            f"failed, attempt {attempts} of {route.max_attempts}, enrichment {enrichments} of "
            f"{max_enrichments} → adaptive retrieval, then retry"
        )
    else:
        reason = (
            "enrichment is off for this workflow"
            if not allows_enrichment
            else "the stage has no agents to retry"
            if not has_agents
            else f"enrichment used up ({enrichments} of {max_enrichments})"
        )
        target, why = route.next_on_failure, f"failed, {reason} → next_stage_on_failure"
    if target not in (DONE, ABORT) and stage_runs >= max_stage_runs:
        return ABORT, f"{why} ({target}), but the run made {stage_runs} stage runs (max_stage_runs) → ABORT"
    return target, why


def node_name(plan: ExecutionPlan, stage: str) -> str:
    name = plan.task_context[stage].name
    return f"{name}_{stage}" if name in RESERVED else name


def build_workflow_graph(
    plan: ExecutionPlan,
    work: StageWork,
    *,
    max_enrichments: int,
    max_stage_runs: int,
    checkpointer: Any = None,
) -> Any:
    """Compile the state machine of ``plan`` (entry: its first planned stage)."""
    graph = StateGraph(WorkflowState)
    targets = {DONE: DONE_NODE, ABORT: ABORT_NODE, ADAPTIVE: ADAPTIVE}
    for stage in plan.order:
        targets[stage] = node_name(plan, stage)

    for stage in plan.order:
        name = targets[stage]
        route = plan.routing_table[stage]
        graph.add_node(name, _start(work, stage))
        graph.add_node(f"{name}_agents", work.run_agent)
        graph.add_node(f"{name}_join", _join(work, plan, stage, max_enrichments, max_stage_runs))
        graph.add_conditional_edges(name, _fan_out(stage, route, f"{name}_agents", f"{name}_join"))
        graph.add_edge(f"{name}_agents", f"{name}_join")
        graph.add_conditional_edges(
            f"{name}_join", _follow(targets), [targets[t] for t in _exits(plan, stage)]
        )

    async def adaptive(state: WorkflowState) -> dict[str, Any]:
        enrichments = dict(state.get("enrichments") or {})
        enrichments[state["current"]] = enrichments.get(state["current"], 0) + 1
        return {**await work.adaptive_retrieval(state), "enrichments": enrichments}

    graph.add_node(ADAPTIVE, adaptive)
    graph.add_conditional_edges(ADAPTIVE, lambda state: targets[state["current"]], list(targets.values()))

    for terminal, outcome in ((DONE_NODE, "done"), (ABORT_NODE, "abort")):

        async def finish(state: WorkflowState, outcome: str = outcome) -> dict[str, Any]:
            return {"outcome": outcome, **await work.finish(state, outcome)}

        graph.add_node(terminal, finish)
        graph.add_edge(terminal, END)
    graph.add_edge(START, targets[plan.entry])
    return graph.compile(checkpointer=checkpointer)


def _exits(plan: ExecutionPlan, stage: str) -> list[str]:
    route = plan.routing_table[stage]
    return sorted({route.next_on_success, route.next_on_failure, ADAPTIVE, ABORT})


def _start(work: StageWork, stage: str) -> Any:
    async def start(state: WorkflowState) -> dict[str, Any]:
        attempts = dict(state.get("attempts") or {})
        enrichments = dict(state.get("enrichments") or {})
        if state.get("previous") != stage:
            # Entered from another stage (not a retry): its counters start again.
            attempts[stage] = 0
            enrichments[stage] = 0
        attempts[stage] = attempts.get(stage, 0) + 1
        update: dict[str, Any] = {
            "current": stage,
            "attempts": attempts,
            "enrichments": enrichments,
            "stage_runs": state.get("stage_runs", 0) + 1,
        }
        update.update(await work.start_stage({**state, **update}, stage))  # type: ignore[typeddict-item]
        return update

    return start


def _fan_out(stage: str, route: Route, agents_node: str, join_node: str) -> Any:
    def fan_out(state: WorkflowState) -> Any:
        if not route.agents:
            return join_node
        run = state.get("stage_runs", 0)
        return [
            Send(
                agents_node,
                {
                    "stage": stage,
                    "index": i,
                    "profile": profile,
                    "tools": route.tools[i] if i < len(route.tools) else [],
                    "key": f"{stage}#{run}/{i}",
                    "task": state.get("task", ""),
                    "context": (state.get("context") or {}).get(stage, ""),
                    "failure": state.get("failure"),
                    "changes": state.get("changes"),
                    "summaries": state.get("summaries") or {},
                    "attempt": (state.get("attempts") or {}).get(stage, 1),
                },
            )
            for i, profile in enumerate(route.agents)
        ]

    return fan_out


def _join(work: StageWork, plan: ExecutionPlan, stage: str, max_enrichments: int, max_stage_runs: int) -> Any:
    route = plan.routing_table[stage]

    async def join(state: WorkflowState) -> dict[str, Any]:
        result = await work.join_stage(state, stage)
        failed = bool(result["failed"])
        attempts = (state.get("attempts") or {}).get(stage, 1)
        enrichments = (state.get("enrichments") or {}).get(stage, 0)
        target, why = decide_route(
            route,
            failed=failed,
            attempts=attempts,
            enrichments=enrichments,
            allows_enrichment=plan.allows_enrichment,
            max_enrichments=max_enrichments,
            has_agents=bool(route.agents),
            stage_runs=state.get("stage_runs", 0),
            max_stage_runs=max_stage_runs,
        )
        decision = {
            "stage": stage,
            "name": plan.name_of(stage),
            "failed": failed,
            "attempt": attempts,
            "enrichments": enrichments,
            "condition": why,
            "next": target,
            "summary": result.get("summary", ""),
        }
        await work.record_route(state, stage, decision)
        update = dict(result.get("update") or {})
        update.update({"next": target, "previous": stage, "log": [decision]})
        if failed:
            update["failure"] = {
                "stage": plan.name_of(stage),
                "summary": result.get("summary", ""),
                "details": result.get("details", ""),
            }
        else:
            update["failure"] = None
        return update

    return join


def _follow(targets: dict[str, str]) -> Any:
    def follow(state: WorkflowState) -> str:
        return targets[state["next"]]

    return follow
