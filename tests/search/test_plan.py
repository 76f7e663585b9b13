"""Plan / execute / replan on a scripted model: the shared thread, the queue, replanning and the tree."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ide.llm.errors import ModelError
from ide.protocol.tree import SearchTree
from ide.search.plan import PlanExecute
from ide.search.plan_prompts import parse_plan
from tests.support.plan_script import (
    GREET,
    TASK_1,
    TASK_2,
    capture_calls,
    done,
    edit,
    executor,
    nodes_of,
    planner,
    read,
    replanner,
    report,
    two_task_script,
)
from tests.support.runs import Run


async def test_two_tasks_run_in_order_and_their_edits_land_in_the_change_set(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(two_task_script(), architecture="plan")
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.stop_reason == "end_turn"
    assert outcome.answer == "greet now says Hi (pkg/greet.py:2) and the README says so."
    assert outcome.changeset is None and outcome.answered is False
    assert run.ctx.changeset.changed_paths() == ["README.md", "pkg/greet.py"]
    assert run.ctx.changeset.read_text("pkg/greet.py") == GREET.replace("Hello", "Hi")
    assert (run.workspace / "pkg" / "greet.py").read_text() == GREET
    assert [role for role, _messages, _tools in calls] == [
        "plan.planner",
        "plan.planner",
        "plan.executor",
        "plan.executor",
        "plan.executor",
        "plan.executor",
        "plan.replanner",
    ]
    # The planner and replanner may only read; the executor may edit.
    assert "edit_file" not in calls[0][2] and "read_file" in calls[0][2]
    assert "edit_file" in calls[2][2] and "edit_file" not in calls[6][2]
    announced = [event for event in run.progress if event["type"] == "tool_start"]
    assert [(event["name"], event["args"].get("path")) for event in announced] == [
        ("read_file", "pkg/greet.py"),
        ("edit_file", "pkg/greet.py"),
        ("edit_file", "README.md"),
    ]
    thoughts = "".join(event["text"] for event in run.progress if event["type"] == "thought")
    assert thoughts.index(f"Task 1: {TASK_1}") < thoughts.index(f"Task 2: {TASK_2}")
    plans = [[e["status"] for e in event["entries"]] for event in run.progress if event["type"] == "plan"]
    assert plans == [
        ["pending", "pending"],
        ["in_progress", "pending"],
        ["completed", "pending"],
        ["completed", "in_progress"],
        ["completed", "completed"],
    ]
    assert "Changed the greeting." in thoughts
    figures = run.ctx.recorder.tree.figures
    assert (figures["stop_reason"], figures["tasks"], figures["tasks_failed"], figures["replans"]) == (
        "end_turn",
        2,
        0,
        0,
    )
    assert figures["by_role"]["plan.executor"]["calls"] == 4
    assert outcome.figures == figures


async def test_planner_executor_and_replanner_continue_one_thread_in_the_checkpointer(
    make_run: Callable[..., Run], tmp_path: Path
) -> None:
    run = make_run(two_task_script(), architecture="plan")
    path = tmp_path / "checkpoints.sqlite"
    async with aiosqlite.connect(path) as conn:
        run.ctx.checkpointer = AsyncSqliteSaver(conn)
        await PlanExecute().run(run.ctx)

    # Read back through a new connection: the thread is on disk, not only in memory.
    async with aiosqlite.connect(path) as conn:
        saved = await AsyncSqliteSaver(conn).aget_tuple({"configurable": {"thread_id": "test-session:plan"}})
    assert saved is not None
    messages = saved.checkpoint["channel_values"]["messages"]
    speakers = [m.name if isinstance(m, AIMessage) else m.type for m in messages]
    assert speakers == [
        "human",  # the user's request
        "planner",
        "tool",
        "planner",
        "human",  # task 1
        "executor",
        "tool",
        "executor",
        "human",  # task 2
        "executor",
        "tool",
        "executor",
        "human",  # review
        "replanner",
    ]
    assert messages[0].text == "Fix the greeting so it says Hi"
    assert saved.checkpoint["channel_values"]["past_steps"] == [
        {"task": TASK_1, "result": "greet says Hi now", "ok": True},
        {"task": TASK_2, "result": "README says hi", "ok": True},
    ]


async def test_the_executor_sees_the_plan_and_the_earlier_tasks_results(make_run: Callable[..., Run]) -> None:
    run = make_run(two_task_script(), architecture="plan")
    calls = capture_calls(run)

    await PlanExecute().run(run.ctx)

    role, seen, _tools = calls[4]  # the executor's first call for task 2
    assert role == "plan.executor"
    assert seen[-1].text.startswith(f"Execute task 2 (the last one queued): {TASK_2}")
    said = [(m.type, getattr(m, "name", None), m.text) for m in seen]
    assert ("ai", "planner", f"Here is the plan:\n1. {TASK_1}\n2. {TASK_2}") in said
    edited = [m for m in seen if isinstance(m, ToolMessage) and m.name == "edit_file"]
    assert len(edited) == 1 and "edited pkg/greet.py" in edited[0].text
    assert any(t == "ai" and n == "executor" and "greet says Hi now" in text for t, n, text in said)
    # ...and the replanner saw both tasks' work.
    review = calls[6][1]
    assert "1. [done] Change the greeting" in review[-1].text and "2. [done] Mention" in review[-1].text


async def test_a_failed_task_makes_the_replanner_revise_the_queue(make_run: Callable[..., Run]) -> None:
    revised = "Edit greet in pkg/greet.py so it returns Hi"
    run = make_run(
        [
            planner(f"1. {TASK_1}\n2. {TASK_2}"),
            executor(tool_calls=edit("pkg/greet.py", "Howdy", "Hi")),
            executor(report("failed", "the text Howdy is not in pkg/greet.py")),
            # Keeping the queue as it was after a failure is not a revision: one repair.
            replanner(json.dumps({"tasks": [TASK_2]})),
            replanner(json.dumps({"tasks": [revised, TASK_2]})),
            executor(tool_calls=edit("pkg/greet.py", "Hello", "Hi")),
            executor(report("done", "greet says Hi")),
            executor(report("done", "README needs no change")),
            replanner(done("Fixed greet (pkg/greet.py:2).")),
        ],
        architecture="plan",
    )
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.stop_reason == "end_turn"
    assert run.ctx.changeset.read_text("pkg/greet.py") == GREET.replace("Hello", "Hi")
    first_review = calls[3][1][-1].text
    assert first_review.startswith("Task 1 failed: the text Howdy is not in pkg/greet.py")
    assert f"Still queued:\n1. {TASK_2}" in first_review
    repair_request = calls[4][1][-1].text
    assert "could not be used: tasks: unchanged after a failed task" in repair_request
    assert calls[4][2] == []  # the repair call offers no tools
    assert calls[5][1][-1].text.startswith(f"Execute task 2 (1 more queued after it): {revised}")
    steps = nodes_of(run, "step")
    assert [(s.thought, s.status) for s in steps] == [
        (TASK_1, "failed"),
        (TASK_2, "pruned"),
        (revised, "evaluated"),
        (TASK_2, "evaluated"),
    ]
    assert steps[0].reflection == "the text Howdy is not in pkg/greet.py"
    figures = outcome.figures
    assert (figures["tasks"], figures["tasks_failed"], figures["replans"]) == (3, 1, 1)


async def test_a_task_that_runs_out_of_model_calls_fails(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            planner(f"1. {TASK_1}"),
            executor(tool_calls=read("pkg/greet.py")),
            executor(tool_calls=read("README.md")),  # the second and last call: its read never runs
            replanner(done("I could not finish: the executor ran out of steps.")),
        ],
        architecture="plan",
        plan={"executor_max_steps": 2},
    )
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.answer == "I could not finish: the executor ran out of steps."
    assert [e["args"]["path"] for e in run.progress if e["type"] == "tool_start"] == ["pkg/greet.py"]
    (step,) = nodes_of(run, "step")
    assert step.status == "failed" and step.reflection.startswith("ran out of model calls (2")
    # The unrun call is answered in the thread, so the replanner's history stays well-formed.
    review = calls[3][1]
    unrun = [m for m in review if isinstance(m, ToolMessage) and m.text.startswith("not run")]
    assert len(unrun) == 1 and unrun[0].tool_call_id == review[-3].tool_calls[0]["id"]
    assert review[-1].text.startswith("Task 1 failed: ran out of model calls")


async def test_max_replans_ends_the_run_with_what_was_done(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            planner("1. Try A"),
            executor(report("failed", "A did not work")),
            replanner(json.dumps({"tasks": ["Try B"]})),
            executor(report("failed", "B did not work")),
            replanner(json.dumps({"tasks": ["Try C"]})),
        ],
        architecture="plan",
        plan={"max_replans": 1},
    )

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.stop_reason == "max_turn_requests"
    assert "after 1 replans (the limit, plan.max_replans)" in outcome.answer
    assert "1. Try C" in outcome.answer
    assert "[FAILED] Try A — A did not work" in outcome.answer
    assert "[FAILED] Try B — B did not work" in outcome.answer
    figures = outcome.figures
    assert (figures["stop_reason"], figures["replans"], figures["tasks_failed"]) == (
        "max_turn_requests",
        1,
        2,
    )
    assert figures["by_role"]["plan.replanner"]["calls"] == 2
    (answer,) = nodes_of(run, "answer")
    assert answer.status == "terminated_early"
    assert run.ctx.recorder.tree.best_path[-1] == answer.id
    assert [s.thought for s in nodes_of(run, "step")] == ["Try A", "Try B"]


@pytest.mark.parametrize(
    ("first", "why"),
    [
        ("We should probably change the greeting somehow.", "no numbered list of tasks and no JSON plan"),
        ("1. a\n2. b\n3. c", "tasks: 3 tasks, but a plan may hold at most 2; merge some"),
    ],
)
async def test_a_malformed_plan_is_repaired_once(make_run: Callable[..., Run], first: str, why: str) -> None:
    run = make_run(
        [
            planner(first),
            planner(json.dumps({"tasks": [TASK_1]})),
            executor(report("done", "ok")),
            replanner(done("Done.")),
        ],
        architecture="plan",
        plan={"max_tasks": 2},
    )
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.answer == "Done."
    role, seen, tools = calls[1]
    assert role == "plan.planner" and tools == []
    assert seen[-2].text == first and why in seen[-1].text
    assert [s.thought for s in nodes_of(run, "step")] == [TASK_1]


async def test_a_plan_malformed_twice_ends_the_run_saying_why(make_run: Callable[..., Run]) -> None:
    run = make_run([planner("No idea."), planner("Still no idea.")], architecture="plan")

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.stop_reason == "end_turn"
    assert outcome.answer.startswith("I could not make a usable plan for this task, so nothing was changed.")
    assert "malformed twice" in outcome.answer
    assert run.ctx.changeset.changed_paths() == []
    (plan,) = nodes_of(run, "plan")
    assert plan.status == "failed" and plan.label == "no usable plan"
    tree = run.ctx.recorder.tree
    assert tree.finished and tree.figures["tasks"] == 0 and nodes_of(run, "step") == []


async def test_each_role_uses_its_own_model(
    make_run: Callable[..., Run], write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    other = write_script(
        [
            executor(tool_calls=edit("pkg/greet.py", "Hello", "Hi")),
            executor(report("done", "greet says Hi")),
        ]
    )
    run = make_run(
        [planner(f"1. {TASK_1}"), replanner(done("Done."))],
        architecture="plan",
        llm={"plan": {"executor": f"scripted:{other}"}},
    )

    outcome = await PlanExecute().run(run.ctx)

    main = str(run.ctx.router.spec_for("plan.planner"))
    assert main != f"scripted:{other}"
    assert outcome.figures["roles"] == {
        "plan.planner": main,
        "plan.executor": f"scripted:{other}",
        "plan.replanner": main,
    }
    (step,) = nodes_of(run, "step")
    assert step.model == f"scripted:{other}" and step.role == "plan.executor"
    assert step.input_tokens > 0 and step.output_tokens > 0
    assert run.ctx.changeset.read_text("pkg/greet.py") == GREET.replace("Hello", "Hi")


async def test_cancelling_closes_the_tree_and_the_next_turn_continues_the_thread(
    make_run: Callable[..., Run],
) -> None:
    saver = InMemorySaver()
    run = make_run(two_task_script(), architecture="plan")
    run.ctx.checkpointer = saver
    calls = capture_calls(run)
    original = run.ctx.router.stream
    blocked = asyncio.Event()

    async def stream(
        role: str, messages: list[BaseMessage], tools: Any = (), on_chunk: Any = None, **kw: Any
    ) -> AIMessage:
        if len(calls) == 3:  # the executor's call after its edit: hang until cancelled
            blocked.set()
            await asyncio.Event().wait()
        return await original(role, messages, tools, on_chunk, **kw)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    turn = asyncio.create_task(PlanExecute().run(run.ctx))
    await blocked.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn

    tree = run.ctx.recorder.tree
    assert tree.finished and tree.figures["stop_reason"] == "cancelled"
    assert SearchTree(run.events) == tree
    step = nodes_of(run, "step")[0]
    assert step.status == "terminated_early"
    assert tree.best_path[-1] == nodes_of(run, "action")[-1].id  # the edit, the last node reached
    assert not any(node.status == "active" for node in tree.nodes.values())
    assert run.ctx.changeset.read_text("pkg/greet.py") == GREET.replace("Hello", "Hi")

    again = make_run(
        [planner("1. Check the README"), executor("ok"), replanner(done("Checked."))], architecture="plan"
    )
    again.ctx.checkpointer = saver
    later = capture_calls(again)
    outcome = await PlanExecute().run(again.ctx)
    assert outcome.answer == "Checked."
    seen = later[0][1]
    assert any(isinstance(m, ToolMessage) and "edited pkg/greet.py" in m.text for m in seen)
    assert [m.text for m in seen if isinstance(m, HumanMessage)][-1] == "Fix the greeting so it says Hi"


async def test_a_model_error_closes_the_tree_and_propagates(make_run: Callable[..., Run]) -> None:
    run = make_run([planner(f"1. {TASK_1}")], architecture="plan")  # nothing left for the executor

    with pytest.raises(ModelError, match="ran out"):
        await PlanExecute().run(run.ctx)

    tree = run.ctx.recorder.tree
    assert tree.finished and tree.figures["stop_reason"] == "error"
    assert nodes_of(run, "step")[0].status == "terminated_early"


async def test_the_tree_reads_plan_steps_actions_and_ends_on_the_answer(make_run: Callable[..., Run]) -> None:
    run = make_run(two_task_script(), architecture="plan")

    await PlanExecute().run(run.ctx)

    tree = run.ctx.recorder.tree
    assert SearchTree(run.events) == tree
    root = tree.nodes[tree.root or ""]
    assert (
        root.kind == "root" and root.label == "Fix the greeting so it says Hi" and root.status == "evaluated"
    )
    (plan_id,) = tree.children(root.id)
    plan = tree.nodes[plan_id]
    assert (plan.kind, plan.label, plan.thought, plan.role) == (
        "plan",
        "plan: 2 tasks",
        f"1. {TASK_1}\n2. {TASK_2}",
        "plan.planner",
    )
    assert plan.input_tokens > 0 and plan.latency_ms > 0
    children = [tree.nodes[c] for c in tree.children(plan_id)]
    assert [(c.kind, c.status) for c in children] == [
        ("action", "evaluated"),  # the planner's read
        ("step", "evaluated"),
        ("step", "evaluated"),
        ("evaluation", "evaluated"),
    ]
    for step, path in zip(children[1:3], ["pkg/greet.py", "README.md"], strict=True):
        (action_id,) = tree.children(step.id)
        action = tree.nodes[action_id]
        assert action.kind == "action" and action.label == f"Edit {path}" and action.action is not None
        assert (action.action.tool, action.action.args["path"]) == ("edit_file", path)
        assert action.observation and action.observation.startswith("edited")
        assert step.role == "plan.executor" and step.output_tokens > 0
    review = children[3]
    assert review.role == "plan.replanner" and review.label == "done"
    (answer_id,) = tree.children(review.id)
    answer = tree.nodes[answer_id]
    assert answer.kind == "answer" and answer.status == "solution"
    assert tree.best_path == [root.id, plan_id, review.id, answer_id]


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        ('Plan:\n```json\n{"tasks": ["a", "b"]}\n```', ["a", "b"]),
        ("Plan:\n1. read it\n2) fix it\nThat is all.", ["read it", "fix it"]),
        ("Step 1: read it\nStep 2: fix it", ["read it", "fix it"]),
    ],
)
def test_parse_plan_reads_json_and_numbered_lists(text: str, tasks: list[str]) -> None:
    assert parse_plan(text, 8) == tasks


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"tasks": []}', "the plan has no tasks"),
        ('{"tasks": ["a", " "]}', "a task is empty"),
        ("nothing numbered here", "no numbered list"),
    ],
)
def test_parse_plan_says_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_plan(text, 8)
