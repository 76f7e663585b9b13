"""ide.app.theme: the window's look is applied once; applying it again re-polishes nothing, and anything
that took part of it away gets it back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel

from ide.app.review.part import ReviewDock
from ide.app.start.part import StartPart
from ide.app.theme import COLOURS, STYLESHEET, apply_theme, themed
from ide.app.window import MainWindow
from tests.support.window import close_window


class StyleEvents(QObject):
    """Counts the style and palette changes a widget is told of."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange):
            self.seen += 1
        return False


def test_applying_the_theme_again_changes_nothing_and_a_lost_part_comes_back(
    qapp: QApplication, qtbot: Any
) -> None:
    apply_theme(qapp)
    assert themed(qapp)
    label = QLabel("x")
    qtbot.addWidget(label)
    label.show()
    events = StyleEvents()
    label.installEventFilter(events)

    apply_theme(qapp)
    qapp.processEvents()
    assert events.seen == 0

    qapp.setStyleSheet("")
    assert not themed(qapp)
    apply_theme(qapp)
    assert qapp.styleSheet() == STYLESHEET and themed(qapp)

    palette = qapp.palette()
    palette.setColor(QPalette.ColorRole.Base, QColor("#000000"))
    qapp.setPalette(palette)
    assert not themed(qapp)
    apply_theme(qapp)
    assert all(qapp.palette().color(role) == QColor(colour) for role, colour in COLOURS.items())
    assert qapp.style().metaObject().className() == "QStyleSheetStyle"


@pytest.mark.window
def test_the_stylesheet_set_once_the_window_is_built_shows_the_same_first_frame(
    qapp: QApplication, qtbot: Any, qloop: asyncio.AbstractEventLoop, qsettings_dir: Path, git_workspace: Path
) -> None:
    """``run_gui`` builds the window before the stylesheet is on (a fifth of the first frame's CPU went to
    restyling subtrees as they were put into their parents): the frame is pixel for pixel the one a window
    built under the stylesheet paints."""
    qapp.setStyleSheet("")
    built_first = MainWindow(git_workspace)  # as run_gui builds it: Fusion and the colours, no stylesheet
    apply_theme(qapp)
    assert themed(qapp)
    built_under = MainWindow(git_workspace)  # as before: the whole theme on first
    windows = (built_first, built_under)
    try:
        for window in windows:
            window.resize(1280, 800)
            with qtbot.waitSignal(window.firstPainted):
                window.show()
        frames = [window.grab().toImage() for window in windows]
        assert frames[0].size() == frames[1].size()
        assert frames[0] == frames[1]
        # The banner across the top, as wide as the window either way (its toolbar has no margins).
        for window in windows:
            window.banner.show_notice("The index is out of date.", "Reindex")
            qtbot.waitUntil(lambda window=window: window.banner.width() == window.width())
        assert windows[0].grab().toImage() == windows[1].grab().toImage()
        # The rules that were widget stylesheets, now the application's, still apply.
        page = built_first.part(StartPart).page
        assert page.fix.font().bold() and not page.model_label.font().bold()
        review = built_first.part(ReviewDock).pane
        review.set_identity_warning("git has no user.name")
        qtbot.waitUntil(review.identity_label.isVisible)
        warning = review.identity_label.grab().toImage()
        assert warning.pixelColor(2, warning.height() // 2) == QColor("#fff7e6")
    finally:
        for window in windows:
            close_window(qtbot, window)
