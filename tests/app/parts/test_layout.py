"""Window geometry and dock layout: the default leaves the code viewer room, Reset Layout brings it back,
and a changed layout survives closing the window and opening a new one."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QDockWidget

from ide.app.chat.part import ChatDock
from ide.app.parts.layout import STATE_KEY
from ide.app.window import MainWindow
from ide.app.workspace.part import WorkspaceDock
from tests.support.window import WindowFactory, close_window

pytestmark = pytest.mark.window


def test_geometry_and_docks_persist_across_windows(
    qtbot, make_window: WindowFactory, git_workspace: Path, qsettings_dir: Path
):
    first = make_window(git_workspace, start=False)
    first.resize(720, 560)  # inside the offscreen screen (800x600): restore clamps to it
    first.removeDockWidget(first.part(ChatDock).dock)
    first.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, first.part(ChatDock).dock)
    first.part(ChatDock).dock.show()
    first.part(WorkspaceDock).dock.hide()
    qtbot.waitUntil(lambda: first.size().width() == 720)
    close_window(qtbot, first)

    assert Path(QSettings().fileName()).is_relative_to(qsettings_dir)  # never the user's real settings

    second = make_window(git_workspace, start=False)
    qtbot.waitExposed(second)
    assert (second.width(), second.height()) == (720, 560)
    assert second.dockWidgetArea(second.part(ChatDock).dock) == Qt.DockWidgetArea.BottomDockWidgetArea
    assert second.part(WorkspaceDock).dock.isHidden()
    assert not second.part(ChatDock).dock.isHidden()


def test_a_fresh_profile_gets_the_default_layout(qtbot, make_window: WindowFactory, git_workspace: Path):
    window = make_window(git_workspace, start=False)
    qtbot.waitExposed(window)
    assert (window.width(), window.height()) == (1280, 800)
    assert window.dockWidgetArea(window.part(WorkspaceDock).dock) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(window.part(ChatDock).dock) == Qt.DockWidgetArea.RightDockWidgetArea
    qtbot.waitUntil(lambda: window.part(ChatDock).dock.width() > window.part(WorkspaceDock).dock.width())


def bottom_docks(window: MainWindow) -> tuple[QDockWidget, QDockWidget]:
    return window.docks["review"].dock, window.docks["tree"].dock  # type: ignore[attr-defined]


def open_review_and_tree(qtbot, window: MainWindow) -> None:
    window.docks["review"].show()  # type: ignore[attr-defined]
    window.docks["tree"].show()  # type: ignore[attr-defined]
    review, tree = bottom_docks(window)
    qtbot.waitUntil(lambda: review.isVisible() and tree.isVisible())


def workspace_rows(window: MainWindow) -> float:
    """How many rows of the workspace tree fit in its view."""
    view = window.part(WorkspaceDock).panel.tree
    return view.viewport().height() / view.sizeHintForRow(0)


def assert_default_layout(qtbot, window: MainWindow) -> None:
    review, tree = bottom_docks(window)
    bottom = Qt.DockWidgetArea.BottomDockWidgetArea
    assert window.dockWidgetArea(review) == bottom and window.dockWidgetArea(tree) == bottom
    assert review in window.tabifiedDockWidgets(tree)  # tabs beside each other, not side by side
    assert not review.isFloating() and not tree.isFloating()
    assert window.dockWidgetArea(window.part(WorkspaceDock).dock) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(window.part(ChatDock).dock) == Qt.DockWidgetArea.RightDockWidgetArea
    # The bottom area takes about 35-40 % of the height once the deferred resize has landed.
    qtbot.waitUntil(lambda: 0.3 <= (window.height() - window.centre.height()) / window.height() <= 0.55)
    assert 0.3 * window.height() <= tree.height() <= 0.42 * window.height()
    assert window.centre.width() >= 0.45 * window.width()
    assert window.part(ChatDock).dock.width() < 0.35 * window.width()
    assert workspace_rows(window) >= 8


def test_the_default_layout_leaves_the_code_viewer_room(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    window = make_window(git_workspace, start=False)
    window.docks["workspace"].start()  # lists the workspace (the backend is not needed here)
    qtbot.waitExposed(window)
    assert (window.width(), window.height()) == (1280, 800)
    qtbot.waitUntil(lambda: window.part(WorkspaceDock).panel.tree.model().rowCount() > 0)
    open_review_and_tree(qtbot, window)
    assert_default_layout(qtbot, window)


def test_reset_layout_restores_the_default_and_forgets_the_saved_one(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    window = make_window(git_workspace, start=False)
    window.docks["workspace"].start()
    qtbot.waitExposed(window)
    qtbot.waitUntil(lambda: window.part(WorkspaceDock).panel.tree.model().rowCount() > 0)
    open_review_and_tree(qtbot, window)
    review, tree = bottom_docks(window)
    # The user rearranges: chat to the left, the tree floating, the review to the right, a wide chat.
    window.removeDockWidget(window.part(ChatDock).dock)
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, window.part(ChatDock).dock)
    window.part(ChatDock).dock.show()
    tree.setFloating(True)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, review)
    window.resizeDocks([window.part(ChatDock).dock], [700], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: window.centre.width() < 0.45 * window.width())
    window.dock_layout.save()
    assert QSettings().contains(STATE_KEY)

    reset = next(a for a in window.menuBar().actions()[1].menu().actions() if a.text() == "&Reset Layout")
    reset.trigger()

    assert not QSettings().contains(STATE_KEY)
    assert_default_layout(qtbot, window)
    assert window.part(ChatDock).dock.isVisible() and window.part(WorkspaceDock).dock.isVisible()
