"""The tree dock's controls: the toolbar above the tree and the replay timeline below it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QSlider,
    QToolButton,
    QWidget,
)

from ide.protocol.tree import TREE_FILE_SUFFIX

EXPORT_FILTERS = {
    "png": "PNG image (*.png)",
    "svg": "SVG image (*.svg)",
    "jsonl": f"Tree (*{TREE_FILE_SUFFIX})",
}
"""File dialog filters of the export kinds."""


TOOLBAR_SPACING = 2
"""As the dock's column lays out its rows (a layout of its own would take the style's wider default)."""


class TreeToolbar(QWidget):
    """The run chooser (the session's runs as one tree of attempts), Fit, Whole tree, the direction, Hide
    pruned, Legend, Overview and Export, and the shown run's summary."""

    exportRequested = Signal(str, Path)
    """The user chose where to export the tree: the kind (``png``, ``svg``, ``jsonl``) and the path."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run_combo = QComboBox()
        self.run_combo.setMinimumContentsLength(24)
        # As wide as 24 characters whatever the titles: a continued run's says where it came from (the
        # list itself is as wide as its longest title).
        self.run_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Fit the tree to the view, as small as still readable (then scroll)")
        self.whole_button = QToolButton()
        self.whole_button.setText("Whole tree")
        self.whole_button.setToolTip("Show the whole tree, however small; hover a node to read it")
        self.direction_combo = QComboBox()
        self.direction_combo.setToolTip("Layout direction: chosen to fit the view, or fixed")
        for text, data in (("Auto", "auto"), ("Left to right", "lr"), ("Top down", "td")):
            self.direction_combo.addItem(text, data)
        self.hide_pruned_box = QCheckBox("Hide pruned")
        self.overview_button = QToolButton()
        self.overview_button.setText("Overview")
        self.overview_button.setCheckable(True)
        self.overview_button.setChecked(True)
        self.overview_button.setToolTip("Show a map of the whole tree when it does not fit the view")
        self.legend_button = QToolButton()
        self.legend_button.setText("Legend")
        self.legend_button.setCheckable(True)
        self.legend_button.setChecked(True)
        self.legend_button.setToolTip("Show what colours, shapes and outlines mean, beside the tree")
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        menu.addAction("PNG image…", lambda: self._export_dialog("png"))
        menu.addAction("SVG image…", lambda: self._export_dialog("svg"))
        menu.addAction("Events (.arbor-tree.jsonl)…", lambda: self._export_dialog("jsonl"))
        self.export_button.setMenu(menu)
        self.summary = QLabel()
        self.summary.setObjectName("mutedLabel")
        bar = QHBoxLayout(self)
        bar.setContentsMargins(6, 4, 6, 0)
        bar.setSpacing(TOOLBAR_SPACING)
        bar.addWidget(self.run_combo)
        bar.addWidget(self.fit_button)
        bar.addWidget(self.whole_button)
        bar.addWidget(self.direction_combo)
        bar.addWidget(self.hide_pruned_box)
        bar.addWidget(self.legend_button)
        bar.addWidget(self.overview_button)
        bar.addWidget(self.export_button)
        bar.addWidget(self.summary, 1)

    def list_runs(self, rows: list[tuple[str, int, str]], current: str | None) -> None:
        """List the runs, (key, depth, title) each, in order — a continued run under its origin, one step
        in — with ``current`` chosen; no signal is sent."""
        combo = self.run_combo
        combo.blockSignals(True)
        combo.clear()
        for key, depth, title in rows:
            combo.addItem(title, key)
            combo.setItemData(combo.count() - 1, title if depth else key, Qt.ItemDataRole.ToolTipRole)
        combo.setCurrentIndex(combo.findData(current) if current is not None else -1)
        combo.blockSignals(False)

    def _export_dialog(self, kind: str) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export search tree", "", EXPORT_FILTERS[kind])
        if path:
            self.exportRequested.emit(kind, Path(path))


class ReplayTimeline(QWidget):
    """A slider over a run's events (all of them: follow it live) and the step it shows."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("treeTimeline")
        self.slider.setRange(0, 0)
        self.slider.setPageStep(10)
        self.step_label = QLabel("0 / 0")
        self.step_label.setObjectName("mutedLabel")
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 0, 6, 4)
        row.setSpacing(TOOLBAR_SPACING)
        row.addWidget(QLabel("Replay"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.step_label)

    def show_step(self) -> None:
        """Say which step of how many the slider is at."""
        self.step_label.setText(f"{self.slider.value()} / {self.slider.maximum()}")
