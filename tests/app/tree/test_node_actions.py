"""A drawn node's actions: its context menu (right-click) with Continue from here…, Use this branch, Prune
and Expand and their keys, the same actions as buttons under the inspector and as keys, each enabled or
saying why not; a continued run listed under its origin, its root marked and a way back to the origin
node; a node the user steered drawn with its mark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QApplication, QToolButton

from ide.app.tree.lineage import Backend
from ide.app.tree.view import SearchTreeView
from ide.protocol.tree import ForkOrigin, TreeEvent, TreeNode

pytestmark = pytest.mark.window

READY = Backend(fork=True, adopt=True, steer=True, ready=True, running=True)


@pytest.fixture
def view(qtbot: Any, qsettings_dir: Path) -> SearchTreeView:
    widget = SearchTreeView()
    qtbot.addWidget(widget)
    widget.resize(1100, 650)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def lats_run(run_id: str, origin: ForkOrigin | None = None, *, finished: bool = False) -> list[TreeEvent]:
    """A small LATS run: the task, two candidates (one edit with its branch), an answer under the edit."""
    nodes = [
        TreeNode(id="n0", kind="root", label="fix mean() in stats.py"),
        TreeNode(id="n1", parent="n0", depth=1, kind="action", label="edit stats.py", changeset_id="cs-n1"),
        TreeNode(id="n2", parent="n0", depth=1, kind="thought", label="read the tests first"),
        TreeNode(
            id="n3", parent="n1", depth=2, kind="answer", label="mean() divides by n", changeset_id="cs-n3"
        ),
    ]
    events = [
        TreeEvent(
            run_id=run_id,
            seq=k,
            kind="node_added",
            node=node,
            architecture="lats" if k == 1 else None,
            forked_from=origin if k == 1 else None,
        )
        for k, node in enumerate(nodes, start=1)
    ]
    if finished:
        events.append(TreeEvent(run_id=run_id, seq=len(events) + 1, kind="finished"))
    return events


def right_click(view: SearchTreeView, node_id: str) -> None:
    """Send the view the context-menu event a right-click on ``node_id`` makes."""
    view.flush()
    viewport = view.graphics.viewport()
    pos = view.graphics.mapFromScene(view.scene_pos(node_id))
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, viewport.mapToGlobal(pos))
    QApplication.sendEvent(viewport, event)


def test_right_click_on_a_node_offers_its_actions_with_their_keys(qtbot: Any, view: SearchTreeView) -> None:
    view.add_events(lats_run("live-run"))
    view.node_actions.set_backend(READY)
    right_click(view, "n1")
    menu = view.node_actions.menu
    assert menu is not None and menu.isVisible()
    assert view.selected_id == "n1", "the node right-clicked is the one the menu acts on"
    shown = {a.text(): a for a in menu.actions() if not a.isSeparator()}
    assert list(shown) == ["Continue from here…", "Use this branch", "Show branch diff", "Prune", "Expand"]
    keys = {text: action.shortcut().toString() for text, action in shown.items()}
    assert keys == {
        "Continue from here…": "C",
        "Use this branch": "U",
        "Show branch diff": "",
        "Prune": "P",
        "Expand": "E",
    }
    assert all(action.isShortcutVisibleInContextMenu() for text, action in shown.items() if keys[text])
    assert shown["Continue from here…"].isEnabled() and shown["Prune"].isEnabled()
    assert "(C)" in shown["Continue from here…"].toolTip()
    menu.close()

    with qtbot.waitSignal(view.node_actions.continueRequested, timeout=1000) as asked:
        shown["Continue from here…"].trigger()
    assert asked.args == ["live-run", "n1"]
    with qtbot.waitSignal(view.node_actions.steerRequested, timeout=1000) as steered:
        shown["Expand"].trigger()
    assert steered.args == ["live-run", "n1", "expand"]

    right_click(view, "n0")
    root_menu = {a.text(): a for a in view.node_actions.menu.actions() if not a.isSeparator()}
    assert not root_menu["Prune"].isEnabled() and "root cannot be pruned" in root_menu["Prune"].toolTip()
    view.node_actions.menu.close()
    right_click(view, "n2")
    assert view.node_actions.menu is not None and view.selected_id == "n2"
    view.node_actions.menu.close()


def test_the_keys_act_on_the_selected_node_while_the_tree_has_the_focus(
    qtbot: Any, view: SearchTreeView
) -> None:
    view.add_events(lats_run("live-run"))
    view.node_actions.set_backend(READY)
    view.flush()
    view.select_node("n3")
    view.activateWindow()
    view.graphics.setFocus()
    qtbot.waitUntil(view.graphics.hasFocus, timeout=2000)
    with qtbot.waitSignal(view.node_actions.adoptRequested, timeout=1000) as adopted:
        qtbot.keyClick(view.graphics, Qt.Key.Key_U)
    assert adopted.args == ["live-run", "n3"]
    with qtbot.waitSignal(view.node_actions.steerRequested, timeout=1000) as pruned:
        qtbot.keyClick(view.graphics, Qt.Key.Key_P)
    assert pruned.args == ["live-run", "n3", "prune"]


def test_the_inspector_offers_the_same_actions_disabled_with_the_reason(view: SearchTreeView) -> None:
    view.add_events(lats_run("done-run", finished=True))
    view.node_actions.set_backend(Backend(fork=True, adopt=True, ready=True, running=True))
    view.flush()
    assert view.node_actions.buttons.isHidden(), "no node selected: no buttons"
    view.select_node("n1")
    buttons = {b.text(): b for b in view.node_actions.buttons.findChildren(QToolButton)}
    assert list(buttons) == ["Continue from here", "Use this branch", "Prune", "Expand"]  # a button drops "…"
    assert all(b.isVisible() for b in buttons.values())
    assert buttons["Continue from here"].isEnabled() and buttons["Use this branch"].isEnabled()
    for name in ("Prune", "Expand"):
        assert not buttons[name].isEnabled()
        assert buttons[name].toolTip() == f"{name} steers a running search; this run has finished."
    view.node_actions.set_backend(Backend())  # the backend stopped
    assert not buttons["Continue from here"].isEnabled()
    assert buttons["Continue from here"].toolTip() == "The backend is not running."


def test_a_continued_run_reads_as_one_tree_of_attempts_and_leads_back_to_its_origin(
    qtbot: Any, view: SearchTreeView
) -> None:
    view.add_events(lats_run("first-run", finished=True))
    view.add_events(lats_run("other-run", finished=True))
    view.add_events(lats_run("again-run", ForkOrigin(run_id="first-run", node_id="n1")))
    combo = view.run_combo
    listed = [(combo.itemData(i), combo.itemText(i)) for i in range(combo.count())]
    assert listed == [
        ("first-run", "run first-run"),
        ("again-run", "↳ run again-run · from run first-run · n1"),
        ("other-run", "run other-run"),
    ]
    view.select_run("again-run")
    view.flush()
    geometry = view.canvas.geometry
    assert geometry.forked_root == geometry.index["n0"], "the continued run's root carries the fork mark"
    bar = view.node_actions.origin_bar
    assert bar.isVisible()
    assert (
        "Continues run first-run from node n1 (edit stats.py)" in bar.text() and "Go to origin" in bar.text()
    )

    bar.linkActivated.emit("origin")
    assert view.current == "first-run" and view.selected_id == "n1"
    assert view.canvas.geometry.forked_root == -1 and not bar.isVisible()
    assert view.graphics.visible_scene_rect().contains(view.scene_pos("n1"))

    view.select_run("again-run")
    view.flush()
    view.select_node("n2")
    origin = view.node_actions.actions["origin"]
    assert origin.isVisible() and origin.isEnabled() and origin.shortcut().toString() == "O"
    origin.trigger()
    assert (view.current, view.selected_id) == ("first-run", "n1")


def test_a_steered_node_shows_its_mark(view: SearchTreeView) -> None:
    events = lats_run("live-run")
    events.append(
        TreeEvent(run_id="live-run", seq=5, kind="node_updated", node_id="n2", changes={"steer": "prune"})
    )
    events.append(
        TreeEvent(run_id="live-run", seq=6, kind="node_updated", node_id="n1", changes={"steer": "expand"})
    )
    view.add_events(events[:4])
    view.flush()
    geometry = view.canvas.geometry
    assert geometry.steer == ["", "", "", ""]
    view.add_events(events[4:])
    view.flush()  # restyled where they stand
    steer = dict(zip(view.canvas.geometry.ids, view.canvas.geometry.steer, strict=True))
    assert steer == {"n0": "", "n1": "expand", "n2": "prune", "n3": ""}
    view.node_actions.set_backend(READY)
    view.select_node("n2")
    prune = view.node_actions.actions["prune"]
    assert not prune.isEnabled() and prune.toolTip() == "n2 is pruned already."
    text = view.inspector.toPlainText()
    assert "Steered" in text and "pruned by you" in text
    assert [text for _what, text in view.legend.items()[-1]] == [
        "pruned by you",
        "expand asked",
        "continued run",
    ]
