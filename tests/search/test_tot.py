"""Tree of Thoughts: scripted runs through planner, researcher, analyzer, critic, coordinator, synthesizer.

Every script line names its role, so a run that calls the agents in another order than the one
``ide.search.tot`` documents fails with a script mismatch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from ide.llm.errors import ModelError
from ide.protocol.tree import SearchTree
from ide.search.base import RunOutcome
from ide.search.tot import TotSearch
from ide.search.tot_prompts import validate_thought
from ide.settings import TotSettings
from tests.support.runs import Run
from tests.support.tot_script import analyze, coordinate, criticise, depth_lines, plan, research, synthesise

READ_TOOL_NAMES = {"read_file", "list_dir", "grep"}


Call = tuple[str, list[BaseMessage], list[str]]


def spy(run: Run) -> list[Call]:
    """Record every model call of the run (role, messages, offered tools) in the order it starts."""
    calls: list[Call] = []
    original = run.ctx.router.stream

    async def stream(
        role: str, messages: list[BaseMessage], tools: Any = (), on_chunk: Any = None, **kw: Any
    ) -> Any:
        calls.append((role, list(messages), [tool.name for tool in tools]))
        return await original(role, messages, tools, on_chunk, **kw)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return calls


def prompt_of(calls: list[Call], role: str, nth: int = 0) -> str:
    """The text of the ``nth`` call of ``role``."""
    found = [messages for r, messages, _tools in calls if r == role]
    return "\n".join(message.text for message in found[nth])


def check_tree(run: Run, outcome: RunOutcome | None = None) -> SearchTree:
    """The tree replays from its events, is finished, and its best path ends at the synthesis node."""
    tree = run.ctx.recorder.tree
    assert SearchTree(run.events) == tree
    assert tree.finished
    if outcome is not None:
        assert tree.figures == outcome.figures
        best = tree.nodes[tree.best_path[-1]]
        assert best.kind == "synthesis"
        assert best.parent == tree.root
        assert best.thought == outcome.answer
    return tree


def said(run: Run) -> str:
    return "".join(event["text"] for event in run.progress if event["type"] == "text")


def thought_lines(run: Run) -> str:
    return "".join(event["text"] for event in run.progress if event["type"] == "thought")


@pytest.fixture
def tot_run(make_run: Callable[..., Run]) -> Callable[..., Run]:
    def make(lines: list[dict[str, Any]], **overrides: Any) -> Run:
        return make_run(lines, architecture="tot", **overrides)

    return make


async def test_synthesis_uses_only_nodes_over_the_threshold(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("Read greet", "Guess the cause"),
            *depth_lines((8, 9, False), (4, 3, False)),
            synthesise("Change `Hello` to `Hi` in pkg/greet.py:2.", thinking="combining n2"),
        ],
        tot={"max_depth": 1},
    )
    calls = spy(run)
    outcome = await TotSearch().run(run.ctx)

    assert outcome.stop_reason == "end_turn"
    assert outcome.answered and outcome.changeset is None
    assert outcome.answer == "Change `Hello` to `Hi` in pkg/greet.py:2."
    assert said(run) == outcome.answer
    assert "combining n2" in thought_lines(run)
    synthesizer_input = prompt_of(calls, "tot.synthesizer")
    assert "Read greet" in synthesizer_input and "findings 0" in synthesizer_input
    assert "Guess the cause" not in synthesizer_input and "findings 1" not in synthesizer_input
    tree = check_tree(run, outcome)
    assert tree.nodes["n2"].reward_raw == 8.5 and tree.nodes["n2"].reward == 0.85
    assert tree.nodes["n3"].reward_raw == 3.5
    assert tree.nodes["n2"].observation == "findings 0"
    assert "sound" in (tree.nodes["n2"].reflection or "") and "fair" in (tree.nodes["n2"].reflection or "")
    synthesis = tree.nodes[tree.best_path[-1]]
    assert synthesis.status == "solution" and "1 node scoring ≥ 7" in synthesis.label
    assert outcome.figures["synthesis"] == {"mode": "threshold", "nodes": ["n2"]}
    assert outcome.figures["roles"]["tot.analyzer"]["calls"] == 2
    assert outcome.figures["roles"]["tot.synthesizer"]["calls"] == 1
    assert outcome.figures["stop_reason"] == "end_turn"


async def test_synthesis_falls_back_to_the_top_n(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("A", "B", "C", "D"),
            *depth_lines((2, 2, False), (5, 6, False), (6, 6, False), (3, 3, False)),
            synthesise("best effort"),
        ],
        tot={"max_depth": 1, "max_thoughts": 4, "top_n": 2},
    )
    calls = spy(run)
    outcome = await TotSearch().run(run.ctx)

    assert outcome.figures["synthesis"] == {"mode": "top_n", "nodes": ["n4", "n3"]}
    synthesizer_input = prompt_of(calls, "tot.synthesizer")
    assert "findings 1" in synthesizer_input and "findings 2" in synthesizer_input
    assert "findings 0" not in synthesizer_input and "findings 3" not in synthesizer_input
    tree = check_tree(run, outcome)
    assert "top 2 nodes (none ≥ 7)" in tree.nodes[tree.best_path[-1]].label


async def test_termination_recommendations_end_paths(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("A", "B", "C"),
            *depth_lines((9, 9, False), (5, 5, True), (7, 7, True)),
            coordinate("n2", reason="only A holds up"),
            plan("A then D"),
            *depth_lines((8, 8, True)),
            coordinate(reason="D is complete"),
            synthesise(),
        ],
    )
    calls = spy(run)
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert tree.nodes["n3"].status == tree.nodes["n4"].status == "terminated_early"
    assert [c for c in tree.children("n3") + tree.children("n4")] == []
    assert tree.children("n2") == ["n5"]
    assert tree.nodes["n2"].status == "evaluated"
    assert tree.nodes["n5"].status == "terminated_early"
    # Terminated nodes still count for the synthesis when they score well enough.
    assert outcome.figures["synthesis"] == {"mode": "threshold", "nodes": ["n2", "n4", "n5"]}
    assert outcome.figures["active_per_depth"] == [1, 0]
    assert outcome.figures["depth_reached"] == 2
    assert "Coordinator keeps n2 (only A holds up)" in thought_lines(run)
    coordinator_input = prompt_of(calls, "tot.coordinator").splitlines()
    assert any(
        "n3 (depth 1) B" in part and "terminate recommended: yes" in part for part in coordinator_input
    )
    expansion = prompt_of(calls, "tot.planner", 1)
    assert "findings 0" in expansion and "Analysis (9/10)" in expansion


@pytest.mark.parametrize(("proposed", "kept"), [(1, 1), (3, 3), (5, 3)])
async def test_the_planner_proposes_a_dynamic_number_of_thoughts(
    tot_run: Callable[..., Run], proposed: int, kept: int
) -> None:
    titles = [f"idea {i}" for i in range(proposed)]
    run = tot_run(
        [plan(*titles), *depth_lines(*[(8, 8, False)] * kept), synthesise()],
        tot={"max_depth": 1, "max_thoughts": 3},
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert [tree.nodes[n].label for n in tree.children(tree.root) if tree.nodes[n].kind == "thought"] == (
        titles[:kept]
    )
    assert outcome.figures["thoughts"] == kept
    assert outcome.figures["thoughts_cut"] == proposed - kept
    assert ("keeping the first 3" in thought_lines(run)) == (proposed > kept)


async def test_validation_drops_empty_and_duplicate_thoughts(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("Read greet", "  read   GREET ", "", "Check tests"),
            *depth_lines((8, 8, False), (6, 6, False)),
            synthesise(),
        ],
        tot={"max_depth": 1, "max_thoughts": 4},
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert [tree.nodes[n].label for n in tree.children(tree.root)][:2] == ["Read greet", "Check tests"]
    assert outcome.figures["thoughts"] == 2
    assert outcome.figures["invalid_thoughts"] == 2
    assert "Dropped 2 proposed thought(s) for n1: duplicate of a sibling" in thought_lines(run)
    assert "empty title" in thought_lines(run)


def test_validate_thought_checks_title_siblings_and_limits() -> None:
    settings = TotSettings(max_depth=2, max_nodes=5)
    ok = {"siblings": ["Read the code"], "depth": 2, "nodes": 4, "settings": settings}
    assert validate_thought("Run the tests", **ok) is None
    assert validate_thought("  \n ", **ok) == "empty title"
    assert "duplicate" in (validate_thought("read  THE code ", **ok) or "")
    assert "max_depth" in (validate_thought("Run the tests", **{**ok, "depth": 3}) or "")
    assert "max_nodes" in (validate_thought("Run the tests", **{**ok, "nodes": 5}) or "")


@pytest.mark.parametrize("concurrency", [1, 2, 8])
async def test_a_malformed_evaluation_is_repaired_once_after_its_phase(
    tot_run: Callable[..., Run], concurrency: int
) -> None:
    run = tot_run(
        [
            plan("A", "B"),
            research("findings 0"),
            research("findings 1"),
            {"role": "tot.analyzer", "content": "It looks fine, maybe a 7."},
            criticise(8),
            analyze(6),
            criticise(6),
            analyze(9, "repaired"),
            synthesise(),
        ],
        tot={"max_depth": 1},
        llm={"concurrency": {"scripted": concurrency}},
    )
    calls = spy(run)
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert tree.nodes["n2"].status == "evaluated"
    assert tree.nodes["n2"].reward_raw == 8.5
    assert "repaired" in (tree.nodes["n2"].reflection or "")
    repair = [messages for role, messages, _ in calls if role == "tot.analyzer"][2]
    assert "could not be used" in repair[-1].text
    assert outcome.figures["failed_nodes"] == 0


async def test_a_twice_malformed_evaluation_fails_the_node_and_the_search_goes_on(
    tot_run: Callable[..., Run],
) -> None:
    run = tot_run(
        [
            plan("A", "B"),
            *depth_lines((8, 8, False), (9, 9, False))[:2],
            {"role": "tot.analyzer", "content": "no json"},
            criticise(8),
            analyze(9),
            criticise(9),
            {"role": "tot.analyzer", "content": '{"score": 11, "analysis": "too high"}'},
            coordinate("n3"),
            plan("B then C"),
            *depth_lines((7, 7, False)),
            synthesise(),
        ],
        tot={"max_depth": 2},
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert tree.nodes["n2"].status == "failed"
    assert tree.nodes["n2"].reward_raw is None
    assert "malformed Analysis twice" in (tree.nodes["n2"].reflection or "")
    assert tree.children("n3") == ["n4"]
    assert outcome.figures["failed_nodes"] == 1
    assert outcome.figures["synthesis"]["nodes"] == ["n3", "n4"]


async def test_a_malformed_coordinator_falls_back_to_the_critics(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("A", "B"),
            *depth_lines((8, 8, False), (6, 6, True)),
            {"role": "tot.coordinator", "content": "keep A"},
            {"role": "tot.coordinator", "content": '{"continue_ids": "n2"}'},
            plan("A then C"),
            *depth_lines((7, 8, False)),
            synthesise(),
        ],
        tot={"max_depth": 2},
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert tree.nodes["n3"].status == "terminated_early"
    assert tree.children("n2") == ["n4"]
    assert outcome.figures["coordinator_fallbacks"] == 1
    assert outcome.figures["active_per_depth"] == [1, 0]
    assert outcome.figures["stopped_by"] == "depth"
    assert "keeping those not recommended for termination" in thought_lines(run)


async def test_each_role_can_use_its_own_model(
    tot_run: Callable[..., Run], write_script: Callable[[list[dict[str, Any]]], Any]
) -> None:
    critic_script = write_script([criticise(9, critique="from the critic model"), criticise(2)])
    lines = [plan("A", "B"), research("f0"), research("f1"), analyze(8), analyze(8), synthesise()]
    run = tot_run(lines, tot={"max_depth": 1}, llm={"tot": {"critic": f"scripted:{critic_script}"}})
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert "from the critic model" in (tree.nodes["n2"].reflection or "")
    assert tree.nodes["n2"].reward_raw == 8.5 and tree.nodes["n3"].reward_raw == 5.0
    assert outcome.figures["by_role"]["tot.critic"]["model"] == f"scripted:{critic_script}"
    assert outcome.figures["by_role"]["tot.analyzer"]["model"] != f"scripted:{critic_script}"


@pytest.mark.parametrize("concurrency", [1, 8])
async def test_researchers_step_in_lockstep_with_read_only_tools(
    tot_run: Callable[..., Run], concurrency: int
) -> None:
    run = tot_run(
        [
            plan("Read greet", "Look around"),
            research(tools=[{"name": "read_file", "args": {"path": "pkg/greet.py"}}]),
            research("B: nothing else matters"),
            research(tools=[{"name": "grep", "args": {"pattern": "greet"}}]),
            research("A: pkg/greet.py:2 returns Hello"),
            *[analyze(8), criticise(8), analyze(5), criticise(5)],
            synthesise(),
        ],
        tot={"max_depth": 1},
        llm={"concurrency": {"scripted": concurrency}},
    )
    calls = spy(run)
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert tree.nodes["n2"].observation == "A: pkg/greet.py:2 returns Hello"
    assert tree.nodes["n3"].observation == "B: nothing else matters"
    read, grep = tree.children("n2")
    assert tree.nodes[read].kind == "action" and tree.nodes[read].action.tool == "read_file"  # type: ignore[union-attr]
    assert 'return f"Hello, {name}!"' in (tree.nodes[read].observation or "")
    assert tree.nodes[grep].status == "evaluated"
    researcher_tools = [tools for role, _m, tools in calls if role == "tot.researcher"]
    assert [set(tools) for tools in researcher_tools] == [READ_TOOL_NAMES] * 3 + [set()]
    # The model saw the file it asked for.
    last_research = [messages for role, messages, _ in calls if role == "tot.researcher"][-1]
    assert any('return f"Hello, {name}!"' in message.text for message in last_research)
    assert outcome.changeset is None
    assert not run.ctx.changeset.state_key()


async def test_the_researcher_is_not_offered_editing_tools(tot_run: Callable[..., Run]) -> None:
    edit = {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
    run = tot_run([plan("Fix it"), research(tools=[edit])], tot={"max_depth": 1})
    with pytest.raises(ModelError, match="does not offer"):
        await TotSearch().run(run.ctx)

    tree = check_tree(run)
    assert tree.figures["stop_reason"] == "error"
    assert tree.nodes["n2"].status == "terminated_early"
    assert (
        run.workspace / "pkg" / "greet.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'


async def test_a_model_error_stops_the_other_calls_of_its_phase(tot_run: Callable[..., Run]) -> None:
    # n2's researcher waits a minute; n3's finds the script exhausted, which must cancel n2's call.
    run = tot_run([plan("A", "B"), {**research("slow"), "latency_ms": 60_000}])
    with pytest.raises(ModelError, match="ran out"):
        await TotSearch().run(run.ctx)

    assert asyncio.all_tasks() == {asyncio.current_task()}
    tree = check_tree(run)
    assert tree.figures["stop_reason"] == "error"
    assert tree.nodes["n2"].observation is None


async def test_the_node_limit_stops_generation_and_exploration(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [plan("A", "B", "C"), *depth_lines((8, 8, False), (7, 7, False)), synthesise()],
        tot={"max_nodes": 3},
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert outcome.figures["thoughts"] == 2 and outcome.figures["invalid_thoughts"] == 1
    assert outcome.figures["stopped_by"] == "nodes"
    assert "tot.coordinator" not in outcome.figures["roles"]
    assert {tree.nodes[n].status for n in ("n2", "n3")} == {"evaluated"}


async def test_the_depth_limit_ends_exploration_without_asking_the_coordinator(
    tot_run: Callable[..., Run],
) -> None:
    run = tot_run(
        [plan("A", "B"), *depth_lines((8, 8, False), (3, 3, True)), synthesise()], tot={"max_depth": 1}
    )
    outcome = await TotSearch().run(run.ctx)

    tree = check_tree(run, outcome)
    assert outcome.figures["stopped_by"] == "depth"
    assert outcome.figures["active_per_depth"] == [0]
    assert tree.nodes["n2"].status == "evaluated" and tree.nodes["n3"].status == "terminated_early"
    assert set(outcome.figures["roles"]) == {
        "tot.planner",
        "tot.researcher",
        "tot.analyzer",
        "tot.critic",
        "tot.synthesizer",
    }


async def test_the_time_limit_stops_before_the_next_depth(tot_run: Callable[..., Run]) -> None:
    run = tot_run([plan("A"), *depth_lines((8, 8, False)), synthesise()], tot={"time_limit_s": 1e-9})
    outcome = await TotSearch().run(run.ctx)

    check_tree(run, outcome)
    assert outcome.figures["stopped_by"] == "time"
    assert outcome.figures["depth_reached"] == 1


async def test_an_unusable_planner_ends_in_an_answer_that_says_so(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [{"role": "tot.planner", "content": "Let me think."}, {"role": "tot.planner", "content": "[]"}]
    )
    outcome = await TotSearch().run(run.ctx)

    assert outcome.stop_reason == "end_turn" and outcome.answered
    assert "planner proposed no usable strategy" in outcome.answer
    assert said(run) == outcome.answer
    tree = check_tree(run, outcome)
    (failed, synthesis) = tree.children(tree.root)
    assert tree.nodes[failed].status == "failed" and "malformed ThoughtList twice" in (
        tree.nodes[failed].reflection or ""
    )
    assert tree.best_path == [tree.root, synthesis]
    assert outcome.figures["synthesis"] == {"mode": "top_n", "nodes": []}
    assert any("planner failed" in note for note in outcome.figures["notes"])
    assert "tot.synthesizer" not in outcome.figures["roles"]


async def test_cancel_closes_the_tree_at_the_best_node_so_far(tot_run: Callable[..., Run]) -> None:
    run = tot_run(
        [
            plan("A", "B"),
            *depth_lines((6, 6, False), (9, 8, False)),
            coordinate("n2", "n3"),
            {**plan("A then C"), "latency_ms": 60_000},
            plan("B then D"),
        ],
    )
    expanding = asyncio.Event()
    report = run.ctx.progress

    async def progress(event: dict[str, Any]) -> None:
        await report(event)
        if event["type"] == "thought" and event["text"].startswith("Expanding"):
            expanding.set()

    run.ctx.progress = progress
    task = asyncio.create_task(TotSearch().run(run.ctx))
    await expanding.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    tree = check_tree(run)
    assert tree.figures["stop_reason"] == "cancelled"
    assert tree.best_path == [tree.root, "n3"]
    assert {tree.nodes[n].status for n in ("n2", "n3")} == {"terminated_early"}
