"""Honest trees: a result a test run or an eval check verified is drawn, named and inspected apart from a
"solution" only the model's own score claims; a failed check shows its claims as refuted; the best path of
every replay step follows what that step shows; the figures read as words with units."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QColor

from ide.app.tree.runs import figure_text, run_summary
from ide.app.tree.style import STATUS_COLOURS, node_style, value_colour
from ide.app.tree.verdict import RunCheck, node_trust, shown_best_path
from ide.app.tree.view import SearchTreeView
from ide.protocol.tree import SearchTree, TreeEvent, TreeNode, read_jsonl, write_jsonl

pytestmark = pytest.mark.window

SAMPLE = Path(__file__).resolve().parents[3] / "resources" / "samples" / "lats-bugfix.arbor-tree.jsonl"


@pytest.fixture
def view(qtbot: Any, qsettings_dir: Path) -> SearchTreeView:
    widget = SearchTreeView()
    qtbot.addWidget(widget)
    widget.resize(1100, 650)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def run_of(nodes: list[TreeNode], run_id: str = "r", best: str | None = None) -> list[TreeEvent]:
    events = [
        TreeEvent(
            run_id=run_id, seq=i + 1, kind="node_added", node=node, architecture="lats" if i == 0 else None
        )
        for i, node in enumerate(nodes)
    ]
    if best is not None:
        events.append(TreeEvent(run_id=run_id, seq=len(events) + 1, kind="best_path", path=["n0", best]))
    events.append(TreeEvent(run_id=run_id, seq=len(events) + 1, kind="finished", figures={"wall_s": 1.5}))
    return events


def self_scored_run(run_id: str = "r") -> list[TreeEvent]:
    """Five answers the model scored 9.5 and called solutions, as a failed eval run recorded them."""
    answers = [
        TreeNode(id=f"n{i}", parent="n0", depth=1, kind="answer", label=f"answer {i}", status="solution",
                 reward_raw=9.5, reward=0.95, reflection="Looks right to me.")
        for i in range(1, 6)
    ]  # fmt: skip
    return run_of([TreeNode(id="n0", kind="root", label="task"), *answers], run_id, best="n1")


def test_the_evidence_of_a_verified_node_is_read_from_what_the_tree_records() -> None:
    stage = TreeNode(id="s", parent="n0", depth=1, kind="plan", label="implement", status="solution")
    tests = TreeNode(id="t", parent="s", depth=2, kind="evaluation", label="tests passed", status="solution",
                     reflection="3 passed in 0.2s")  # fmt: skip
    lats = TreeNode(id="a", parent="n0", depth=1, kind="answer", status="solution", reward_raw=9.0,
                    reflection="Minimal.\nTests passed (exit status 0: ok).")  # fmt: skip
    claimed = TreeNode(id="c", parent="n0", depth=1, kind="answer", status="solution", reward_raw=9.5)
    tree = SearchTree(run_of([TreeNode(id="n0", kind="root"), stage, tests, lats, claimed]))
    nodes = tree.nodes
    assert node_trust(tree, nodes["t"]) == ("verified", "its test run passed (3 passed in 0.2s)")
    assert node_trust(tree, nodes["s"]) == ("verified", "the tests passed (evaluation node t)")
    assert (
        node_trust(tree, nodes["a"])[0] == "verified" and "exit status 0" in node_trust(tree, nodes["a"])[1]
    )
    assert node_trust(tree, nodes["c"]) == (
        "self",
        "claimed by the run, the model's own score 9.5/10; nothing ran to check it",
    )
    assert node_trust(tree, nodes["n0"]) == (None, "")
    failed = RunCheck(False, "the eval check failed: assert 3 == 2")
    assert node_trust(tree, nodes["c"], failed)[0] == "refuted"
    assert node_trust(tree, nodes["a"], failed)[0] == "verified"  # its own test run still passed
    passed = RunCheck(True, "the eval check passed", answer="c")
    assert node_trust(tree, nodes["c"], passed) == ("verified", "the eval check passed")


def test_a_verified_result_is_drawn_and_inspected_apart_from_a_self_score(view: SearchTreeView) -> None:
    view.open_file(SAMPLE)
    view.flush()
    geometry = view.canvas.geometry
    # n8's reflection says its tests passed; nothing checked the other nodes.
    assert geometry.status[geometry.index["n8"]] == "verified"
    view.select_node("n8")
    text = view.inspector.toPlainText()
    assert "✓ verified: the tests ran on its branch while searching and passed (exit status 0: ok)" in text
    assert "✓ verified" in view.tooltip_at(view.scene_pos("n8"))
    # The legend names both outlines.
    legend = [text for _what, text, _rect in view.legend._flow(2000)]
    assert "verified (tests or check passed)" in legend and "solution, self-scored" in legend


def test_a_failed_eval_check_shows_self_scores_as_refuted_not_solved(
    view: SearchTreeView, tmp_path: Path
) -> None:
    path = write_jsonl(self_scored_run(), tmp_path / "failed")
    # Without a check, the five answers are claims nothing checked: dashed, their green fill kept.
    view.open_file(path)
    view.flush()
    geometry = view.canvas.geometry
    assert {geometry.status[geometry.index[f"n{i}"]] for i in range(1, 6)} == {"solution"}
    view.select_node("n1")
    assert "self-scored, not checked" in view.inspector.toPlainText()
    assert "the model’s own score" in view.inspector.toPlainText()

    view.open_file(path, RunCheck(False, "the eval check failed: assert 3 == 2"))
    view.flush()
    geometry = view.canvas.geometry
    green = QColor(value_colour(9.5)).hsvSaturationF()
    for i in range(1, 6):
        index = geometry.index[f"n{i}"]
        assert geometry.status[index] == "refuted"
        assert QColor(geometry.fill[index]).hsvSaturationF() < green / 2  # washed out: never a green diamond
    view.select_node("n2")
    text = view.inspector.toPlainText()
    assert "✗ refuted: the eval check failed: assert 3 == 2" in text
    assert "9.5 / 10 (normalised 0.950) · the model’s own score" in text
    assert node_style(view.shown.nodes["n2"], "refuted")[1] != node_style(view.shown.nodes["n2"])[1]
    assert STATUS_COLOURS["refuted"] != STATUS_COLOURS["solution"]


def test_a_passed_eval_check_verifies_the_answer_the_run_gave(view: SearchTreeView, tmp_path: Path) -> None:
    path = write_jsonl(self_scored_run(), tmp_path / "passed")
    view.open_file(path, RunCheck(True, "the eval check passed"))
    view.flush()
    geometry = view.canvas.geometry
    assert geometry.status[geometry.index["n1"]] == "verified"  # the recorded answer
    assert geometry.status[geometry.index["n2"]] == "solution"  # the others stay self-scored
    view.select_node("n1")
    assert "✓ verified: the eval check passed" in view.inspector.toPlainText()


def test_the_best_path_of_every_replay_step_follows_the_scores_shown(view: SearchTreeView) -> None:
    events = read_jsonl(SAMPLE)
    view.open_file(SAMPLE)
    full = view.runs[view.current]
    # Recorded at seq 10, the best path points at n4 (an answer scored 2) beside n2 (scored 6).
    assert full.at(12).best_path[-1] == "n4"
    for step in range(1, len(events)):
        view.replay_to(step)
        view.flush()
        shown = view.shown
        geometry = view.canvas.geometry
        drawn = [node_id for node_id, on in zip(geometry.ids, geometry.best, strict=True) if on]
        if not drawn:
            continue
        end = shown.nodes[drawn[-1]]
        scores = [
            n.reward_raw for n in shown.nodes.values() if n.reward_raw is not None and n.status != "pruned"
        ]
        assert end.reward_raw is not None and end.reward_raw == max(scores), (step, end.id)
        assert drawn == shown.path_to(end.id)
    view.replay_to(12)
    view.flush()
    assert view.canvas.geometry.best[view.canvas.geometry.index["n2"]]
    assert not view.canvas.geometry.best[view.canvas.geometry.index["n4"]]
    # The finished run keeps the path it answered with.
    view.replay_to(len(events))
    view.flush()
    assert shown_best_path(view.shown) == ["n1", "n2", "n5", "n8"]


def test_figures_read_as_a_person_writes_them(view: SearchTreeView) -> None:
    view.open_file(SAMPLE)
    view.flush()
    summary = view.summary.text()
    assert "wall 0.13 s, average score 4.75, model calls 20, tokens in 6,611" in summary
    assert "wall_s" not in summary and "average_score" not in summary
    assert "best score 9/10" in view.summary.toolTip() and "stopped end turn" in view.summary.toolTip()
    assert figure_text("selection_fallbacks", 0) == "selection fallbacks 0"
    assert figure_text("solution_found", True) == "solution found yes"
    tree = SearchTree(run_of([TreeNode(id="n0", kind="root")]))
    assert run_summary(tree, 1, replaying=False) == "1 node · lats · finished: wall 1.5 s"
