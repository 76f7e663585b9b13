"""The search-tree dock: a big tree drawn and fitted, nodes inspected, replay, coalesced live events,
open/export, and the whole path from a fake agent's ``_arbor/tree`` notifications through the bridge."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QHelpEvent, QImage, QTextDocumentFragment
from PySide6.QtWidgets import QApplication, QToolTip

from ide.app.review.part import ReviewDock
from ide.app.tree.model import synthetic_events, tidy_layout
from ide.app.tree.part import TreeDock
from ide.app.tree.style import MIN_SCALE, value_colour
from ide.app.tree.view import SearchTreeView
from ide.app.window import MainWindow
from ide.protocol.tree import BranchDiffParams, SearchTree, TreeEvent, TreeNode, read_jsonl
from tests.support.tree_view import assert_captions_readable, dock_sized
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

TREE_AGENT = [sys.executable, str(Path(__file__).parents[2] / "support" / "tree_agent.py")]


@pytest.fixture
def view(qtbot: Any, qsettings_dir: Path) -> SearchTreeView:
    widget = SearchTreeView()
    qtbot.addWidget(widget)
    widget.resize(1100, 650)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


@pytest.fixture(scope="module")
def big_run() -> list[TreeEvent]:
    return synthetic_events(2000, run_id="big")


def added(
    node_id: str,
    parent: str | None,
    seq: int,
    run_id: str = "r",
    architecture: str | None = None,
    **fields: Any,
) -> TreeEvent:
    node = TreeNode(id=node_id, parent=parent, **fields)
    return TreeEvent(run_id=run_id, seq=seq, kind="node_added", node=node, architecture=architecture)


def test_layout_is_tidy_and_needs_no_recursion() -> None:
    children = {"r": ["a", "b", "c"], "a": ["a1", "a2"], "c": ["c1"]}
    layout = tidy_layout(["r"], children)
    x = dict(zip(layout.ids, layout.x, strict=True))
    assert x["r"] == pytest.approx((x["a"] + x["c"]) / 2)  # parents centred over their children
    assert x["a"] == pytest.approx((x["a1"] + x["a2"]) / 2)
    assert x["b"] - x["a"] >= 1 and x["c"] - x["b"] >= 1 and x["a2"] - x["a1"] >= 1
    chain = {str(i): [str(i + 1)] for i in range(5000)}
    deep = tidy_layout(["0"], chain)
    assert max(deep.depth) == 5000 and set(deep.x) == {0.0}


def test_a_2000_node_tree_renders_fits_and_culls(
    qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]
) -> None:
    view.add_events(big_run)
    with qtbot.waitSignal(view.relaid, timeout=2000):
        pass
    assert len(view.shown.nodes) == 2000
    assert len(view.canvas.geometry) == 2000
    assert view.scene.sceneRect().contains(view.canvas.boundingRect())
    # the default fit keeps captions readable: a big tree is scrolled (to its best path's end), not
    # shrunk to dots, and only what is in view is painted
    assert view.graphics.transform().m11() == pytest.approx(MIN_SCALE)
    assert view.graphics.visible_scene_rect().contains(view.scene_pos("n1999"))
    view.graphics.viewport().repaint()
    assert 0 < view.canvas.last_painted < 2000 and view.canvas.last_captions
    # Whole tree: all of it inside the viewport, so one paint draws every node
    view.whole_button.click()
    shown = view.graphics.mapFromScene(view.canvas.geometry.bounds).boundingRect()
    assert view.graphics.viewport().rect().adjusted(-2, -2, 2, 2).contains(shown)
    view.graphics.viewport().repaint()
    assert view.canvas.last_painted == 2000
    # zoomed in on one node: only what is exposed is painted
    view.graphics.resetTransform()
    view.graphics.zoom(2.0)
    assert view.center_on("n1500")
    view.graphics.viewport().repaint()
    assert 0 < view.canvas.last_painted < 200
    assert "2000 nodes" in view.summary.text() and "finished" in view.summary.text()
    view.fit_whole()
    view.graphics.viewport().repaint()
    assert view.canvas.last_painted == 2000


def test_clicking_a_node_shows_it_in_the_inspector(qtbot: Any, view: SearchTreeView) -> None:
    events = [
        added("root", None, 1, "r", "lats", kind="root", label="Fix the bug", status="evaluated", visits=10),
        added(
            "a1",
            "root",
            2,
            depth=1,
            kind="action",
            label="read the file",
            thought="Look at parse()",
            action={"tool": "read_file", "args": {"path": "src/parse.py"}},
            observation="def parse(): ...",
            reflection="Promising",
            reward_raw=7.5,
            reward=0.75,
            visits=3,
            value=0.71,
            role="expansion",
            model="ollama:qwen3",
            input_tokens=120,
            output_tokens=45,
            latency_ms=830,
            changeset_id="cs-a1",
        ),
    ]
    view.add_events(events)
    view.flush()
    view.graphics.resetTransform()
    view.center_on("a1")
    point = view.graphics.mapFromScene(view.scene_pos("a1"))
    with qtbot.waitSignal(view.nodeSelected) as picked:
        qtbot.mouseClick(view.graphics.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert picked.args == ["a1"]
    text = view.inspector.toPlainText()
    for expected in (
        "read the file", "Look at parse()", "read_file", "src/parse.py", "def parse(): ...", "Promising",
        "7.5 / 10", "0.750", "0.710", "expansion", "ollama:qwen3", "120 in / 45 out", "830 ms", "cs-a1",
        # UCT terms: c·√(ln N_parent / n) = 1.414·√(ln 10 / 3) = 1.239; value + exploration = 1.949
        "UCT (c = 1.414)", "1.239 = 1.414·√(ln 10 / 3)", "1.949", "3 of the parent's 10",
    ):  # fmt: skip
        assert expected in text, expected
    # the root has no parent, so no UCT terms
    view.select_node("root")
    assert "UCT" not in view.inspector.toPlainText()
    view.select_node("a1")
    # an update to the selected node refreshes the inspector on the next drawing
    view.add_events(
        [TreeEvent(run_id="r", seq=3, kind="node_updated", node_id="a1", changes={"status": "solution"})]
    )
    view.flush()
    assert "solution" in view.inspector.toPlainText()
    # clicking empty space clears the selection
    qtbot.mouseClick(view.graphics.viewport(), Qt.MouseButton.LeftButton, pos=point + QPoint(0, 300))
    assert view.selected_id is None and view.inspector.toPlainText() == ""


def test_the_replay_slider_shows_the_state_after_k_events(
    qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]
) -> None:
    events = big_run[:300]
    view.add_events(events)
    view.flush()
    assert view.slider.maximum() == 300 and view.slider.value() == 300 and view.step is None
    for k in (0, 1, 57, 150, 299):
        with qtbot.waitSignal(view.relaid, timeout=2000):
            view.slider.setValue(k)
        expected = SearchTree(events[:k])
        assert view.step == k
        assert set(view.shown.nodes) == set(expected.nodes)
        assert len(view.canvas.geometry) == len(expected.nodes)
        assert view.step_label.text() == f"{k} / 300"
    # stepping with the keyboard moves one event at a time
    view.slider.setFocus()
    with qtbot.waitSignal(view.relaid, timeout=2000):
        qtbot.keyClick(view.slider, Qt.Key.Key_Right)
    assert view.step is None and view.slider.value() == 300  # the last step is live again
    view.replay_to(150)
    with qtbot.waitSignal(view.relaid, timeout=2000):
        qtbot.keyClick(view.slider, Qt.Key.Key_Right)
    assert view.step == 151
    # new live events do not move a replay, but extend the timeline
    view.replay_to(10)
    view.add_events(big_run[300:310])
    assert view.step == 10 and view.slider.maximum() == 310
    view.replay_to(310)
    assert view.step is None and view.shown is view.runs["big"]


def test_duplicates_are_ignored_and_out_of_order_events_reported(
    qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]
) -> None:
    view.add_events(big_run[:50])
    view.flush()
    tree = view.runs["big"]
    nodes = set(tree.nodes)
    view.add_events(big_run[10:30])  # a replayed session sends them again
    assert tree.seq == 50 and set(tree.nodes) == nodes and view.message.isHidden()

    view.add_events(big_run[60:70])  # seq 51-60 have not come
    assert tree.seq == 50 and set(tree.nodes) == nodes
    assert view.message.isVisible()
    assert view.message.text() == "run big: events out of order after seq 50; showing the tree up to there"
    view.add_events(big_run[50:60])  # they come late: all twenty fit now
    assert tree.seq == 70 and tree.events == big_run[:70]
    assert view.message.isHidden()

    stray = added("stray", "nowhere", 71, run_id="big", depth=1)
    view.add_events([stray, *big_run[70:80]])
    assert tree.seq == 70, "nothing after the event that does not fit"
    assert "parent 'nowhere' of 'stray' is unknown" in view.message.text()
    assert view.message.text().endswith("showing the tree up to seq 70")
    with qtbot.waitSignal(view.relaid, timeout=2000):
        pass
    assert len(view.canvas.geometry) == len(tree.nodes) == len(SearchTree(big_run[:70]).nodes)


def test_updates_restyle_nodes_without_a_new_layout(
    qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]
) -> None:
    events = big_run[:200]
    view.add_events(events)
    view.flush()
    layout = view._layout
    target = next(e.node.id for e in events if e.node is not None and e.node.kind != "root")
    index = view.canvas.geometry.index[target]
    radius = view.canvas.geometry.r[index]
    update = TreeEvent(
        run_id="big", seq=201, kind="node_updated", node_id=target, changes={"visits": 60, "value": 1.0}
    )
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.add_events([update])
    assert view._layout is layout, "no new layout for an update"
    assert view.canvas.geometry.r[index] > radius
    assert view.canvas.geometry.fill[index] == value_colour(1.0)


def test_the_overview_pans_the_view(qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]) -> None:
    view.add_events(big_run)
    view.flush()
    overview = view.overview
    assert overview.isVisible()
    view.graphics.resetTransform()
    assert view.center_on("n0")
    target = view.scene_pos("n1999")
    assert target is not None
    before = view.graphics.visible_scene_rect()
    assert not before.contains(target)
    spot = overview.from_scene(QRectF(target, QSizeF(0, 0))).topLeft().toPoint()
    qtbot.mouseClick(overview, Qt.MouseButton.LeftButton, pos=spot)
    after = view.graphics.visible_scene_rect()
    assert after.contains(target), "the view moved to where the overview was clicked"
    assert not view._auto_fit, "a tree that grows no longer refits the view"
    # the overview outlines what the view shows now
    outline = overview.from_scene(after)
    assert outline.contains(QRectF(spot, QSizeF(1, 1)).center())
    view.overview_button.setChecked(False)
    assert overview.isHidden()


def test_live_batches_coalesce_into_one_relayout(
    qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]
) -> None:
    view.add_events(big_run[:1])
    view.flush()
    before = view.layout_count
    for start in range(1, 1001, 20):  # 50 batches in one go
        view.add_events(big_run[start : start + 20])
    assert view.layout_count == before, "no re-layout per batch"
    assert len(view.runs["big"].events) == 1001  # but the model has them all already
    with qtbot.waitSignal(view.relaid, timeout=2000):
        pass
    assert view.layout_count == before + 1
    assert len(view.canvas.geometry) == len(view.runs["big"].nodes)


def test_hide_pruned(qtbot: Any, view: SearchTreeView, big_run: list[TreeEvent]) -> None:
    view.add_events(big_run)
    view.flush()
    tree = view.runs["big"]
    pruned = {i for i, n in tree.nodes.items() if n.status == "pruned"}
    assert pruned
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.hide_pruned_box.setChecked(True)
    drawn = set(view.canvas.geometry.ids)
    assert not drawn & pruned and len(drawn) <= len(tree.nodes) - len(pruned)
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.hide_pruned_box.setChecked(False)
    assert len(view.canvas.geometry) == len(tree.nodes)


def test_export_png_svg_jsonl_and_open_it_back(
    view: SearchTreeView, big_run: list[TreeEvent], tmp_path: Path
) -> None:
    view.add_events(big_run[:400])
    view.flush()
    png = view.export_png(tmp_path / "tree.png")
    image = QImage(str(png))
    assert not image.isNull() and image.width() > 100 and image.height() > 100
    svg = view.export_svg(tmp_path / "tree.svg")
    text = svg.read_text()
    assert "<svg" in text and "root 0" in text
    exported = view.export_jsonl(tmp_path / "run")
    assert exported.name == "run.arbor-tree.jsonl"
    assert read_jsonl(exported) == big_run[:400]

    other = SearchTreeView()
    key = other.open_file(exported)
    other.flush()
    assert other.current == key and len(other.shown.nodes) == len(view.runs["big"].nodes)
    other.deleteLater()


def test_a_bad_file_is_refused_with_file_and_line(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, big_run: list[TreeEvent]
) -> None:
    window = make_window(tmp_path, command=TREE_AGENT, start=False)
    bad = tmp_path / "bad.arbor-tree.jsonl"
    lines = [event.model_dump_json() for event in big_run[:3]]
    bad.write_text("\n".join([*lines[:2], '{"run_id": "x", "kind": "node_added"}', lines[2]]) + "\n")
    assert not window.part(TreeDock).open_file(bad)
    assert window.banner.isVisible()
    assert f"{bad}:3" in window.banner.title.text()
    garbage = tmp_path / "garbage.arbor-tree.jsonl"
    garbage.write_text("not json\n")
    assert not window.part(TreeDock).open_file(garbage)
    assert f"{garbage}:1" in window.banner.title.text()

    good = tmp_path / "good.arbor-tree.jsonl"
    good.write_text("\n".join(event.model_dump_json() for event in big_run[:50]) + "\n")
    assert window.part(TreeDock).open_file(good)
    assert window.part(TreeDock).dock.isVisible()
    window.part(TreeDock).view.flush()
    assert window.part(TreeDock).view.current == "good.arbor-tree.jsonl · big"
    assert len(window.part(TreeDock).view.canvas.geometry) == len(SearchTree(big_run[:50]).nodes)


def test_tree_notifications_reach_the_dock_live_and_on_session_load(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    env = {"TREE_AGENT_STORE": str(tmp_path / "store.json")}
    window = make_window(tmp_path, command=TREE_AGENT, env=env)
    wait_ready(qtbot, window)
    assert window.part(TreeDock).dock.visibleRegion().isEmpty(), "a tab behind the review until a run starts"
    received: list[int] = []
    window.docks["tree"].treeEvents.connect(lambda events: received.append(len(events)))
    maximised: list[bool] = []
    window.maximisedChanged.connect(maximised.append)
    window.send_prompt("tree 300")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view = window.part(TreeDock).view
    assert maximised == [True, False], "given the window while the run ran, the layout back at its end"
    qtbot.waitUntil(lambda: not window.part(TreeDock).dock.visibleRegion().isEmpty())  # the tab on top
    assert len(received) > 1 and all(n <= 25 for n in received)  # batch by batch, other session ignored
    assert len(view.runs) == 1
    run = next(iter(view.runs.values()))
    assert len(run.nodes) == 300 and run.finished and run.best_path
    qtbot.waitUntil(lambda: len(view.canvas.geometry) == 300, timeout=2000)
    assert view.layout_count < len(received), "live batches were coalesced"

    # A restart restores the session: the replayed notifications rebuild the same tree
    with qtbot.waitSignal(window.bridge.sessionReady, timeout=TURN_TIMEOUT_MS) as ready:
        window.restart_backend()
    assert ready.args[1] is True
    assert len(view.runs) == 1
    replayed = next(iter(view.runs.values()))
    assert replayed is not run and replayed.run_id == run.run_id
    assert [e.seq for e in replayed.events] == [e.seq for e in run.events]
    assert json.dumps(sorted(replayed.nodes)) == json.dumps(sorted(run.nodes))


def branch_node(window: MainWindow) -> str:
    tree = window.part(TreeDock).view.shown
    assert tree is not None
    return next(node.id for node in tree.nodes.values() if node.changeset_id)


def test_branch_diff_shows_in_the_review_pane_read_only(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window = make_window(tmp_path, command=TREE_AGENT)
    wait_ready(qtbot, window)
    window.send_prompt("tree 60")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view, review = window.part(TreeDock).view, window.part(ReviewDock).pane
    view.flush()
    node_id = branch_node(window)
    view.select_node(node_id)
    button = view.branch_button
    assert button.isVisible() and button.isEnabled()
    with qtbot.waitSignal(window.docks["tree"].branchDiffReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert window.part(ReviewDock).dock.isVisible()
    assert review.state.branch is not None and review.branch_bar.isVisible()
    run_id = view.shown.run_id
    assert review.branch_label.text() == (
        f"Branch {node_id} of run {run_id[:12]} — read-only; the run's chosen branch is what you review"
    )
    assert review.files_model.files[0].path == f"src/{node_id}.py"
    assert review.state.current_hunk_view() is not None
    for control in (
        review.accept_button, review.reject_button, review.accept_file_button, review.reject_file_button,
        review.accept_all_button, review.reject_all_button, review.apply_button, review.comment_edit,
        review.feedback_button,
    ):  # fmt: skip
        assert not control.isEnabled(), control
    decided: list[object] = []
    review.decideRequested.connect(decided.append)
    qtbot.keyClick(review.file_list, Qt.Key.Key_A)
    assert decided == [] and review.state.current_hunk_view().decision == "pending"
    qtbot.mouseClick(review.back_button, Qt.MouseButton.LeftButton)
    assert review.state.branch is None and review.branch_bar.isHidden() and review.state.changeset is None

    # a change set the backend does not know: its error in the dock's message line
    with qtbot.waitSignal(window.docks["tree"].branchDiffFailed, timeout=TURN_TIMEOUT_MS):
        window.docks["tree"].request_branch_diff("cs-nope", "n1", run_id)
    assert view.message.isVisible() and "no change set cs-nope in this session" in view.message.text()

    # the same run opened from a file: no session to ask
    exported = view.export_jsonl(tmp_path / "run")
    assert window.part(TreeDock).open_file(exported)
    view.flush()
    view.select_node(node_id)
    assert view.current == f"run.arbor-tree.jsonl · {run_id}"
    assert button.isVisible() and not button.isEnabled()
    assert "opened from a file" in button.toolTip()


def test_branch_diff_button_is_disabled_when_the_backend_lacks_it(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    env = {"TREE_AGENT_NO_BRANCH": "1"}
    window = make_window(tmp_path, command=TREE_AGENT, env=env)
    wait_ready(qtbot, window)
    window.send_prompt("tree 60")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view = window.part(TreeDock).view
    view.flush()
    view.select_node(branch_node(window))
    assert view.branch_button.isVisible() and not view.branch_button.isEnabled()
    assert "does not serve branch diffs" in view.branch_button.toolTip()
    assert not window.docks["tree"].branch_diff(BranchDiffParams(session_id="s", changeset_id="cs-n1"))


def chain_events(count: int, run_id: str = "react") -> list[TreeEvent]:
    """A ReAct-shaped chain: the prompt, then thoughts and tool calls one under the other, an answer."""
    events: list[TreeEvent] = []
    parent: str | None = None
    for i in range(count):
        kind = "root" if i == 0 else "answer" if i == count - 1 else ("action" if i % 2 == 0 else "thought")
        action = {"tool": "read_file", "args": {"path": f"pkg/stats_{i}.py"}} if kind == "action" else None
        label = f"Step {i}: the mean is computed in pkg/stats.py, so look there first"
        events.append(
            added(
                f"c{i}",
                parent,
                i + 1,
                run_id,
                "react" if i == 0 else None,
                depth=i,
                kind=kind,
                label=label,
                action=action,
                thought=f"Thought {i}: read the module\nthen decide",
                observation=f"line one of output {i}\nline two" if action else None,
                status="evaluated",
                role="react",
            )
        )
        parent = f"c{i}"
    return events


def test_a_ten_node_chain_reads_left_to_right_at_the_default_fit(qtbot: Any, qsettings_dir: Path) -> None:
    view = dock_sized(qtbot)
    events = chain_events(10)
    view.add_events(events)
    view.flush()
    assert view.canvas.geometry.horizontal, "a chain is drawn left to right"
    assert_captions_readable(view, [e.node.id for e in events if e.node], all_in_view=True)
    tool = view.canvas.caption_lines(view.canvas.geometry.index["c2"])
    assert tool == ["read_file pkg/", "stats_2.py"]
    assert view.overview.isHidden(), "no map when the whole tree is in view"


def test_every_node_of_a_60_node_tree_is_readable_at_the_default_fit(qtbot: Any, qsettings_dir: Path) -> None:
    view = dock_sized(qtbot)
    view.add_events(synthetic_events(60, run_id="sixty"))
    view.flush()
    assert_captions_readable(view, list(view.canvas.geometry.ids), all_in_view=False)


def test_direction_follows_the_shape_and_the_toolbar_overrides_it(qtbot: Any, qsettings_dir: Path) -> None:
    view = dock_sized(qtbot)
    wide = [added("w", None, 1, "wide", kind="root", label="root")] + [
        added(f"w{i}", "w", i + 2, "wide", depth=1, label=f"option {i}") for i in range(7)
    ]
    view.add_events(chain_events(12))
    view.flush()
    assert view.canvas.geometry.horizontal
    view.add_events(wide)
    view.flush()
    assert view.current == "wide" and not view.canvas.geometry.horizontal, "a wide tree is drawn top-down"
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.direction_combo.setCurrentIndex(view.direction_combo.findData("lr"))
    assert view.direction == "lr" and view.canvas.geometry.horizontal
    xs = {view.scene_pos(f"w{i}").x() for i in range(7)}
    assert len(xs) == 1 and view.scene_pos("w").x() < xs.pop(), "children in a column right of the root"
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.set_direction("auto")
    assert not view.canvas.geometry.horizontal
    with pytest.raises(ValueError, match="no tree direction 'up'"):
        view.set_direction("up")


def test_hovering_a_node_shows_its_summary(qtbot: Any, qsettings_dir: Path) -> None:
    view = dock_sized(qtbot)
    events = chain_events(6)
    scored = TreeEvent(
        run_id="react", seq=7, kind="node_updated", node_id="c2", changes={"reward_raw": 7.5, "reward": 0.75}
    )
    view.add_events([*events, scored])
    view.flush()
    point = view.graphics.mapFromScene(view.scene_pos("c2"))
    QToolTip.hideText()
    event = QHelpEvent(QEvent.Type.ToolTip, point, view.graphics.viewport().mapToGlobal(point))
    QApplication.sendEvent(view.graphics.viewport(), event)
    qtbot.waitUntil(QToolTip.isVisible, timeout=2000)
    text = QTextDocumentFragment.fromHtml(QToolTip.text()).toPlainText()
    for expected in (
        "read_file pkg/stats_2.py", "action", "evaluated", "score 7.5 / 10",
        "Thought 2: read the module", "then decide", "line one of output 2", "line two",
    ):  # fmt: skip
        assert expected in text, (expected, text)
    assert view.canvas.caption_lines(view.canvas.geometry.index["c2"])  # the score is drawn in the node
    assert view.canvas.geometry.score[view.canvas.geometry.index["c2"]] == "7.5"
    QToolTip.hideText()
    assert view.tooltip_at(QPointF(-5000, -5000)) == ""


def test_uct_terms_only_for_nodes_chosen_by_uct(qtbot: Any, view: SearchTreeView) -> None:
    view.add_events(chain_events(4))
    view.flush()
    view.select_node("c1")
    text = view.inspector.toPlainText()
    assert "Thought 1" in text and "UCT" not in text and "Exploration" not in text
    view.add_events(synthetic_events(20, run_id="lats"))
    view.flush()
    node = next(i for i in view.shown.nodes if i != "n0")
    view.select_node(node)
    assert "UCT (c = 1.414)" in view.inspector.toPlainText()


def overview_covers_a_node(view: SearchTreeView) -> bool:
    """Whether the overview map's rectangle meets any drawn node's on-screen rectangle (with caption)."""
    graphics, geometry = view.graphics, view.canvas.geometry
    overview = QRectF(view.overview.geometry()).translated(-QPointF(graphics.viewport().pos()))
    for i in geometry.visible(graphics.visible_scene_rect()):
        if graphics.mapFromScene(geometry.node_box(i)).boundingRect().intersects(overview.toRect()):
            return True
    return False


def test_the_overview_never_covers_a_node(qtbot: Any, qsettings_dir: Path, big_run: list[TreeEvent]) -> None:
    view = dock_sized(qtbot)
    view.add_events(chain_events(30))
    view.flush()
    assert view.overview.isVisible(), "a chain longer than the view gets a map"
    assert not view.overview.in_margin and not overview_covers_a_node(view)
    view.add_events(big_run)
    view.flush()
    assert view.overview.isVisible()
    for node_id in ("n0", "n700", "n1400", "n1999"):
        view.center_on(node_id)
        assert view.overview.isVisible() and not overview_covers_a_node(view), node_id
    view.fit_whole()
    assert view.overview.isHidden(), "the whole tree in view: no map"
    view.overview_button.setChecked(False)
    view.fit()
    assert view.overview.isHidden()


def test_a_commands_caption_shows_its_argument_list_as_a_command_line() -> None:
    from ide.app.tree.style import node_caption
    from ide.protocol.tree import ToolAction, TreeNode

    node = TreeNode(
        id="n9",
        parent="n1",
        kind="action",
        action=ToolAction(tool="run_command", args={"argv": ["python", "-m", "pytest", "-q", "a b.py"]}),
    )
    assert node_caption(node) == "run_command python -m pytest -q 'a b.py'"


def test_another_agents_tool_call_is_captioned_by_its_title_not_its_call_id() -> None:
    """Issue 46 item 8: Codex's apply_patch node said "edit call_d167ea4a81d5" (the first string of its
    input) where its title says which file it edits."""
    from ide.app.tree.style import node_caption
    from ide.protocol.tree import ToolAction, TreeNode

    args = {"call_id": "call_d167ea4a81d5", "changes": {"/s/made_by_patch.py": {"add": {"content": "x"}}}}
    node = TreeNode(
        id="tool:call_d167ea4a81d5",
        parent="root",
        kind="action",
        label="Edit /s/made_by_patch.py",
        action=ToolAction(tool="edit", args=args),
    )
    assert node_caption(node) == "Edit /s/made_by_patch.py"
    untitled = TreeNode(
        id="t2", parent="root", kind="action", label="tool call", action=ToolAction(tool="edit", args=args)
    )
    assert node_caption(untitled) == "edit call_d167ea4a81d5"  # nothing better known
