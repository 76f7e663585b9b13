"""Small widgets built the same way wherever they appear: selectable plain-text labels, flat tool buttons,
and a panel's column laid edge to edge."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

from ide.app.theme import mono_font


def plain_label(name: str, *, mono: bool = False) -> QLabel:
    """A wrapping label the user can select text in, showing its text as plain text: what it shows comes
    from the backend, an agent or a file, so markup in it must never load an image or a file."""
    label = QLabel()
    label.setObjectName(name)
    if mono:
        label.setFont(mono_font(-1))
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def flat_button(name: str, text: str, tooltip: str, clicked: Callable[[], object]) -> QToolButton:
    """A borderless tool button (raised under the pointer) that calls ``clicked``."""
    button = QToolButton()
    button.setObjectName(name)
    button.setText(text)
    button.setToolTip(tooltip)
    button.setAutoRaise(True)
    button.clicked.connect(clicked)
    return button


def edge_to_edge(widget: QWidget, spacing: int = 0) -> QVBoxLayout:
    """``widget``'s column layout, with no margin: what it holds meets the widget's edges."""
    layout = QVBoxLayout(widget)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(spacing)
    return layout
