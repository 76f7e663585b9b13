"""The chat's config option selectors: one per option an agent lets its client set (``configOptions``),
beside the mode and workflow boxes — a combo box for a select option (grouped values flattened, each named
with its group), a checkbox for a boolean one, labelled by the option's name, its description the tooltip.

The bar shows what the agent last said; a change is offered as :attr:`OptionsBar.optionChosen` and the bar
redraws only when the agent's options come back (an update, the set's answer, or the old ones on refusal).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QSizePolicy, QWidget

from ide.app.widgets.flow_layout import FlowLayout

ARBOR_OWN = frozenset({"mode", "workflow"})
"""Arbor's options the chat's mode and workflow boxes already show."""


def select_values(option: Any) -> list[tuple[str, str, str]]:
    """A select option's values as (value id, label, description), groups flattened ("Group: name")."""
    values: list[tuple[str, str, str]] = []
    for item in option.options:
        if hasattr(item, "group"):  # a SessionConfigSelectGroup
            values += [(v.value, f"{item.name}: {v.name}", v.description or "") for v in item.options]
        else:
            values.append((item.value, item.name, item.description or ""))
    return values


class OptionsBar(QWidget):
    """The selectors of the session's config options; ``hidden`` ids are left to other boxes."""

    optionChosen = Signal(str, object)
    """The user set option ``id`` to a value (a value id for a select, a bool for a boolean)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("configOptions")
        self._row = FlowLayout(self, spacing=6)  # a row of its own above the buttons, wrapping when narrow
        self._row.setContentsMargins(0, 0, 0, 0)
        self.selectors: dict[str, QComboBox | QCheckBox] = {}
        """The shown selectors by option id, in the agent's order."""
        self.setVisible(False)

    def show_options(self, options: tuple[Any, ...], hidden: frozenset[str] = frozenset()) -> None:
        """Redraw the selectors from the agent's ``options`` (the SDK's objects), leaving out ``hidden``."""
        for selector in self.selectors.values():
            self._row.removeWidget(selector)
            selector.deleteLater()
        self.selectors = {}
        for option in options:
            if option.id in hidden:
                continue
            selector = self._checkbox(option) if option.type == "boolean" else self._combo(option)
            selector.setToolTip(option.description or option.name)
            selector.setObjectName(f"configOption:{option.id}")
            self._row.addWidget(selector)
            self.selectors[option.id] = selector
        self.setVisible(bool(self.selectors))

    def _combo(self, option: Any) -> QComboBox:
        box = QComboBox()
        box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        box.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        for value, label, description in select_values(option):
            box.addItem(f"{option.name}: {label}", value)
            box.setItemData(box.count() - 1, description or label, Qt.ItemDataRole.ToolTipRole)
        box.setCurrentIndex(max(box.findData(option.current_value), 0))
        option_id, current = option.id, option.current_value

        def chosen(index: int) -> None:
            value = box.itemData(index)
            if isinstance(value, str) and value != current:
                self.optionChosen.emit(option_id, value)

        box.activated.connect(chosen)
        return box

    def _checkbox(self, option: Any) -> QCheckBox:
        box = QCheckBox(option.name)
        box.setChecked(bool(option.current_value))
        option_id = option.id
        box.clicked.connect(lambda checked: self.optionChosen.emit(option_id, bool(checked)))
        return box
