"""LATS over a real git workspace with the scripted model: selection, expansion in branches, evaluation
with real signals, backpropagation and lessons, limits, routing, concurrency and cancellation."""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ide.changes.testrun import detect_test_command
from ide.llm.errors import ModelError
from ide.search.base import RunOutcome
from ide.search.lats import LatsSearch
from tests.support.git import git
from tests.support.lats_script import (
    EDIT_HEY,
    EDIT_HI,
    EDIT_WINS,
    GREETING,
    GREP,
    LIST,
    READ,
    TWO_ANSWERS_TESTED,
    answer,
    evaluate,
    expand,
    lesson,
    select,
)
from tests.support.runs import Run


def record_calls(run: Run) -> list[tuple[str, list[BaseMessage]]]:
    """Wrap the router's ``stream`` so the test sees every call's role and messages, in call order."""
    calls: list[tuple[str, list[BaseMessage]]] = []
    router = run.ctx.router
    original = router.stream

    async def stream(role: str, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        calls.append((role, list(messages)))
        return await original(role, messages, *args, **kwargs)

    router.stream = stream  # type: ignore[method-assign]
    return calls


async def search(run: Run) -> RunOutcome:
    return await LatsSearch().run(run.ctx)


def node(run: Run, node_id: str) -> Any:
    return run.ctx.recorder.tree.nodes[node_id]


# -- selection ------------------------------------------------------------------------------------


async def test_uct_expands_the_best_scored_child_and_backpropagates(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [READ, LIST, evaluate(3), evaluate(8), READ, GREP, evaluate(5), evaluate(5)],
        lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 2},
    )
    outcome = await search(run)
    tree = run.ctx.recorder.tree

    assert tree.children("n1") == ["n2", "n3"]
    assert tree.children("n3") == ["n4", "n5"]  # n3 scored 8 of 10: the higher UCT value
    assert tree.children("n2") == []
    # 0.8 + 1.414 * sqrt(ln 2 / 1) = 0.8 + 1.177
    thoughts = "".join(e["text"] for e in run.progress if e["type"] == "thought")
    assert "Iteration 2/2: selected n3 (UCT 1.98: value 0.80 + exploration 1.18)" in thoughts
    assert (node(run, "n1").visits, node(run, "n3").visits, node(run, "n2").visits) == (4, 3, 1)
    assert node(run, "n3").value == pytest.approx((0.8 + 0.5 + 0.5) / 3)
    assert node(run, "n1").value == pytest.approx((0.3 + 0.8 + 0.5 + 0.5) / 4)
    assert outcome.stop_reason == "max_turn_requests"
    assert "iteration limit (2)" in outcome.answer
    assert outcome.figures["iterations"] == 2
    assert outcome.figures["nodes_per_iteration"] == [2, 2]
    assert outcome.figures["phases"]["selection"]["calls"] == 0
    # no answer: the best is the highest-valued leaf, the earliest of equals
    assert tree.best_path == ["n1", "n3", "n4"]
    assert tree.finished and tree.figures["stop_reason"] == "max_turn_requests"


@pytest.mark.parametrize(
    ("selection_lines", "expanded", "fallbacks"),
    [
        ([select("n3")], "n3", 0),
        ([select("n99")], "n2", 1),
        ([{"role": "lats.selection", "content": "n3, I think"}] * 2, "n2", 1),
    ],
    ids=["model-pick", "unknown-id", "malformed-twice"],
)
async def test_selection_model_picks_within_the_beam_or_falls_back_to_uct(
    make_run: Callable[..., Run], selection_lines: list[dict[str, Any]], expanded: str, fallbacks: int
) -> None:
    run = make_run(
        [READ, LIST, evaluate(8), evaluate(3), *selection_lines, READ, GREP, evaluate(5), evaluate(5)],
        lats={"expansion_width": 2, "beam_width": 3, "max_iterations": 2},
    )
    calls = record_calls(run)
    outcome = await search(run)

    assert node(run, "n4").parent == expanded
    assert outcome.figures["selection_fallbacks"] == fallbacks
    assert outcome.figures["phases"]["selection"]["calls"] == len(selection_lines)
    brief = next(messages for role, messages in calls if role == "lats.selection")[1].text
    assert "- n2 (UCT" in brief and "- n3 (UCT" in brief
    assert brief.index("- n2") < brief.index("- n3")  # best UCT first


# -- limits ---------------------------------------------------------------------------------------


async def test_depth_limit_stops_expanding_and_reflects_on_the_leaf(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [READ, evaluate(5), LIST, evaluate(6), lesson("Answer before the step budget runs out.")],
        lats={"expansion_width": 1, "max_depth": 2, "max_iterations": 10},
    )
    outcome = await search(run)
    tree = run.ctx.recorder.tree

    assert max(n.depth for n in tree.nodes.values()) == 2
    assert node(run, "n3").status == "terminated_early"
    assert node(run, "n3").reflection.endswith("Lesson: Answer before the step budget runs out.")
    assert outcome.stop_reason == "end_turn"
    assert outcome.figures["iterations"] == 2
    assert "every branch was explored" in outcome.answer
    assert "Answer before the step budget runs out." in outcome.answer


async def test_token_budget_stops_with_max_tokens(make_run: Callable[..., Run]) -> None:
    run = make_run([READ, evaluate(5)], lats={"expansion_width": 1, "max_tokens": 1})
    outcome = await search(run)
    assert outcome.stop_reason == "max_tokens"
    assert outcome.figures["iterations"] == 1


async def test_time_limit_stops_before_another_iteration(make_run: Callable[..., Run]) -> None:
    run = make_run([], lats={"time_limit_s": 5})
    run.ctx.started -= 10  # the run has already used its time: no model call may happen
    outcome = await search(run)
    assert outcome.stop_reason == "max_turn_requests"
    assert outcome.figures["iterations"] == 0
    assert "time limit (5 s)" in outcome.answer
    assert run.ctx.recorder.tree.finished


# -- routing and concurrency ----------------------------------------------------------------------


async def test_evaluation_routes_to_its_own_model_and_phases_are_counted(
    make_run: Callable[..., Run], write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    evaluations = write_script([evaluate(5), evaluate(3), evaluate(4), evaluate(6)])
    run = make_run(
        [READ, LIST, select("n2"), GREP, EDIT_HI],
        lats={"expansion_width": 2, "max_iterations": 2},
        llm={"lats": {"evaluation": f"scripted:{evaluations}"}},
    )
    outcome = await search(run)
    by_role = outcome.figures["by_role"]
    default = run.ctx.settings.llm.model

    assert by_role["lats.evaluation"]["model"] == f"scripted:{evaluations}"
    assert by_role["lats.expansion"]["model"] == by_role["lats.selection"]["model"] == default
    assert node(run, "n2").model == default and node(run, "n2").role == "lats.expansion"
    phases = outcome.figures["phases"]
    assert {phase: counts["calls"] for phase, counts in phases.items()} == {
        "selection": 1,
        "expansion": 4,
        "evaluation": 4,
        "backprop": 0,
    }
    for phase in ("selection", "expansion", "evaluation"):
        used = by_role[f"lats.{phase}"]
        assert phases[phase]["input_tokens"] == used["input_tokens"] > 0
        assert phases[phase]["output_tokens"] == used["output_tokens"]
    expansion_tokens = sum(node(run, n).input_tokens for n in ("n2", "n3", "n4", "n5"))
    assert expansion_tokens == phases["expansion"]["input_tokens"]


@pytest.mark.parametrize(("limit", "peak"), [(8, 4), (2, 2)])
async def test_expansion_runs_candidates_concurrently_up_to_the_provider_limit(
    make_run: Callable[..., Run], limit: int, peak: int
) -> None:
    reads = [
        expand("read_file", {"path": "pkg/greet.py", "start_line": 1, "end_line": n}, latency_ms=40)
        for n in range(1, 5)
    ]
    run = make_run(
        [*reads, *(evaluate(5) for _ in reads)],
        lats={"expansion_width": 4, "max_iterations": 1},
        llm={"concurrency": {"scripted": limit}},
    )
    router = run.ctx.router
    collect = router._collect  # type: ignore[attr-defined]
    in_flight = {"now": 0, "peak": 0}

    async def counting(model: Any, *args: Any) -> AIMessage:
        # Inside the provider gate: what the model server really sees at once.
        if model.role != "lats.expansion":
            return await collect(model, *args)
        in_flight["now"] += 1
        in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        try:
            return await collect(model, *args)
        finally:
            in_flight["now"] -= 1

    router._collect = counting  # type: ignore[attr-defined]
    outcome = await search(run)

    assert in_flight["peak"] == peak
    assert outcome.figures["nodes_per_iteration"] == [4]
    assert all(node(run, n).status == "evaluated" for n in ("n2", "n3", "n4", "n5"))


# -- branches -------------------------------------------------------------------------------------


async def test_edits_stay_in_their_branch_and_the_best_branch_is_the_outcome(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(EDIT_WINS, lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 5})
    outcome = await search(run)
    ctx = run.ctx

    edited, sibling = ctx.branches[node(run, "n2").changeset_id], ctx.branches[node(run, "n3").changeset_id]
    assert 'f"Hi, {name}!"' in edited.read_text("pkg/greet.py")
    assert sibling.changed_paths() == [] and sibling.read_text("pkg/greet.py") == GREETING
    assert "Hello" in node(run, "n3").observation  # the sibling's read never saw the edit
    assert ctx.changeset.changed_paths() == [] and ctx.changeset.read_text("pkg/greet.py") == GREETING
    assert (run.workspace / "pkg" / "greet.py").read_text() == GREETING

    assert node(run, "n4").status == node(run, "n5").status == "solution"
    assert outcome.stop_reason == "end_turn"
    assert outcome.answer == "Changed the greeting to Hi."
    assert outcome.changeset is not None and outcome.changeset.id == node(run, "n4").changeset_id
    assert outcome.changeset.changed_paths() == ["pkg/greet.py"]
    assert 'f"Hi, {name}!"' in outcome.changeset.read_text("pkg/greet.py")
    assert outcome.figures["solution_found"] is True and outcome.figures["iterations"] == 2
    assert ctx.recorder.tree.best_path == ["n1", "n2", "n4"]


async def test_a_solution_stops_the_search_at_once(make_run: Callable[..., Run]) -> None:
    # Only one iteration is scripted: a second would run out of script and fail the run.
    run = make_run(
        [answer("greet() returns Hello, NAME!"), evaluate(9, solution=True)],
        lats={"expansion_width": 1, "max_iterations": 5},
    )
    outcome = await search(run)
    assert outcome.stop_reason == "end_turn"
    assert outcome.answer == "greet() returns Hello, NAME!"
    assert outcome.changeset is None  # nothing was edited
    assert outcome.figures["iterations"] == 1 and outcome.figures["solution_found"] is True
    assert node(run, "n2").status == "solution"
    assert run.ctx.recorder.tree.figures["stop_reason"] == "end_turn"


async def test_a_high_score_without_is_solution_is_not_a_solution(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [answer("Probably fine."), evaluate(9), lesson("Check the code before answering.")],
        lats={"expansion_width": 1, "max_iterations": 3},
    )
    outcome = await search(run)
    assert node(run, "n2").status == "evaluated"
    assert outcome.stop_reason == "end_turn"  # the only leaf is an answer: nothing left to expand
    assert outcome.answer.startswith("Probably fine.")
    assert "No answer met the bar of 7/10" in outcome.answer
    assert outcome.figures["solution_found"] is False and outcome.figures["reflections"] == 1


async def test_identical_sibling_calls_are_pruned_not_run(make_run: Callable[..., Run]) -> None:
    run = make_run([READ, READ, evaluate(5)], lats={"expansion_width": 2, "max_iterations": 1})
    outcome = await search(run)
    assert node(run, "n3").status == "pruned"
    assert node(run, "n3").observation is None and node(run, "n3").visits == 0
    assert "n2" in node(run, "n3").reflection
    assert outcome.figures["tool_cache"] == {"hits": 0, "misses": 1}
    assert outcome.figures["phases"]["evaluation"]["calls"] == 1


async def test_sibling_branches_reading_the_same_file_share_the_tool_cache(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(
        [READ, LIST, evaluate(3), evaluate(6), READ, GREP, evaluate(5), evaluate(5)],
        lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 2},
    )
    outcome = await search(run)
    assert node(run, "n4").parent == "n3"
    assert node(run, "n4").changeset_id != node(run, "n2").changeset_id
    assert node(run, "n4").observation == node(run, "n2").observation
    assert outcome.figures["tool_cache"]["hits"] == 1
    assert run.ctx.cache.hits == 1


# -- evaluation signals ---------------------------------------------------------------------------


async def test_syntax_error_caps_the_score(make_run: Callable[..., Run]) -> None:
    broken = expand("edit_file", {"path": "pkg/greet.py", "old_text": "(name):", "new_text": "(name:"})
    run = make_run([broken, evaluate(9)], lats={"expansion_width": 1, "max_iterations": 1})
    await search(run)
    assert node(run, "n2").reward_raw == 2.0
    assert node(run, "n2").reward == pytest.approx(0.2)
    assert "Syntax error in pkg/greet.py:1" in node(run, "n2").reflection


async def test_test_command_joins_the_evaluators_score(make_run: Callable[..., Run]) -> None:
    code = "import pkg.greet, sys; sys.exit(0 if 'Hi' in open('pkg/greet.py').read() else 1)"
    run = make_run(
        [
            EDIT_HI,
            EDIT_HEY,
            evaluate(4),
            evaluate(5),
            # iteration 2 continues n3 (Hey): the tests fail however sure the evaluator is
            answer("It now says Hey."),
            READ,
            evaluate(9, solution=True),
            evaluate(2),
            lesson("The tests want Hi."),
            # iteration 3 continues n2 (Hi), now the higher UCT score
            answer("It now says Hi."),
            GREP,
            evaluate(6),
            evaluate(3),
        ],
        lats={
            "expansion_width": 2,
            "beam_width": 1,
            "max_iterations": 5,
            "test_command": f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}",
            "test_timeout_s": 60,
        },
    )
    outcome = await search(run)

    failing, passing = node(run, "n4"), node(run, "n6")
    assert failing.parent == "n3" and passing.parent == "n2"
    assert failing.reward_raw == 4.5 and failing.status == "evaluated"  # (9 + 0) / 2
    assert "Tests failed (exit status 1)" in failing.reflection
    assert "Lesson: The tests want Hi." in failing.reflection
    assert passing.reward_raw == 8.0 and passing.status == "solution"  # (6 + 10) / 2, tests passed
    assert "Tests passed (exit status 0)" in passing.reflection
    assert node(run, "n5").reward_raw == 2.0  # actions are not tested
    assert outcome.answer == "It now says Hi."
    assert outcome.changeset is not None and 'f"Hi, {name}!"' in outcome.changeset.read_text("pkg/greet.py")


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "refused"])
async def test_the_test_command_runs_only_after_permission_asked_once_per_run(
    make_run: Callable[..., Run], tmp_path: Path, allow: bool
) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'a').write('x'); raise SystemExit(1)"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    run = make_run(
        TWO_ANSWERS_TESTED,
        lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 3, "test_command": command},
    )
    asked: list[tuple[str, str]] = []

    async def ask(title: str, what: str, purpose: str) -> bool:
        asked.append((title, what))
        return allow

    run.ctx.ask_permission = ask
    await search(run)

    answers = [n for n in run.ctx.recorder.tree.nodes.values() if n.kind == "answer"]
    assert len(answers) == 2
    # Asked once for the whole search, whatever the answer; never run when refused.
    assert asked == [(f"Run the tests while searching: {command}", command)]
    if allow:
        assert marker.read_text() == "xx"
        assert all("Tests failed (exit status 1)" in (n.reflection or "") for n in answers)
        assert sorted(n.reward_raw for n in answers) == [3.0, 3.0]  # (6 + 0) / 2
    else:
        assert not marker.exists()
        assert all("Tests not run: running" in (n.reflection or "") for n in answers)
        assert sorted(n.reward_raw for n in answers) == [6.0, 6.0]  # the evaluator's score alone


# -- malformed output -----------------------------------------------------------------------------


async def test_malformed_evaluation_is_repaired_once(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [READ, {"role": "lats.evaluation", "content": "Looks good, 6/10"}, evaluate(6)],
        lats={"expansion_width": 1, "max_iterations": 1},
    )
    outcome = await search(run)
    assert node(run, "n2").status == "evaluated" and node(run, "n2").reward_raw == 6.0
    assert outcome.figures["phases"]["evaluation"]["calls"] == 2


async def test_evaluation_malformed_twice_fails_the_node_and_the_search_goes_on(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(
        [
            READ,
            {"role": "lats.evaluation", "content": "six"},
            {"role": "lats.evaluation", "content": '{"reflection": "no score"}'},
            lesson("Score with numbers."),
            LIST,
            evaluate(5),
        ],
        lats={"expansion_width": 1, "max_iterations": 2},
    )
    outcome = await search(run)
    failed = node(run, "n2")
    assert failed.status == "failed"
    assert "Evaluation failed: lats.evaluation gave malformed Evaluation twice" in failed.reflection
    assert "score: Field required" in failed.reflection
    assert (failed.visits, failed.value) == (1, 0.0)
    # the root's only child failed, so the root is expanded again
    assert node(run, "n3").parent == "n1" and node(run, "n3").status == "evaluated"
    assert outcome.figures["iterations"] == 2
    assert run.ctx.recorder.tree.best_path == ["n1", "n3"]


async def test_bad_tool_arguments_get_one_repair(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [expand("read_file", {}), READ, evaluate(5)],
        lats={"expansion_width": 1, "max_iterations": 1},
    )
    calls = record_calls(run)
    await search(run)
    repaired = node(run, "n2")
    assert repaired.status == "evaluated" and "Hello" in repaired.observation
    assert repaired.action.args == {"path": "pkg/greet.py"}
    repair_prompt = calls[1][1][-1].text
    assert "bad arguments for read_file: path: Field required" in repair_prompt


async def test_bad_tool_arguments_twice_fail_the_node(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            expand("read_file", {}),
            expand("read_file", {"line": 3}),
            lesson("read_file needs a path."),
            READ,
            evaluate(5),
        ],
        lats={"expansion_width": 1, "max_iterations": 2},
    )
    outcome = await search(run)
    failed = node(run, "n2")
    assert failed.status == "failed" and failed.action.tool == "read_file"
    assert "bad arguments for read_file" in failed.reflection
    assert failed.reflection.endswith("Lesson: read_file needs a path.")
    assert failed.input_tokens > 0 and failed.observation is None
    assert node(run, "n3").status == "evaluated"
    assert outcome.figures["phases"]["expansion"]["calls"] == 3


# -- reflections ----------------------------------------------------------------------------------


async def test_lessons_reach_later_expansion_prompts_with_the_trajectory_as_tool_history(
    make_run: Callable[..., Run],
) -> None:
    run = make_run(
        [
            READ,
            answer("It already says hi."),
            evaluate(5),
            evaluate(2, "It says Hello, not Hi."),
            lesson("Edit pkg/greet.py instead of only answering."),
            EDIT_HI,
            GREP,
            evaluate(6),
            evaluate(4),
        ],
        lats={"expansion_width": 2, "max_iterations": 2},
    )
    calls = record_calls(run)
    outcome = await search(run)

    expansions = [messages for role, messages in calls if role == "lats.expansion"]
    assert len(expansions) == 4
    for messages in expansions[:2]:
        assert "Lessons" not in messages[0].text
    for messages in expansions[2:]:
        assert isinstance(messages[0], SystemMessage)
        assert "- Edit pkg/greet.py instead of only answering." in messages[0].text
        ai, tool = messages[-2], messages[-1]
        assert isinstance(ai, AIMessage) and ai.tool_calls[0]["name"] == "read_file"
        assert isinstance(tool, ToolMessage) and tool.tool_call_id == ai.tool_calls[0]["id"]
        assert "Hello" in tool.text
    lesson_prompt = next(messages for role, messages in calls if role == "lats.backprop")[-1].text
    assert "It says Hello, not Hi." in lesson_prompt
    assert (
        node(run, "n3").reflection
        == "It says Hello, not Hi.\nLesson: Edit pkg/greet.py instead of only answering."
    )
    assert outcome.figures["reflections"] == 1


# -- failure and cancellation ---------------------------------------------------------------------


async def test_cancel_mid_run_closes_the_tree_with_the_best_path(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [READ, evaluate(5), LIST, evaluate(5)],
        lats={"expansion_width": 1, "max_iterations": 5},
    )
    router = run.ctx.router
    original = router.stream
    expansions = 0
    hanging = asyncio.Event()

    async def stream(role: str, *args: Any, **kwargs: Any) -> AIMessage:
        nonlocal expansions
        if role == "lats.expansion":
            expansions += 1
            if expansions == 2:
                hanging.set()
                await asyncio.Future()  # never answers: the user cancels meanwhile
        return await original(role, *args, **kwargs)

    router.stream = stream  # type: ignore[method-assign]
    task = asyncio.create_task(search(run))
    await hanging.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    tree = run.ctx.recorder.tree
    assert tree.finished and tree.figures["stop_reason"] == "cancelled"
    assert tree.best_path == ["n1", "n2"]
    assert tree.figures["iterations"] == 2
    assert run.events[-1].kind == "finished"


async def test_model_error_propagates_after_closing_the_tree(make_run: Callable[..., Run]) -> None:
    run = make_run([READ, evaluate(5)], lats={"expansion_width": 1, "max_iterations": 3})
    with pytest.raises(ModelError, match="ran out"):
        await search(run)
    tree = run.ctx.recorder.tree
    assert tree.finished and tree.figures["stop_reason"] == "error"
    assert tree.best_path == ["n1", "n2"]


def test_sessions_load_lats_by_mode_name() -> None:
    from ide.search.architectures import load_architecture

    architecture = load_architecture("lats")
    assert isinstance(architecture, LatsSearch) and architecture.name == "lats"


GREET_TEST = """import pathlib

from pkg.greet import greet


def test_says_hi():
    pathlib.Path({marker!r}).open("a").write("x")
    assert greet("Ada") == "Hi, Ada!"
"""


@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "refused"])
async def test_without_a_test_command_the_workspaces_detected_one_runs_once_allowed(
    make_run: Callable[..., Run], git_workspace: Path, tmp_path: Path, allow: bool
) -> None:
    marker = tmp_path / "ran"
    (git_workspace / "tests").mkdir()
    (git_workspace / "tests" / "test_greet.py").write_text(GREET_TEST.format(marker=str(marker)))
    git(git_workspace, "add", "-A")
    git(git_workspace, "commit", "-qm", "a test")
    detected = detect_test_command(git_workspace)
    assert detected == "python -m pytest -q"
    run = make_run(
        TWO_ANSWERS_TESTED,
        lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 3, "test_timeout_s": 120},
    )
    assert run.ctx.settings.lats.test_command is None
    asked: list[tuple[str, str]] = []

    async def ask(title: str, what: str, purpose: str) -> bool:
        asked.append((title, what))
        return allow

    run.ctx.ask_permission = ask
    outcome = await search(run)

    thoughts = "".join(p["text"] for p in run.progress if p["type"] == "thought")
    assert f"the workspace's test command looks like `{detected}`" in thoughts
    assert asked == [(f"Run the tests while searching: {detected}", detected)]
    hey, hi = (n for n in run.ctx.recorder.tree.nodes.values() if n.kind == "answer")
    if allow:
        assert marker.read_text() == "xx"  # once per answer, each in its own branch's worktree
        assert "Tests failed (exit status 1" in hey.reflection and hey.reward_raw == 3.0  # (6 + 0) / 2
        assert "Tests passed (exit status 0" in hi.reflection and hi.status == "solution"  # (6 + 10) / 2
        assert outcome.answer == "It now says Hi."
    else:
        assert not marker.exists()
        assert all("Tests not run: running python -m pytest -q" in n.reflection for n in (hey, hi))
        assert hi.status != "solution"  # the evaluator's 6 alone is under the bar
