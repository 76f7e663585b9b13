"""ide.app.theme: the window's look is applied once; applying it again re-polishes nothing, and anything
that took part of it away gets it back."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLabel

from ide.app.theme import COLOURS, STYLESHEET, apply_theme, themed


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
