"""Steering LATS and Tree of Thoughts from the tree (issue 48): continuing from a node of an earlier run
with the user's hint (``RunContext.fork``), and pruning or expanding nodes of a live run
(``RunContext.steering``), checked in the model's requests, the resulting change set and the tree's events.

The steering comes from another thread while the run is held at a known model call (no sleeps, bounded
waits): the run's router answers the call, then waits for the test's release before handing the answer on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ide.protocol.tree import ForkOrigin, SearchTree, SteerAction, TreeEvent
from ide.search.base import RunOutcome
from ide.search.lats import LatsSearch
from ide.search.plan import PlanExecute
from ide.search.steer import HINT_PREFIX, Fork, step_text
from ide.search.tot import TotSearch
from tests.support.lats_script import EDIT_HI, GREETING, GREP, LIST, READ, evaluate, expand
from tests.support.plan_script import TASK_1, two_task_script
from tests.support.runs import Run
from tests.support.tot_script import coordinate, depth_lines, plan, research, synthesise

TIMEOUT = 30.0
"""Seconds any wait of these tests may take before it fails the test."""

ORIGIN_TASK = "Fix the greeting so it says Hi"
ORIGIN = [EDIT_HI, READ, evaluate(6), evaluate(3), GREP, LIST, evaluate(5), evaluate(4)]
"""An earlier LATS run (width 2, beam 1, two iterations): n2 edits Hello to Hi, n3 reads; then n2, the
better, is expanded into n4 (grep) and n5 (list) in its branch."""
HI = 'def greet(name):\n    return f"Hi, {name}!"\n'


def record_calls(run: Run) -> list[tuple[str, list[BaseMessage]]]:
    """Every model call of the run (role, messages), in the order made."""
    calls: list[tuple[str, list[BaseMessage]]] = []
    original = run.ctx.router.stream

    async def stream(role: str, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        calls.append((role, list(messages)))
        return await original(role, messages, *args, **kwargs)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return calls


def texts(calls: list[tuple[str, list[BaseMessage]]], role: str, nth: int = 0) -> str:
    return "\n".join(message.text for message in [m for r, m in calls if r == role][nth])


def hold(run: Run, role: str, nth: int) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold the run's ``nth`` call of ``role`` once it is answered (so the script's order is kept) until
    released; returns (reached, release)."""
    reached, release = asyncio.Event(), asyncio.Event()
    original = run.ctx.router.stream
    seen = 0

    async def stream(called: str, *args: Any, **kwargs: Any) -> AIMessage:
        nonlocal seen
        reply = await original(called, *args, **kwargs)
        if called == role:
            seen += 1
            if seen == nth:
                reached.set()
                await asyncio.wait_for(release.wait(), TIMEOUT)
        return reply

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return reached, release


async def steered(
    run: Run, search: Any, asks: list[tuple[str, SteerAction]], *, role: str, nth: int
) -> RunOutcome:
    """Run ``search`` on ``run``; when it reaches the ``nth`` call of ``role``, another thread asks ``asks``
    (as the ``_arbor/tree/steer`` handler would) while the run waits, then lets it go on."""
    reached, release = hold(run, role, nth)

    async def user() -> None:
        await asyncio.wait_for(reached.wait(), TIMEOUT)
        for node_id, action in asks:
            await asyncio.to_thread(run.ctx.steering.ask, node_id, action)
        release.set()

    outcome, _ = await asyncio.wait_for(asyncio.gather(search.run(run.ctx), user()), TIMEOUT)
    return outcome


def steer_event(run: Run, node_id: str, action: SteerAction) -> TreeEvent:
    found = [
        e
        for e in run.events
        if e.kind == "node_updated" and e.node_id == node_id and e.changes.get("steer") == action
    ]
    assert len(found) == 1, f"expected one {action} of {node_id}, got {found}"
    return found[0]


def added_after(run: Run, seq: int) -> list[tuple[str, str | None]]:
    """(id, parent) of the nodes added after event ``seq``, in order."""
    return [
        (e.node.id, e.node.parent) for e in run.events if e.kind == "node_added" and e.seq > seq and e.node
    ]


async def lats_origin(make_run: Callable[..., Run]) -> Run:
    run = make_run(
        ORIGIN, task=ORIGIN_TASK, lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 2}
    )
    await LatsSearch().run(run.ctx)
    tree = run.ctx.recorder.tree
    assert tree.children("n1") == ["n2", "n3"] and tree.children("n2") == ["n4", "n5"]
    assert run.ctx.branches[tree.nodes["n2"].changeset_id or ""].read_text("pkg/greet.py") == HI
    return run


def fork_from(run: Run, node_id: str, hint: str) -> Fork:
    """What the session gives a run that continues from ``node_id``: the tree, the node's branch, every
    branch of the run."""
    tree = run.ctx.recorder.tree
    branch = run.ctx.branches[tree.nodes[node_id].changeset_id or ""]
    return Fork(tree, node_id, hint, changeset=branch, branches=dict(run.ctx.branches))


# -- continue from a node: LATS -----------------------------------------------------------------------


async def test_lats_continues_from_a_middle_node_with_its_trajectory_branch_and_subtree(
    make_run: Callable[..., Run],
) -> None:
    first = await lats_origin(make_run)
    origin = first.ctx.recorder.tree
    hint = "Make it say Hey instead"
    edit_hey = expand("edit_file", {"path": "pkg/greet.py", "old_text": "Hi,", "new_text": "Hey,"})
    # As the session runs a continuation: the task it continues, the hint in the fork.
    run = make_run(
        [edit_hey, evaluate(8)], task=ORIGIN_TASK, lats={"expansion_width": 1, "max_iterations": 1}
    )
    run.ctx.fork = fork_from(first, "n2", hint)
    calls = record_calls(run)
    outcome = await LatsSearch().run(run.ctx)
    tree = run.ctx.recorder.tree

    # The first request: the task, exactly n2's step (its edit and what it saw), then the hint.
    role, messages = calls[0]
    assert role == "lats.expansion"
    system, task, step, seen, guidance = messages
    assert isinstance(system, SystemMessage)
    assert isinstance(task, HumanMessage) and task.text == ORIGIN_TASK
    assert isinstance(step, AIMessage)
    assert [(c["name"], c["args"]) for c in step.tool_calls] == [
        ("edit_file", EDIT_HI["tool_calls"][0]["args"])
    ]
    assert isinstance(seen, ToolMessage) and seen.tool_call_id == step.tool_calls[0]["id"]
    assert seen.text == origin.nodes["n2"].observation
    assert isinstance(guidance, HumanMessage) and guidance.text == f"{HINT_PREFIX}\n{hint}"
    # The evaluator reads the same path and the hint, n2's step before the run's own.
    brief = texts(calls, "lats.evaluation")
    assert hint in brief and ORIGIN_TASK in brief
    assert brief.index('"new_text": "Hi"') < brief.index('"new_text": "Hey,"')
    assert '"pattern": "greet"' not in brief  # n4, below n2, is not on the path

    # It started from n2's branch: Hello → Hi there, → Hey here; the session's set and the disk untouched.
    assert outcome.changeset is not None
    assert outcome.changeset.read_text("pkg/greet.py") == HI.replace("Hi,", "Hey,")
    assert run.ctx.changeset.changed_paths() == []
    assert (run.workspace / "pkg" / "greet.py").read_text() == GREETING

    # n2 is the new run's root, expanded first; its subtree is kept as explored, as recorded.
    assert tree.nodes["n1"].kind == "root" and tree.nodes["n1"].label == origin.nodes["n2"].label
    assert tree.nodes["n1"].changeset_id == origin.nodes["n2"].changeset_id
    assert tree.children("n1") == ["n2", "n3", "n4"]
    for new, old in (("n2", "n4"), ("n3", "n5")):
        copy, recorded = tree.nodes[new], origin.nodes[old]
        assert copy.model_dump(
            include={"label", "action", "observation", "visits", "value", "reward_raw"}
        ) == (
            recorded.model_dump(include={"label", "action", "observation", "visits", "value", "reward_raw"})
        )
        assert copy.status == recorded.status == "evaluated"
    assert tree.nodes["n4"].action is not None and tree.nodes["n4"].action.args["new_text"] == "Hey,"
    assert tree.nodes["n1"].visits == origin.nodes["n2"].visits + 1
    for copy in ("n2", "n3"):  # on the recorded branches the fork carries: n2's edit in them
        assert run.ctx.branches[tree.nodes[copy].changeset_id or ""].read_text("pkg/greet.py") == HI
    assert tree.best_path == ["n1", "n4"]

    # Recorded with where it came from, on its first event.
    origin_id = ForkOrigin(run_id=origin.run_id or "", node_id="n2")
    assert run.events[0].forked_from == origin_id
    assert all(e.forked_from is None for e in run.events[1:])
    replayed = SearchTree(run.events)
    assert replayed == tree and replayed.forked_from == origin_id


async def test_lats_continues_from_a_run_whose_branches_are_not_known(make_run: Callable[..., Run]) -> None:
    first = await lats_origin(make_run)
    origin = first.ctx.recorder.tree
    # A run opened from a file: no branch is known, the session's own change set stands in for the root's.
    run = make_run([GREP, evaluate(5)], task=ORIGIN_TASK, lats={"expansion_width": 1, "max_iterations": 1})
    run.ctx.fork = Fork(origin, "n1", "Try again")
    await LatsSearch().run(run.ctx)
    tree = run.ctx.recorder.tree

    assert tree.nodes["n1"].changeset_id == run.ctx.changeset.id
    assert [tree.nodes[n].action.tool for n in tree.children("n1")[:2]] == ["edit_file", "read_file"]  # type: ignore[union-attr]
    # The read goes on from the root's branch; the edit's changes, and so everything under it, are unknown.
    read = run.ctx.branches[tree.nodes["n3"].changeset_id or ""]
    assert read.read_text("pkg/greet.py") == GREETING and read.changed_paths() == []
    assert [tree.nodes[n].changeset_id for n in ("n2", "n4", "n5")] == [None, None, None]
    assert tree.nodes["n6"].parent == "n1"  # the root is expanded first
    assert run.events[0].forked_from == ForkOrigin(run_id=origin.run_id or "", node_id="n1")


async def test_a_chain_reads_an_earlier_plan_run_by_what_it_had_done_by_the_node(
    make_run: Callable[..., Run],
) -> None:
    first = make_run(two_task_script(), architecture="plan", task=ORIGIN_TASK)
    await PlanExecute().run(first.ctx)
    plan_tree = first.ctx.recorder.tree
    [task_1] = [n.id for n in plan_tree.nodes.values() if n.kind == "step" and n.label.startswith(TASK_1)]
    second = await lats_origin(make_run)  # as if continued from the plan run's first task
    fork = Fork(
        second.ctx.recorder.tree,
        "n2",
        "hint B",
        earlier=[Fork(plan_tree, task_1, "Then say it in the README")],
    )

    messages = fork.guidance()
    text = "\n".join(f"{type(m).__name__}: {m.text} {getattr(m, 'tool_calls', '')}" for m in messages)
    # The plan run's first task with its edit and result, the hint given then, the LATS path, the new hint.
    marks = [f"Plan:\n1. {TASK_1}", f"Task 1: {TASK_1}", "'new_text': 'Hi'", "Task 1 done: greet says Hi now"]
    marks += [
        f"HumanMessage: {HINT_PREFIX}\nThen say it in the README",
        "AIMessage: I call edit_file.",
        f"{HINT_PREFIX}\nhint B",
    ]
    where = [text.find(mark) for mark in marks]
    assert -1 not in where and where == sorted(where), where
    assert "Task 2" not in text and "Says hi." not in text  # the plan's second task ran after the node
    assert isinstance(messages[-1], HumanMessage) and messages[-1].text == f"{HINT_PREFIX}\nhint B"
    calls = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert len(calls) == len(set(calls)) == 3  # each run's calls keep ids of their own
    # The text steps (LATS's selection and evaluation prompts, ToT's): the same chain, then the own path.
    steps = fork.steps()
    assert ("user", f"{HINT_PREFIX}\nThen say it in the README") in steps
    assert steps[-1] == (
        second.ctx.recorder.tree.nodes["n2"].label,
        step_text(second.ctx.recorder.tree.nodes["n2"]),
    )
    assert fork.trajectory() == messages[:-1]


# -- prune and expand a live LATS run -------------------------------------------------------------------

LIVE = {"expansion_width": 2, "beam_width": 1, "max_iterations": 3}
FIRST_ITERATION = [READ, LIST, evaluate(8), evaluate(3)]
"""n2 (read, 8/10) and n3 (list, 3/10): left alone, UCT expands n2 next."""


async def test_a_pruned_lats_node_is_never_selected_or_expanded_again(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [*FIRST_ITERATION, GREP, EDIT_HI, evaluate(5), evaluate(6), READ, GREP, evaluate(5), evaluate(5)],
        lats=LIVE,
    )
    outcome = await steered(run, LatsSearch(), [("n2", "prune")], role="lats.evaluation", nth=2)
    tree = run.ctx.recorder.tree

    pruned = steer_event(run, "n2", "prune")
    assert pruned.changes["status"] == "pruned"
    # Iteration 2 expands n3, the only branch left; iteration 3 goes on below it, though by UCT alone n2
    # (0.8 after one visit) would now beat n3.
    assert added_after(run, pruned.seq) == [("n4", "n3"), ("n5", "n3"), ("n6", "n5"), ("n7", "n5")]
    assert tree.children("n2") == []
    assert tree.nodes["n2"].status == "pruned" and tree.nodes["n2"].steer == "prune"
    assert outcome.figures["iterations"] == 3
    assert tree.best_path[:2] == ["n1", "n3"]
    thoughts = "".join(p["text"] for p in run.progress if p["type"] == "thought")
    assert "Pruned n2 as you asked" in thoughts
    assert "selected n2" not in thoughts


async def test_a_lats_node_asked_to_expand_is_expanded_next(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [*FIRST_ITERATION, GREP, EDIT_HI, evaluate(5), evaluate(6), GREP, LIST, evaluate(5), evaluate(5)],
        lats=LIVE,
    )
    await steered(run, LatsSearch(), [("n3", "expand")], role="lats.evaluation", nth=2)
    tree = run.ctx.recorder.tree

    asked = steer_event(run, "n3", "expand")
    # n3 (3/10) gets its children next, before UCT's choice; then the search selects by UCT again (n2).
    assert added_after(run, asked.seq) == [("n4", "n3"), ("n5", "n3"), ("n6", "n2"), ("n7", "n2")]
    assert tree.nodes["n3"].steer == "expand" and tree.nodes["n3"].status == "evaluated"
    thoughts = "".join(p["text"] for p in run.progress if p["type"] == "thought")
    assert "Iteration 2/3: expanding n3 (as you asked)" in thoughts
    assert "Iteration 3/3: selected n2" in thoughts


@pytest.mark.parametrize(
    ("prunes", "note"),
    [(["n2", "n3"], "every open branch was pruned"), (["n1"], "you pruned the root")],
    ids=["every-open-node", "root"],
)
async def test_pruning_the_root_or_every_open_lats_node_ends_the_search(
    make_run: Callable[..., Run], prunes: list[str], note: str
) -> None:
    # Only the first iteration is scripted: another model call would fail the run.
    run = make_run(FIRST_ITERATION, lats={**LIVE, "max_iterations": 5})
    asks: list[tuple[str, SteerAction]] = [(node_id, "prune") for node_id in prunes]
    outcome = await steered(run, LatsSearch(), asks, role="lats.evaluation", nth=2)
    tree = run.ctx.recorder.tree

    assert outcome.stop_reason == "end_turn"
    assert outcome.answer.startswith(f"LATS stopped after 1 iteration without a solution: {note}.")
    assert outcome.changeset is None
    for node_id in prunes:
        assert tree.nodes[node_id].status == "pruned"
        assert steer_event(run, node_id, "prune").changes["status"] == "pruned"
    assert tree.finished and tree.figures["iterations"] == 1
    assert tree.best_path == ["n1"]


# -- continue from a node, and steer: Tree of Thoughts ---------------------------------------------------


async def test_tot_continues_from_a_lats_node_reading_its_branch(make_run: Callable[..., Run]) -> None:
    first = await lats_origin(make_run)
    origin = first.ctx.recorder.tree
    hint = "Explain what the greeting says now"
    run = make_run(
        [
            plan("Read greet"),
            research(tools=[{"name": "read_file", "args": {"path": "pkg/greet.py"}}]),
            research("It says Hi."),
            *depth_lines((8, 8, False))[1:],
            synthesise("It says Hi, NAME!"),
        ],
        architecture="tot",
        task=ORIGIN_TASK,
        tot={"max_depth": 1},
    )
    run.ctx.fork = fork_from(first, "n2", hint)
    calls = record_calls(run)
    outcome = await TotSearch().run(run.ctx)
    tree = run.ctx.recorder.tree

    planner = texts(calls, "tot.planner")
    assert f"{HINT_PREFIX}\n{hint}" in planner and ORIGIN_TASK in planner
    assert '"new_text": "Hi"' in planner and '"pattern": "greet"' not in planner
    for role in ("tot.researcher", "tot.analyzer", "tot.critic", "tot.synthesizer"):
        assert hint in texts(calls, role) and '"new_text": "Hi"' in texts(calls, role), role
    # The researcher read n2's branch, and that branch is the run's change set.
    (read,) = [n for n in tree.nodes.values() if n.kind == "action" and n.role == "tot.researcher"]
    assert 'f"Hi, {name}!"' in (read.observation or "")
    assert outcome.changeset is not None and outcome.changeset.read_text("pkg/greet.py") == HI
    # n2's subtree is kept as explored; the thought goes on from the root.
    assert tree.nodes["n1"].kind == "root"
    assert [tree.nodes[n].label for n in tree.children("n1")][:3] == [
        origin.nodes["n4"].label,
        origin.nodes["n5"].label,
        "Read greet",
    ]
    assert (tree.nodes["n2"].visits, tree.nodes["n2"].value) == (
        origin.nodes["n4"].visits,
        origin.nodes["n4"].value,
    )
    assert run.events[0].forked_from == ForkOrigin(run_id=origin.run_id or "", node_id="n2")


async def test_tot_continues_from_a_thought_with_its_explored_thoughts_kept(
    make_run: Callable[..., Run],
) -> None:
    first = make_run(
        [
            plan("Read greet", "Guess"),
            *depth_lines((8, 8, False), (4, 4, False)),
            coordinate("n2"),
            plan("Read tests"),
            *depth_lines((7, 7, False)),
            synthesise("first answer"),
        ],
        architecture="tot",
        tot={"max_depth": 2},
    )
    await TotSearch().run(first.ctx)
    origin = first.ctx.recorder.tree
    assert origin.nodes["n4"].label == "Read tests" and origin.nodes["n4"].parent == "n2"
    hint = "Check the README too"
    run = make_run(
        [plan("Read tests", "Read README"), *depth_lines((6, 6, False)), synthesise("second answer")],
        architecture="tot",
        tot={"max_depth": 1},
    )
    run.ctx.fork = Fork(origin, "n2", hint)
    calls = record_calls(run)
    outcome = await TotSearch().run(run.ctx)
    tree = run.ctx.recorder.tree

    planner = texts(calls, "tot.planner")
    assert "Thoughts already explored from here:\n- Read tests (score 7/10)" in planner
    assert "Read greet" in planner and f"{HINT_PREFIX}\n{hint}" in planner
    # The explored thought is not proposed again; it joins the synthesis with its recorded verdict.
    assert [tree.nodes[n].label for n in tree.children("n1")][:2] == ["Read tests", "Read README"]
    assert tree.nodes["n2"].reward_raw == 7.0 and tree.nodes["n2"].observation == "findings 0"
    assert outcome.figures["synthesis"] == {"mode": "threshold", "nodes": ["n2"]}
    synthesis = texts(calls, "tot.synthesizer")
    assert "Read tests" in synthesis and "Analysis (7/10)" in synthesis
    assert outcome.changeset is None  # nothing known of the branch: the session's own stands in


async def test_tot_prune_and_expand_change_the_live_search(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            plan("A", "B", "C"),
            *depth_lines((8, 8, False), (9, 9, False), (5, 5, False)),
            coordinate("n2"),
            plan("C then D"),
            plan("A then E"),
            *depth_lines((7, 7, False), (7, 7, False)),
            synthesise(),
        ],
        architecture="tot",
        tot={"max_depth": 2},
    )
    calls = record_calls(run)
    asks: list[tuple[str, SteerAction]] = [("n3", "prune"), ("n4", "expand")]
    outcome = await steered(run, TotSearch(), asks, role="tot.researcher", nth=1)
    tree = run.ctx.recorder.tree

    pruned, asked = steer_event(run, "n3", "prune"), steer_event(run, "n4", "expand")
    assert pruned.changes["status"] == "pruned" and pruned.seq < asked.seq
    # n3 (the best scored) is left out of the coordinator's choice and the synthesis; n4, which the
    # coordinator dropped, is expanded first, then n2, the coordinator's pick.
    assert "n3 (depth" not in texts(calls, "tot.coordinator") and "n4 (depth" in texts(
        calls, "tot.coordinator"
    )
    assert added_after(run, asked.seq)[:2] == [("n5", "n4"), ("n6", "n2")]
    assert tree.children("n3") == []
    assert "1. C: C, in detail" in texts(calls, "tot.planner", 1)  # the planner goes on from n4 first
    assert "1. A: A, in detail" in texts(calls, "tot.planner", 2)
    assert outcome.figures["synthesis"] == {"mode": "threshold", "nodes": ["n2", "n5", "n6"]}


@pytest.mark.parametrize(
    ("prunes", "said"),
    [
        (
            ["n2", "n3"],
            "Tree of Thoughts stopped: you pruned every open thought; none is left to answer from.",
        ),
        (["n1"], "Tree of Thoughts stopped: you pruned the root, so nothing is explored further."),
    ],
    ids=["every-open-thought", "root"],
)
async def test_pruning_the_root_or_every_open_thought_ends_the_tot_search(
    make_run: Callable[..., Run], prunes: list[str], said: str
) -> None:
    # No coordinator, planner or synthesizer line: another model call would fail the run.
    run = make_run(
        [plan("A", "B"), *depth_lines((8, 8, False), (6, 6, False))], architecture="tot", tot={"max_depth": 2}
    )
    asks: list[tuple[str, SteerAction]] = [(node_id, "prune") for node_id in prunes]
    outcome = await steered(run, TotSearch(), asks, role="tot.researcher", nth=1)
    tree = run.ctx.recorder.tree

    assert outcome.stop_reason == "end_turn" and outcome.answer == said
    assert "".join(p["text"] for p in run.progress if p["type"] == "text") == said
    for node_id in prunes:
        assert steer_event(run, node_id, "prune").changes["status"] == "pruned"
    assert tree.finished and tree.figures["stopped_by"] == "pruned"
    assert SearchTree(run.events) == tree
