"""Window geometry and dock layout survive closing the window and opening a new one."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.app.support import WindowFactory, close_window

pytestmark = pytest.mark.window


def test_geometry_and_docks_persist_across_windows(
    qtbot, make_window: WindowFactory, git_workspace: Path, qsettings_dir: Path
):
    first = make_window(git_workspace, start=False)
    first.resize(720, 520)  # inside the offscreen screen (800x600): restore clamps to it
    first.removeDockWidget(first.chat_dock)
    first.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, first.chat_dock)
    first.chat_dock.show()
    first.workspace_dock.hide()
    qtbot.waitUntil(lambda: first.size().width() == 720)
    close_window(qtbot, first)

    assert Path(QSettings().fileName()).is_relative_to(qsettings_dir)  # never the user's real settings

    second = make_window(git_workspace, start=False)
    qtbot.waitExposed(second)
    assert (second.width(), second.height()) == (720, 520)
    assert second.dockWidgetArea(second.chat_dock) == Qt.DockWidgetArea.BottomDockWidgetArea
    assert second.workspace_dock.isHidden()
    assert not second.chat_dock.isHidden()


def test_a_fresh_profile_gets_the_default_layout(qtbot, make_window: WindowFactory, git_workspace: Path):
    window = make_window(git_workspace, start=False)
    qtbot.waitExposed(window)
    assert (window.width(), window.height()) == (1280, 800)
    assert window.dockWidgetArea(window.workspace_dock) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(window.chat_dock) == Qt.DockWidgetArea.RightDockWidgetArea
    qtbot.waitUntil(lambda: window.chat_dock.width() > window.workspace_dock.width())
