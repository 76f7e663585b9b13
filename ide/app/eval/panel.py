"""The Eval dock's panel: an ``arbor eval`` report's model and budgets, the summary per mode (and per other
agent) against the retry baseline, a chart, every run and the selected run's details — another agent's
diff and transcript (:mod:`ide.app.eval.part` opens the report files and wires it)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ide.app.eval.chart import EvalChart
from ide.app.eval.details import RunDetails
from ide.app.eval.format import STATUS_TEXT, agent_of, header_text, mode_label, plain_tip, unfinished_text
from ide.app.eval.grid import MARKS_LEGEND, TaskGrid
from ide.app.eval.table import RunsTable, SummaryTable
from ide.protocol.eval import EvalReport, EvalRun, is_agent_mode

EMPTY = "No report open. Run arbor eval --out DIR, then Open Report… on DIR or DIR/report.json."
UNFINISHED_STYLE = (
    "color: #7b4a0b; background: #fff7e6; border: 1px solid #f0d49c; border-radius: 3px; padding: 4px 6px;"
)
LEGEND = (
    "retry (the baseline) is ReAct run again in a fresh session until solved or out of the token budget; "
    "vs retry is the tokens a mode spent on the tasks both ran ÷ the baseline's. Headers' tooltips say more."
)
AGENT_LEGEND = (
    " (agent) rows are other agents run on the same tasks (arbor eval --agent); their tokens are counted "
    "by Arbor's metering proxy, or not counted when their command did not name the model server."
)
NOTE_STYLE = "color: #5f6570; padding: 2px 0;"
ERROR_STYLE = (
    "color: #7a1c1c; background: #fdecec; border: 1px solid #efcccc; border-radius: 3px; padding: 4px 6px;"
)


class EvalPanel(QWidget):
    """What the dock shows. Interface: :meth:`show_report`, :meth:`show_error`, :meth:`clear`; signals
    :attr:`openRequested` (Open Report…) and :attr:`treeRequested` (a run's tree to open)."""

    openRequested = Signal()
    treeRequested = Signal(object)
    """The EvalRun whose tree to open (double-click, Enter, or Open Tree)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("evalPanel")
        self.open_button = QPushButton("Open Report…")
        self.open_button.setToolTip("Open report.json, or the directory arbor eval --out wrote it to")
        self.open_button.clicked.connect(self.openRequested)
        self.path_label = QLabel()
        self.path_label.setObjectName("mutedLabel")
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.header = QLabel()
        self.header.setObjectName("evalHeader")
        self.header.setWordWrap(True)
        self.unfinished = QLabel()
        self.unfinished.setObjectName("evalUnfinished")
        self.unfinished.setStyleSheet(UNFINISHED_STYLE)
        self.unfinished.setWordWrap(True)
        self.message = QLabel(EMPTY)
        self.message.setObjectName("evalMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.summary = SummaryTable()
        legend = QLabel(LEGEND)
        self.legend = legend
        legend.setWordWrap(True)
        legend.setStyleSheet(NOTE_STYLE)
        self.chart = EvalChart()
        self.table_split = QSplitter(Qt.Orientation.Horizontal)
        self.table_split.addWidget(self.summary)
        self.table_split.addWidget(self.chart)
        self.table_split.setStretchFactor(0, 0)
        self.table_split.setStretchFactor(1, 1)
        self.table_split.setChildrenCollapsible(False)
        # Small minimums, so the dock is no taller or wider than it was before the grid and run details:
        # a bottom dock keeps its height when this tab appears (the rest scrolls).
        self.chart.setMinimumHeight(110)
        self.grid = TaskGrid()
        self.grid.setMinimumHeight(36)
        grid_title = QLabel(f"By task ({MARKS_LEGEND}) — double-click a cell for its runs, an agent's diff")
        grid_title.setStyleSheet(NOTE_STYLE)
        grid_title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        grid_box = QWidget()
        grid_layout = QVBoxLayout(grid_box)
        grid_layout.setContentsMargins(0, 4, 0, 0)
        grid_layout.setSpacing(2)
        grid_layout.addWidget(grid_title)
        grid_layout.addWidget(self.grid, 1)
        self.summary_split = QSplitter(Qt.Orientation.Vertical)
        self.summary_split.addWidget(self.table_split)
        self.summary_split.addWidget(grid_box)
        self.grid_box = grid_box
        # Room past the hints goes to the grid, up to all its rows; then to the summary and chart.
        self.summary_split.setStretchFactor(0, 0)
        self.summary_split.setStretchFactor(1, 1)
        self.summary_split.setCollapsible(0, False)  # the grid folds away in a short dock, the summary never
        self.summary_page = QWidget()
        summary_layout = QVBoxLayout(self.summary_page)
        summary_layout.setContentsMargins(0, 0, 0, 0)
        summary_layout.setSpacing(2)
        summary_layout.addWidget(self.summary_split, 1)
        summary_layout.addWidget(legend)

        self.runs = RunsTable()
        self.mode_filter = QComboBox()
        self.mode_filter.setObjectName("evalModeFilter")
        self.mode_filter.setToolTip("Show the runs of one mode")
        self.status_filter = QComboBox()
        self.status_filter.setObjectName("evalStatusFilter")
        self.status_filter.addItem("all statuses", "")
        for status, text in STATUS_TEXT.items():
            self.status_filter.addItem(text, status)
        self.task_filter = QLineEdit()
        self.task_filter.setPlaceholderText("Filter tasks…")
        self.task_filter.setClearButtonEnabled(True)
        self.shown = QLabel()
        self.shown.setObjectName("mutedLabel")
        self.tree_button = QPushButton("Open Tree")
        self.tree_button.setToolTip("Show the selected run's search tree in the Search tree dock")
        self.tree_button.setEnabled(False)
        filters = QHBoxLayout()
        filters.addWidget(self.mode_filter)
        filters.addWidget(self.status_filter)
        filters.addWidget(self.task_filter, 1)
        filters.addWidget(self.shown)
        filters.addWidget(self.tree_button)
        self.details = RunDetails()
        self.details.setMinimumSize(200, 120)
        self.runs_split = QSplitter(Qt.Orientation.Horizontal)
        self.runs_split.addWidget(self.runs)
        self.runs_split.addWidget(self.details)
        self.runs_split.setStretchFactor(0, 3)
        self.runs_split.setStretchFactor(1, 2)
        self.runs_split.setChildrenCollapsible(False)
        runs_page = QWidget()
        runs_layout = QVBoxLayout(runs_page)
        runs_layout.setContentsMargins(0, 4, 0, 0)
        runs_layout.addLayout(filters)
        runs_layout.addWidget(self.runs_split, 1)
        self.runs_page = runs_page

        for label in (self.path_label, self.header, self.unfinished, self.message, legend, grid_title):
            label.setTextFormat(Qt.TextFormat.PlainText)  # report strings are input, never markup
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.summary_page, "Summary")
        self.tabs.addTab(runs_page, "Runs")

        top = QHBoxLayout()
        top.addWidget(self.open_button)
        top.addWidget(self.path_label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.header)
        layout.addWidget(self.unfinished)
        layout.addWidget(self.message)
        layout.addWidget(self.tabs, 1)
        layout.addStretch(0)  # takes the room only while there is no report (see _show_tabs)
        self._layout = layout

        self.report: EvalReport | None = None
        self.folder: Path | None = None
        """The report's folder: the runs' files are relative to it."""
        self._auto_fit = False
        """Whether the summary's splitters follow the panel's size (:meth:`fit_summary`): from a report's
        opening until the user moves one."""
        for splitter in (self.table_split, self.summary_split):
            splitter.splitterMoved.connect(self._user_split)
        self.grid.cellRequested.connect(self.show_run)
        self.summary.cellDoubleClicked.connect(lambda row, _col: self.show_runs_of(self.summary.mode_at(row)))
        self.mode_filter.currentIndexChanged.connect(lambda _i: self._filter())
        self.status_filter.currentIndexChanged.connect(lambda _i: self._filter())
        self.task_filter.textChanged.connect(lambda _t: self._filter())
        self.runs.runActivated.connect(self._run_activated)
        self.runs.selectionModel().selectionChanged.connect(lambda *_: self._selection_changed())
        self.tree_button.clicked.connect(self._open_selected_tree)
        self.clear()

    def clear(self, message: str = EMPTY, *, error: bool = False) -> None:
        """No report: the message (an error in red) and nothing else."""
        self.report = None
        self.folder = None
        self.path_label.clear()
        self.header.hide()
        self.unfinished.hide()
        self._show_tabs(False)
        self.summary.set_summary([])
        self.chart.set_summary([])
        self.grid.setRowCount(0)
        self.grid.setColumnCount(0)
        self.runs.set_runs([])
        self.show_message(message, error=error)

    def _show_tabs(self, shown: bool) -> None:
        self.tabs.setVisible(shown)
        self._layout.setStretch(self._layout.count() - 1, 0 if shown else 1)

    def show_message(self, text: str, *, error: bool = False) -> None:
        """A line above the tables (empty hides it); ``error`` styles it as a fault."""
        self.message.setText(text)
        self.message.setStyleSheet(ERROR_STYLE if error else NOTE_STYLE)
        self.message.setVisible(bool(text))

    def show_error(self, text: str) -> None:
        self.show_message(text, error=True)

    def show_report(self, report: EvalReport, source: Path) -> None:
        """Show ``report`` read from ``source``; filters and the selected run stay as they were, and so do
        the splitters, but for a report just opened (its table and grid given their room)."""
        opened = self.report is None or self.folder != source.parent
        self.report = report
        self.path_label.setText(str(source))
        self.path_label.setToolTip(plain_tip(str(source)))
        self.header.setText(header_text(report))
        self.header.show()
        note = unfinished_text(report)
        self.unfinished.setText(note or "")
        self.unfinished.setVisible(note is not None)
        self.show_message("")
        self._show_tabs(True)
        self.folder = source.parent
        self.summary.set_summary(report.summary, report.agents)
        self.chart.set_summary(report.summary, report.agents)
        self.legend.setText(LEGEND + (AGENT_LEGEND if report.agents else ""))
        self.grid.set_report(report)
        self._set_modes(report)
        self.runs.set_runs(report.runs, report.agents)
        self._filter()
        if opened:
            self._auto_fit = True
            QTimer.singleShot(0, self.fit_summary)  # once the tables have sized their columns

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._auto_fit and self.report is not None:  # until the user moves a splitter
            QTimer.singleShot(0, self.fit_summary)

    def _user_split(self, _position: int, _index: int) -> None:
        self._auto_fit = False

    def fit_summary(self) -> None:
        """The summary table at its whole width beside the chart, the summary and chart as tall as the
        table's rows (the chart's least at least) and the task grid the rest, up to all its rows — folded
        away under its handle when the rest would not show two of them. Splitters keep their sizes across
        reports otherwise: this runs for a report just opened, and as the panel is resized until the user
        moves a splitter."""
        width = sum(self.table_split.sizes())
        if width > 0:
            table = min(self.summary.sizeHint().width(), width - self.chart.minimumWidth())
            self.table_split.setSizes([table, width - table])
        self.grid.fit()
        height = sum(self.summary_split.sizes())
        if height > 0:
            top = max(self.summary.rows_height(), self.chart.minimumHeight())
            title = self.grid_box.sizeHint().height() - self.grid.sizeHint().height()
            whole = title + self.grid.full_height()
            grid = min(whole, height - top)
            rows = self.grid.rowHeight(0) if self.grid.rowCount() else 0
            if grid < min(whole, whole - self.grid.verticalHeader().length() + 2 * rows):
                grid = 0  # no room for the grid to say anything: the summary and chart keep it all
            self.summary_split.setSizes([height - grid, grid])

    def _set_modes(self, report: EvalReport) -> None:
        current = self.mode_filter.currentData() or ""
        modes = list(dict.fromkeys([*report.modes, *(run.mode for run in report.runs)]))
        self.mode_filter.blockSignals(True)
        self.mode_filter.clear()
        self.mode_filter.addItem("all modes", "")
        for mode in modes:
            self.mode_filter.addItem(mode_label(mode), mode)
        self.mode_filter.setCurrentIndex(max(0, self.mode_filter.findData(current)))
        self.mode_filter.blockSignals(False)

    def set_filter(self, mode: str = "", status: str = "", task: str = "") -> None:
        """Choose the filters as the combo boxes and the text field would."""
        self.mode_filter.setCurrentIndex(max(0, self.mode_filter.findData(mode)))
        self.status_filter.setCurrentIndex(max(0, self.status_filter.findData(status)))
        self.task_filter.setText(task)

    def _filter(self) -> None:
        mode, status = self.mode_filter.currentData() or "", self.status_filter.currentData() or ""
        self.runs.set_filter(mode, status, self.task_filter.text())
        total = len(self.report.runs) if self.report is not None else 0
        self.shown.setText(f"{self.runs.filter.rowCount()} of {total} runs")
        self._selection_changed()

    def show_runs_of(self, mode: str) -> None:
        """The Runs tab showing ``mode``'s runs only (a summary row double-clicked)."""
        self.set_filter(mode=mode)
        self.tabs.setCurrentWidget(self.runs_page)

    def show_run(self, task: str, mode: str) -> None:
        """The Runs tab showing ``task``'s runs in ``mode``, the first selected with its details (a cell of
        the task grid double-clicked)."""
        self.set_filter(mode=mode)
        self.tabs.setCurrentWidget(self.runs_page)
        for run in self.runs.shown_runs():
            if run.task == task:
                self.runs.select_run(run.key)
                break

    def _selection_changed(self) -> None:
        run = self.runs.selected_run()
        self.tree_button.setEnabled(run is not None and not _agent_without_tree(run))
        if run != self.details.run or run is None:
            agent = agent_of(self.report, run.mode) if run is not None else None
            self.details.show_run(run, self.folder, agent)

    def _run_activated(self, run: EvalRun) -> None:
        """Double-click or Enter: a run's tree, or for another agent's run (it has none) its details."""
        if _agent_without_tree(run):
            self.details.tabs.currentWidget().setFocus()
        else:
            self.treeRequested.emit(run)

    def _open_selected_tree(self) -> None:
        run = self.runs.selected_run()
        if run is not None:
            self.treeRequested.emit(run)


def _agent_without_tree(run: EvalRun) -> bool:
    return is_agent_mode(run.mode) and run.tree_file is None
