"""A run's search tree is built only from its events: live, replayed, stepped and read from a file alike."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from ide.protocol.tree import (
    OBSERVATION_CAP,
    TREE_FILE_SUFFIX,
    SearchTree,
    ToolAction,
    TreeError,
    TreeEvent,
    TreeNode,
    read_jsonl,
    write_jsonl,
)
from ide.search.tree import TreeRecorder
from tests.support.sqlite_reader import from_threads


def ticking_clock(start: float = 1000.0) -> itertools.count[float]:
    return itertools.count(start, 0.5)


def record_small_run(emit: list[TreeEvent] | None = None) -> TreeRecorder:
    """root → two thoughts; the second acts and answers; best path to the answer; finished."""
    clock = ticking_clock()
    recorder = TreeRecorder(
        architecture="lats",
        run_id="run-1",
        emit=None if emit is None else emit.append,
        clock=lambda: next(clock),
    )
    root = recorder.add(None, kind="root", label="fix the bug", status="active")
    first = recorder.add(root, kind="thought", label="look at tests", thought="tests first")
    second = recorder.add(root, kind="thought", label="read the code")
    act = recorder.add(
        second, kind="action", label="read", action=ToolAction(tool="read_file", args={"path": "a.py"})
    )
    recorder.update(act, observation="def f(): …\u2028 π", status="evaluated", reward_raw=8.0, reward=0.8)
    recorder.update(first, status="pruned")
    answer = recorder.add(act, kind="answer", label="done", status="solution")
    recorder.best_path(answer)
    recorder.finish(stop_reason="solved", iterations=2)
    return recorder


def test_replaying_the_events_anywhere_gives_the_same_tree(tmp_path: Path) -> None:
    emitted: list[TreeEvent] = []
    recorder = record_small_run(emitted)

    replayed = SearchTree(emitted)
    path = write_jsonl(emitted, tmp_path / f"run{TREE_FILE_SUFFIX}")
    from_file = SearchTree(read_jsonl(path))

    assert emitted == recorder.tree.events
    assert replayed == recorder.tree
    assert from_file == recorder.tree
    assert read_jsonl(path) == emitted
    tree = from_file
    assert tree.run_id == "run-1" and tree.architecture == "lats"
    assert tree.root == "n1"
    assert tree.children("n1") == ["n2", "n3"]
    assert [tree.nodes[i].kind for i in tree.best_path] == ["root", "thought", "action", "answer"]
    assert tree.nodes["n4"].action == ToolAction(tool="read_file", args={"path": "a.py"})
    assert tree.nodes["n4"].observation == "def f(): …\u2028 π"
    assert tree.nodes["n2"].status == "pruned"
    assert tree.finished and tree.figures == {"stop_reason": "solved", "iterations": 2}


def test_a_recorded_run_differs_from_another_one() -> None:
    """Equality is real: a different update makes a different tree."""
    one = record_small_run()
    other = record_small_run()
    assert one.tree == other.tree
    events = list(other.tree.events)
    events[4] = events[4].model_copy(update={"changes": {"status": "failed"}})
    assert SearchTree(events) != one.tree


def test_at_steps_through_the_run_one_event_at_a_time() -> None:
    tree = record_small_run().tree
    assert tree.seq == 9

    empty = tree.at(0)
    assert empty.nodes == {} and empty.root is None and empty.seq == 0

    assert list(tree.at(1).nodes) == ["n1"]
    assert tree.at(3).children("n1") == ["n2", "n3"]
    before_update = tree.at(4)
    assert before_update.nodes["n4"].observation is None and before_update.nodes["n4"].status == "generated"
    assert tree.at(5).nodes["n4"].status == "evaluated"
    assert tree.at(6).nodes["n2"].status == "pruned"
    assert tree.at(7).best_path == [] and tree.at(8).best_path == ["n1", "n3", "n4", "n5"]
    assert not tree.at(8).finished and tree.at(9).finished
    assert tree.at(9) == tree
    # stepping never changes the tree it came from
    assert tree.seq == 9 and tree.nodes["n2"].status == "pruned"
    with pytest.raises(ValueError, match="outside"):
        tree.at(10)


def test_update_emits_only_the_changed_fields() -> None:
    emitted: list[TreeEvent] = []
    clock = ticking_clock()
    recorder = TreeRecorder(architecture="react", emit=emitted.append, clock=lambda: next(clock))
    root = recorder.add(None, kind="root", label="q")
    assert emitted[-1].node is not None and emitted[-1].node.created_at == 1000.0

    node = recorder.update(root, status="active", label="q", thought=None)
    assert emitted[-1].kind == "node_updated"
    assert emitted[-1].changes == {"status": "active", "updated_at": 1000.5}
    assert node.status == "active" and node.updated_at == 1000.5

    count = len(emitted)
    recorder.update(root, status="active")
    assert len(emitted) == count  # nothing changed, nothing said

    recorder.update(root, action=ToolAction(tool="grep", args={"pattern": "x"}))
    assert emitted[-1].changes["action"] == {"tool": "grep", "args": {"pattern": "x"}}


def test_long_observations_are_capped_with_a_note() -> None:
    recorder = TreeRecorder(architecture="react")
    root = recorder.add(None, kind="root", label="q")
    long = "é" * 3000  # 6,000 bytes
    recorder.update(root, observation=long)
    stored = recorder.tree.nodes[root].observation or ""
    kept, note = stored.split("\n… (")
    assert kept == "é" * (OBSERVATION_CAP // 2)
    assert note.startswith(f"{6000 - OBSERVATION_CAP} more bytes")

    child = recorder.add(root, kind="action", label="run", observation="x" * (OBSERVATION_CAP + 10))
    assert recorder.tree.nodes[child].observation == "x" * OBSERVATION_CAP + "\n… (10 more bytes not shown)"

    short = recorder.add(root, kind="action", label="ok", observation="x" * OBSERVATION_CAP)
    assert recorder.tree.nodes[short].observation == "x" * OBSERVATION_CAP


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"colour": "red"}, "no field colour"),
        ({"parent": None}, "parent are set when a node is added"),
        ({"depth": 3}, "depth are set when a node is added"),
        ({"status": "winning"}, "status: Input should be"),
        ({"visits": "many"}, "visits: Input should be a valid integer"),
    ],
)
def test_an_invalid_update_is_refused_and_changes_nothing(changes: dict[str, object], message: str) -> None:
    emitted: list[TreeEvent] = []
    recorder = TreeRecorder(architecture="react", emit=emitted.append)
    root = recorder.add(None, kind="root", label="q")
    with pytest.raises(TreeError, match=message):
        recorder.update(root, **changes)
    assert len(emitted) == 1 and recorder.seq == 1


def test_an_update_uses_the_built_validator_not_the_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """TreeNode is built at its first use (``defer_build``); until then pydantic holds a stand-in that calls
    ``model_rebuild`` on every read. An update after the first node never goes through it."""
    recorder = TreeRecorder(architecture="react")
    root = recorder.add(None, kind="root", label="q")
    rebuilds: list[object] = []
    monkeypatch.setattr(TreeNode, "model_rebuild", classmethod(lambda cls, **kw: rebuilds.append(kw)))
    for visits in range(3):
        recorder.update(root, visits=visits, value=0.5, status="evaluated")
    assert recorder.tree.nodes[root].visits == 2 and rebuilds == []


def test_add_refuses_unknown_parents_fields_and_a_second_root() -> None:
    recorder = TreeRecorder(architecture="react")
    root = recorder.add(None, kind="root", label="q")
    with pytest.raises(TreeError, match="no node 'n9'"):
        recorder.add("n9", kind="thought", label="x")
    with pytest.raises(TreeError, match="no field colour"):
        recorder.add(root, kind="thought", label="x", colour="red")
    with pytest.raises(TreeError, match="kind"):
        recorder.add(root, kind="daydream", label="x")
    with pytest.raises(TreeError, match="second root"):
        recorder.add(None, kind="root", label="again")
    assert recorder.seq == 1
    assert recorder.add(root, kind="thought", label="x") == "n2"
    assert recorder.tree.nodes["n2"].depth == 1


def test_nothing_follows_finish() -> None:
    recorder = TreeRecorder(architecture="react")
    root = recorder.add(None, kind="root", label="q")
    recorder.finish(stop_reason="end_turn")
    with pytest.raises(TreeError, match="has finished"):
        recorder.update(root, status="solution")
    with pytest.raises(TreeError, match="JSON values"):
        TreeRecorder(architecture="react").finish(when=object())


def test_apply_checks_order_run_and_structure() -> None:
    events = record_small_run().tree.events
    tree = SearchTree(events[:2])
    with pytest.raises(TreeError, match="expected event seq 3, got 4"):
        tree.apply(events[3])
    with pytest.raises(TreeError, match="run other"):
        tree.apply(events[2].model_copy(update={"run_id": "other"}))
    with pytest.raises(TreeError, match="not a child of 'n1'"):
        tree.apply(TreeEvent(run_id="run-1", seq=3, kind="best_path", path=["n1", "n9"]))
    orphan = events[2].node.model_copy(update={"parent": "n7"})  # type: ignore[union-attr]
    with pytest.raises(TreeError, match="parent 'n7'"):
        tree.apply(events[2].model_copy(update={"node": orphan}))
    assert tree == SearchTree(events[:2])  # refused events left no trace
    tree.apply(events[2])
    assert tree == SearchTree(events[:3])


@pytest.mark.usefixtures("eager_thread_switching")
def test_concurrent_adds_get_unique_ids_and_emit_in_seq_order() -> None:
    emitted: list[TreeEvent] = []
    recorder = TreeRecorder(architecture="lats", emit=emitted.append)
    root = recorder.add(None, kind="root", label="q")
    threads, per_thread = 8, 150
    start = threading.Barrier(threads)
    made: list[list[str]] = [[] for _ in range(threads)]

    def expand(worker: int) -> None:
        start.wait()
        tip = root
        for i in range(per_thread):
            # a chain per worker, with siblings on the root, and updates in between
            node = recorder.add(tip if i % 3 else root, kind="thought", label=f"{worker}.{i}")
            recorder.update(node, status="evaluated", visits=i + 1)
            made[worker].append(node)
            tip = node

    assert from_threads(expand, threads) == []
    ids = [node for chain in made for node in chain]
    assert len(set(ids)) == threads * per_thread
    assert [event.seq for event in emitted] == list(range(1, 1 + 1 + 2 * threads * per_thread))
    assert SearchTree(emitted) == recorder.tree
    for chain in made:
        labels = [recorder.tree.nodes[node].label for node in chain]
        assert labels == [f"{labels[0].split('.')[0]}.{i}" for i in range(per_thread)]


def test_jsonl_adds_the_suffix_and_skips_blank_lines(tmp_path: Path) -> None:
    events = record_small_run().tree.events
    path = write_jsonl(events, tmp_path / "export")
    assert path.name == "export" + TREE_FILE_SUFFIX
    lines = path.read_text(encoding="utf-8").split("\n")
    path.write_text("\n".join(["", *lines[:3], "   ", *lines[3:], "", ""]), encoding="utf-8")
    assert read_jsonl(path) == events


def test_a_file_may_hold_several_runs(tmp_path: Path) -> None:
    first = record_small_run().tree.events
    second = TreeRecorder(architecture="react", run_id="run-2")
    second.add(None, kind="root", label="next")
    mixed = [first[0], second.tree.events[0], *first[1:]]
    assert read_jsonl(write_jsonl(mixed, tmp_path / "s.arbor-tree.jsonl")) == mixed


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", r"s\.arbor-tree\.jsonl:3: not JSON"),
        ('{"run_id": "run-1", "kind": "node_added"}', r":3: not a tree event: seq: Field required"),
        ('{"run_id": "run-1", "seq": 3, "kind": "exploded"}', r":3: not a tree event: kind: Input should"),
        ('{"run_id": "run-1", "seq": 5, "kind": "finished"}', r":3: run run-1: expected event seq 3, got 5"),
        (
            '{"run_id": "run-1", "seq": 3, "kind": "node_updated", "node_id": "n1", "changes": {"x": 1}}',
            r":3: node 'n1': TreeNode has no field x",
        ),
    ],
)
def test_a_broken_file_names_the_line_and_the_fault(tmp_path: Path, bad_line: str, message: str) -> None:
    events = record_small_run().tree.events
    path = write_jsonl(events[:2], tmp_path / "s.arbor-tree.jsonl")
    with path.open("a", encoding="utf-8") as out:
        out.write(bad_line + "\n")
    with pytest.raises(TreeError, match=message):
        read_jsonl(path)


def test_a_file_that_is_not_text_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s.arbor-tree.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TreeError, match=r"s\.arbor-tree\.jsonl: not UTF-8"):
        read_jsonl(path)
