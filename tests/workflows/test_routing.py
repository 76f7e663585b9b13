"""Routing of the workflow graph: success, retry through adaptive retrieval, max attempts, abort, and
any / all / majority aggregation of parallel agents — the rules first, then real runs with scripted models."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ide.workflows.graph import ADAPTIVE, aggregate, decide_route
from ide.workflows.mode import WorkflowMode
from ide.workflows.plan import Route
from tests.support.feature_workflow import done
from tests.support.runs import Run

ROUTING_WORKFLOW = """
metadata: {name: routing_check, description: two stages to exercise routing, workflow_type: code_fix}
retrieval_strategy_config:
  rag_strategy:
    sources: [{name: doc_retrieval}]
stages:
  - stage_id: 1
    name: build
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: 2, next_stage_on_failure: ABORT, max_attempts: 2}
  - stage_id: 2
    name: review
    read_only: true
    parallel_agents: [{agent: analysis_agent}, {agent: analysis_agent}, {agent: analysis_agent}]
    parallel_config: {failure_aggregation: majority}
    routing: {next_stage_on_success: DONE, next_stage_on_failure: ABORT, max_attempts: 1}
"""

ROUTE = Route(next_on_success="2", next_on_failure="1", max_attempts=3, agents=["code"])


def route(**kw: object) -> tuple[str, str]:
    args = {
        "failed": True,
        "attempts": 1,
        "enrichments": 0,
        "allows_enrichment": True,
        "max_enrichments": 2,
        "has_agents": True,
        "stage_runs": 1,
        "max_stage_runs": 12,
    }
    args.update(kw)
    return decide_route(ROUTE, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "target", "words"),
    [
        ({"failed": False}, "2", "succeeded"),
        ({}, ADAPTIVE, "adaptive retrieval"),
        ({"attempts": 2, "enrichments": 1}, ADAPTIVE, "enrichment 1 of 2"),
        ({"attempts": 3, "enrichments": 2}, "1", "max_attempts 3"),
        ({"attempts": 2, "enrichments": 2}, "1", "enrichment used up"),
        ({"allows_enrichment": False}, "1", "enrichment is off"),
        ({"has_agents": False}, "1", "no agents to retry"),
        ({"failed": False, "stage_runs": 12}, "ABORT", "max_stage_runs"),
    ],
)
def test_decide_route_follows_the_seed_rules(kwargs: dict[str, object], target: str, words: str) -> None:
    chosen, why = route(**kwargs)
    assert chosen == target
    assert words in why


@pytest.mark.parametrize(
    ("failures", "rule", "failed"),
    [
        ([False, True, False], "any", True),
        ([False, False], "any", False),
        ([True, True, False], "all", False),
        ([True, True], "all", True),
        ([True, True, False], "majority", True),
        ([True, False, False], "majority", False),
        ([True, False], "majority", False),
        ([], "any", False),
    ],
)
def test_aggregation_rules(failures: list[bool], rule: str, failed: bool) -> None:
    assert aggregate(failures, rule) is failed  # type: ignore[arg-type]


@pytest.fixture
def routing_project(cli_project: Path) -> Path:
    folder = cli_project / ".arbor" / "workflows"
    folder.mkdir(parents=True)
    (folder / "routing.yaml").write_text(ROUTING_WORKFLOW)
    return cli_project


async def run_routing(run: Run) -> list[tuple[str, int, bool, str]]:
    outcome = await WorkflowMode(chosen="routing_check").run(run.ctx)
    return [(r["name"], r["attempt"], r["failed"], r["next"]) for r in outcome.figures["routing"]]


async def test_a_failed_stage_is_retried_after_adaptive_retrieval_then_majority_failure_aborts(
    routing_project: Path, make_ctx: Callable[..., Run]
) -> None:
    lines = [
        done("agent.code", "could not find where greeter parses arguments", "failed"),
        done("agent.code", "found it in greeter/cli.py"),
        done("agent.analysis", "looks wrong", "failed"),
        done("agent.analysis", "fine"),
        done("agent.analysis", "wrong again", "failed"),
    ]
    run = make_ctx(routing_project, lines, task="Explain how greeter parses arguments")
    assert await run_routing(run) == [
        ("build", 1, True, ADAPTIVE),
        ("build", 2, False, "2"),
        ("review", 1, True, "ABORT"),
    ]
    nodes = list(run.ctx.recorder.tree.nodes.values())
    assert [n.label for n in nodes if n.label.startswith(ADAPTIVE)] == [f"{ADAPTIVE}: build"]
    answer = next(n for n in nodes if n.kind == "answer")
    assert answer.label == "workflow abort" and answer.status == "failed"
    # The retry was told why the first attempt failed.
    briefs = [
        e for e in run.progress if e["type"] == "thought" and "Adaptive retrieval for build" in e["text"]
    ]
    assert briefs


async def test_max_attempts_takes_the_failure_route(
    routing_project: Path, make_ctx: Callable[..., Run]
) -> None:
    lines = [done("agent.code", "no luck", "failed"), done("agent.code", "still no luck", "failed")]
    run = make_ctx(routing_project, lines)
    assert await run_routing(run) == [("build", 1, True, ADAPTIVE), ("build", 2, True, "ABORT")]


async def test_a_majority_of_passing_agents_passes_the_stage(
    routing_project: Path, make_ctx: Callable[..., Run]
) -> None:
    lines = [
        done("agent.code", "done"),
        done("agent.analysis", "fine"),
        done("agent.analysis", "one problem", "failed"),
        done("agent.analysis", "fine"),
    ]
    run = make_ctx(routing_project, lines)
    assert await run_routing(run) == [("build", 1, False, "2"), ("review", 1, False, "DONE")]
    # Three analysis agents ran in parallel under the review stage's node.
    nodes = run.ctx.recorder.tree.nodes
    review = next(n for n in nodes.values() if n.label == "review")
    assert sorted(n.status for n in nodes.values() if n.parent == review.id and n.kind == "step") == [
        "failed",
        "solution",
        "solution",
    ]


async def test_enrichment_off_takes_the_failure_route_at_once(
    routing_project: Path, make_ctx: Callable[..., Run]
) -> None:
    path = routing_project / ".arbor" / "workflows" / "routing.yaml"
    path.write_text(
        ROUTING_WORKFLOW.replace(
            "retrieval_strategy_config:\n", "retrieval_strategy_config:\n  allows_enrichment: false\n"
        )
    )
    run = make_ctx(routing_project, [done("agent.code", "no", "failed")])
    assert await run_routing(run) == [("build", 1, True, "ABORT")]
