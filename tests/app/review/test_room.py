"""The Review stays usable after a turn (issue 46, item 5): a run's tree gives the window back when its turn
ends, the Review dock on top and as wide as the layout has it; its buttons read in full whatever else wants
the room; and its status line says what is true now — after Apply, after Roll back, and above the next
turn's changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QPushButton

from ide.app.chat.part import ChatDock
from ide.app.parts.layout import KEPT_SHARE
from ide.app.review.part import ReviewDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.app.workspace.part import WorkspaceDock
from tests.support.review_changes import commit_modules, value_edits_script
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

FILES = 3
REVIEW_MIN_WIDTH = 560
"""Narrower than this, the Review's rows of buttons cannot all read whole."""


def cut_buttons(window: MainWindow) -> list[str]:
    """The Review's shown buttons narrower than their text needs (what a user reads as fragments), or not
    wholly inside the pane."""
    pane = window.part(ReviewDock).pane
    return [
        button.text()
        for button in pane.findChildren(QPushButton)
        if button.isVisible()
        and (
            button.width() < button.minimumSizeHint().width()
            or button.fontMetrics().horizontalAdvance(button.text()) > button.width()
            or not pane.rect().contains(QRect(button.mapTo(pane, QPoint(0, 0)), button.size()))
        )
    ]


def raised(dock: QDockWidget) -> bool:
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


def review_usable(window: MainWindow) -> bool:
    """The Review dock on screen, wide, and every one of its buttons whole."""
    dock = window.part(ReviewDock).dock
    return raised(dock) and dock.width() >= REVIEW_MIN_WIDTH and not cut_buttons(window)


def edit_turn(qtbot: Any, window: MainWindow, prompt: str) -> None:
    """A turn whose edits come to the Review, waited for until the backend is ready again."""
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt(prompt)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)


@pytest.fixture
def modules(git_workspace: Path) -> Path:
    return commit_modules(git_workspace, FILES)


def test_after_a_turn_the_layout_comes_back_with_the_review_on_top_and_its_buttons_whole(
    qtbot: Any, make_window: WindowFactory, modules: Path, tmp_path: Path
) -> None:
    script = value_edits_script(tmp_path / "edits.jsonl", FILES, "Raised them.")
    window = make_window(modules, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    assert (window.width(), window.height()) == (1280, 800)
    qtbot.waitUntil(lambda: raised(window.part(ReviewDock).dock))
    height = window.part(ReviewDock).dock.height()
    maximised: list[bool] = []
    window.maximisedChanged.connect(maximised.append)

    edit_turn(qtbot, window, "Add a hundred to every VALUE")
    assert maximised == [True, False], "the run had the window while it ran, and gave it back"
    assert window.maximised is None and not window.centralWidget().isHidden()
    assert window.part(WorkspaceDock).dock.isVisible() and window.part(ChatDock).dock.isVisible()
    qtbot.waitUntil(lambda: review_usable(window))
    assert window.part(ReviewDock).pane.files_model.rowCount() == FILES
    for _ in range(3):  # what the review's showing beside the run left pending: sized in that layout
        QApplication.sendPostedEvents()
        QApplication.processEvents()
    assert window.part(ReviewDock).dock.height() == height, "as high as the layout had it before the run"

    pane = window.part(ReviewDock).pane
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.accept_all_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.part(ReviewDock).client.historyReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert pane.result_label.isVisible() and pane.result_label.text().startswith("Applied 3 files")
    qtbot.waitUntil(lambda: review_usable(window))

    pane.tabs.setCurrentIndex(pane.tabs.indexOf(pane.history_tree.parentWidget()))
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)  # asks first
    [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
    with qtbot.waitSignal(window.part(ReviewDock).client.rolledBack, timeout=TURN_TIMEOUT_MS):
        roll_back.click()
    pane.tabs.setCurrentIndex(0)
    # The status line above the changes follows what is true now: nothing of the batch is applied.
    status = pane.result_label.text() if pane.result_label.isVisible() else ""
    assert "Applied" not in status
    assert status.startswith("Rolled back batch") and "restored 3 files" in status
    qtbot.waitUntil(lambda: review_usable(window))


def test_the_next_turns_changes_are_not_shown_under_an_earlier_applys_line(
    qtbot: Any, make_window: WindowFactory, modules: Path, tmp_path: Path
) -> None:
    script = tmp_path / "two.jsonl"
    first = value_edits_script(tmp_path / "first.jsonl", FILES, "Raised them.").read_text()
    new_files = [
        {"name": "create_file", "args": {"path": f"src/new_{n}.py", "content": f"NEW = {n}\n"}}
        for n in range(FILES)
    ]
    second = json.dumps({"tool_calls": new_files}) + "\n" + json.dumps({"content": "Added three."}) + "\n"
    script.write_text(first + second)
    window = make_window(modules, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    edit_turn(qtbot, window, "Add a hundred to every VALUE")
    pane = window.part(ReviewDock).pane
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        pane.decide_all("accepted")
    with qtbot.waitSignal(window.part(ReviewDock).client.historyReceived, timeout=TURN_TIMEOUT_MS):
        pane.apply()
    assert pane.result_label.text().startswith("Applied 3 files")
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    pane.roll_back_selected()
    [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
    with qtbot.waitSignal(window.part(ReviewDock).client.rolledBack, timeout=TURN_TIMEOUT_MS):
        roll_back.click()

    edit_turn(qtbot, window, "Add a hundred to every VALUE again")
    assert pane.files_model.rowCount() == FILES
    assert not pane.result_label.isVisible(), pane.result_label.text()


def test_the_review_is_never_squeezed_below_its_buttons(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, start=False)
    qtbot.waitExposed(window)
    window.maximise(
        window.part(TreeDock).dock, (window.part(ChatDock).dock,)
    )  # the layout a run has: the chat beside it
    window.docks["review"].show()  # type: ignore[attr-defined]  # as a turn's changes raise it
    qtbot.waitUntil(lambda: raised(window.part(ReviewDock).dock))
    # The chat column takes its share of the window once the layout has the new corners.
    qtbot.waitUntil(lambda: window.part(ChatDock).dock.height() > 0.8 * window.height())
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    qtbot.waitUntil(lambda: abs(window.part(ChatDock).dock.width() - KEPT_SHARE * window.width()) < 20)
    # The user drags the chat as wide as the window lets it be.
    window.resizeDocks([window.part(ChatDock).dock], [window.width()], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: window.part(ChatDock).dock.width() > 0.6 * window.width())
    # However narrow the chat leaves it, the review's buttons read whole (on more lines if need be).
    qtbot.waitUntil(lambda: not cut_buttons(window))
    buttons = [b for b in window.part(ReviewDock).pane.findChildren(QPushButton) if b.isVisible()]
    assert {b.text() for b in buttons} >= {"Side by side", "Accept all", "Reject all", "Apply", "Accept file"}
