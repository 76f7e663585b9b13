"""The feature workflow end to end: orchestrator → code → tests in a scratch worktree → review."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from ide.workflows.mode import WorkflowMode
from tests.support.feature_workflow import FEATURE_SCRIPT, NEW_ARG, assert_tests_pass_and_version_prints
from tests.support.git import git
from tests.support.runs import Run


async def test_add_a_version_flag_runs_through_feature_with_iterative_testing(
    cli_project: Path, make_ctx: Callable[..., Run]
) -> None:
    run = make_ctx(cli_project, FEATURE_SCRIPT, workflows={"test_command": f"{sys.executable} -m pytest -q"})
    asked: list[str] = []

    async def allow(title: str, command: str, purpose: str) -> bool:
        asked.append(command)
        return True

    run.ctx.ask_permission = allow
    outcome = await WorkflowMode().run(run.ctx)

    assert outcome.stop_reason == "end_turn"
    assert outcome.figures["outcome"] == "done"
    routes = [(r["name"], r["failed"], r["next"]) for r in outcome.figures["routing"]]
    # security_review and lint_and_format were skipped: test stage → (3 skipped → 4 skipped) → DONE
    assert routes == [("code_generation", False, "2"), ("test_generation_and_execution", False, "DONE")]
    assert asked == [f"{sys.executable} -m pytest -q"]
    # The tests ran in a scratch worktree: nothing was written to the project.
    assert git(cli_project, "status", "--porcelain") == ""
    changeset = outcome.changeset
    assert changeset is not None and sorted(changeset.changed_paths()) == [
        "greeter/cli.py",
        "tests/test_cli.py",
    ]
    assert NEW_ARG in changeset.read_text("greeter/cli.py")
    # ACP plan updates walk the planned stages from pending to completed.
    plans = [e["entries"] for e in run.progress if e["type"] == "plan"]
    assert [e["status"] for e in plans[0]] == ["pending", "pending"]
    assert [e["status"] for e in plans[-1]] == ["completed", "completed"]
    thoughts = "".join(e["text"] for e in run.progress if e["type"] == "thought")
    assert "The orchestrator chose the workflow feature_with_iterative_testing" in thoughts
    assert "Optional stage security_review: skipping" in thoughts
    # The tree: stage runs chained in order, each with its routing decision, tests as an evaluation node.
    nodes = run.ctx.recorder.tree.nodes.values()
    stages = [n for n in nodes if n.kind == "plan" and not n.label.startswith("plan:")]
    assert [n.label for n in stages] == ["code_generation", "test_generation_and_execution"]
    assert "succeeded → next_stage_on_success" in (stages[0].reflection or "")
    tests = [n for n in nodes if n.kind == "evaluation"]
    assert [n.label for n in tests] == ["tests passed"]
    # Applying the proposal gives a project whose tests pass, --version included.
    for path in changeset.changed_paths():
        (cli_project / path).write_text(changeset.read_text(path))
    assert_tests_pass_and_version_prints(cli_project)
