"""A row of buttons that wraps (ide.app.widgets.flow_layout): one line when it fits, more lines when it does
not,
every button at its full width either way; an expanding item takes what its line leaves."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLineEdit, QPushButton, QSizePolicy, QWidget

from ide.app.widgets.flow_layout import FlowLayout


def row(qtbot: Any) -> tuple[QWidget, list[QPushButton], QLineEdit]:
    widget = QWidget()
    qtbot.addWidget(widget)
    layout = FlowLayout(widget, 2)
    layout.setContentsMargins(0, 0, 0, 0)
    buttons = [QPushButton(text) for text in ("Accept all", "Reject all", "Send feedback", "Apply")]
    box = QLineEdit()
    box.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    for item in (box, *buttons):
        layout.addWidget(item)
    return widget, buttons, box


def lay_out(widget: QWidget, width: int) -> None:
    height = widget.heightForWidth(width)
    widget.resize(width, height)
    widget.layout().setGeometry(widget.rect())


def test_one_line_when_it_fits_with_the_expanding_item_taking_the_rest(qtbot: Any) -> None:
    widget, buttons, box = row(qtbot)
    lay_out(widget, 1000)
    assert len({button.y() for button in [*buttons, box]}) == 1
    assert buttons[-1].geometry().right() == widget.width() - 1  # the row ends at the right edge
    assert box.width() > 1000 - sum(b.sizeHint().width() for b in buttons) - 20


def test_a_narrow_row_wraps_and_no_button_is_cut(qtbot: Any) -> None:
    widget, buttons, _box = row(qtbot)
    narrowest = widget.minimumSizeHint().width()
    assert narrowest <= max(b.sizeHint().width() for b in buttons) + 10
    for width in (narrowest, 200, 300):
        lay_out(widget, width)
        assert len({button.y() for button in buttons}) > 1
        for button in buttons:
            assert button.width() >= button.minimumSizeHint().width(), (width, button.text())
            assert widget.rect().contains(button.geometry()), (width, button.text())
