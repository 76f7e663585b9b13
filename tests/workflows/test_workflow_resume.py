"""Resuming a workflow run from its checkpoints, at the exact moments a ``kill -9`` can land.

The ACP test (test_workflow_acp.py) kills a real backend at a moment it can only aim at; here the
checkpointer itself dies at the chosen point, so each window is hit every time."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from ide.workflows.loader import load_catalog
from ide.workflows.plan import StageDecision, assemble_plan
from ide.workflows.runner import WorkflowRun
from tests.support.feature_workflow import code_lines, lines_of_test_agent
from tests.support.runs import Run, scripted_run

TEST_STAGE = "2"
Writes = list[tuple[str, Any]]


def stage_started(writes: Writes) -> bool:
    return ("current", TEST_STAGE) in writes


def agent_finished(writes: Writes) -> bool:
    return any(c == "agent_results" and any(k.startswith(f"{TEST_STAGE}#") for k in v) for c, v in writes)


class Killed(BaseException):
    """The process died here: nothing after it ran."""


class DyingSaver(InMemorySaver):
    """An in-memory checkpointer that dies at the first checkpoint after a task saved writes that
    ``dies_after`` matches: the moment between a finished task and the checkpoint of its step."""

    def __init__(self, dies_after: Callable[[Writes], bool]) -> None:
        super().__init__()
        self.dies_after = dies_after
        self.armed = False
        self.alive = True

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        if self.alive and self.dies_after(list(writes)):
            self.armed = True

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self.armed and self.alive:
            self.alive = False
            raise Killed()
        return super().put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)


def workflow_run(
    project: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    lines: list[dict[str, Any]],
    saver: Any,
) -> tuple[Run, WorkflowRun]:
    run = scripted_run(
        project,
        write_script(lines),
        architecture="workflow",
        task="add a --version flag to the CLI",
        checkpointer=saver,
        workflows={"test_command": f"{sys.executable} -m pytest -q"},
    )

    async def allow(title: str, command: str, purpose: str) -> bool:
        return True

    run.ctx.ask_permission = allow
    catalog = load_catalog(None)
    workflow = catalog.get("feature_with_iterative_testing")
    plan = assemble_plan(workflow, {"3": StageDecision(include=False), "4": StageDecision(include=False)})
    return run, WorkflowRun(run.ctx, catalog, workflow, plan)


@pytest.mark.parametrize(
    ("dies_after", "task", "left"),
    [
        (stage_started, "test_generation_and_execution", lines_of_test_agent()),
        (agent_finished, "test_generation_and_execution_agents", []),
    ],
    ids=["after-stage-start", "after-stage-agent"],
)
async def test_a_run_killed_between_a_finished_task_and_its_checkpoint_goes_on_from_that_task(
    cli_project: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    dies_after: Callable[[Writes], bool],
    task: str,
    left: list[dict[str, Any]],
) -> None:
    saver = DyingSaver(dies_after)
    lines = code_lines() + (lines_of_test_agent() if left == [] else [])
    _, work = workflow_run(cli_project, write_script, lines, saver)
    try:
        await work.run()
    except Killed:
        pass
    else:
        raise AssertionError("the checkpointer never died: the window was not reached")
    snapshot = await work.graph().aget_state(work.config())
    # The window itself: the task holds its result, and nothing is "next".
    assert snapshot.next == () and [t.name for t in snapshot.tasks] == [task]

    # What the model has left to say: a re-run of a finished task would find its lines gone.
    second, again = workflow_run(cli_project, write_script, left, saver)
    again.run_id = work.run_id
    outcome = await again.resume()

    routing = [(r["name"], r["failed"]) for r in outcome.figures["routing"]]
    assert routing == [("code_generation", False), ("test_generation_and_execution", False)]
    assert outcome.changeset is not None
    assert sorted(outcome.changeset.changed_paths()) == ["greeter/cli.py", "tests/test_cli.py"]
    # One tree: the resumed root, the stage that finished before, and the stage started before the kill.
    nodes = list(second.ctx.recorder.tree.nodes.values())
    roots = [n.label for n in nodes if n.parent is None]
    assert roots == ["workflow feature_with_iterative_testing (resumed)"]
    labels = [n.label for n in nodes if n.kind == "plan"]
    assert "test_generation_and_execution (started before the restart)" in labels
    assert [n.label for n in nodes if n.kind == "evaluation"] == ["tests passed"]
    plans = [e["entries"] for e in second.progress if e["type"] == "plan"]
    assert [e["status"] for e in plans[-1]] == ["completed", "completed"]
