"""The Eval dock's two tables: the summary (one row per mode) and the runs (one row per task × mode ×
attempt, sortable by any column and filtered by mode, status and task)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPixmap, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QTableWidget, QTableWidgetItem

from ide.app.eval.format import (
    NONE,
    agent_tip,
    baseline_of,
    cost_vs_baseline,
    mode_label,
    plain_tip,
    rate_text,
    reason_line,
    run_status,
    run_tokens,
    seconds_text,
    summary_tokens,
    unmetered_tip,
)
from ide.app.eval.palette import MUTED_TEXT, mode_colour
from ide.protocol.eval import RETRY_MODE, EvalAgent, EvalRun, ModeSummary, is_agent_mode

SUMMARY_COLUMNS = (
    (
        "mode",
        "The agent architecture; retry is ReAct retried up to the same token budget; (agent) marks another "
        "agent run on the same tasks (arbor eval --agent)",
    ),
    ("runs", "Runs finished in this mode"),
    ("solved", "Runs whose check passed"),
    ("solve rate (95% CI)", "Solved ÷ runs, with its 95% Wilson interval"),
    ("med. tokens", "Median of the tokens (in + out) each run spent"),
    ("med. time", "Median wall time of a run"),
    ("tokens/solved", "All tokens the mode spent ÷ tasks it solved"),
    (
        "vs retry",
        "Cost: the tokens this mode spent on the tasks both it and the retry baseline ran ÷ the baseline's",
    ),
)
RUN_COLUMNS = ("task", "mode", "#", "status", "tokens", "time", "nodes", "reason")
RUN_ROLE = Qt.ItemDataRole.UserRole + 1
"""The EvalRun of a row (on its first cell)."""
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
"""What a cell sorts by: numbers as numbers."""
STATUS_COLOURS = {
    "solved": QColor("#2f7d3b"),
    "failed": QColor("#b42318"),
    "over_budget": QColor("#a15c07"),
    "timeout": QColor("#a15c07"),
    "error": QColor("#7a2e8a"),
}
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
MODE_ROLE = Qt.ItemDataRole.UserRole + 3
"""The mode of a summary row (on its first cell)."""


def swatch(mode: str, size: int = 10) -> QIcon:
    """A small square in the mode's colour (the chart's), marking its rows as the chart's legend."""
    pixmap = QPixmap(size, size)
    pixmap.fill(mode_colour(mode))
    return QIcon(pixmap)


class SummaryTable(QTableWidget):
    """One row per mode of the report's summary, in its order. Interface: :meth:`set_summary`,
    :meth:`cell_text`."""

    def __init__(self) -> None:
        super().__init__(0, len(SUMMARY_COLUMNS))
        self.setObjectName("evalSummary")
        self.setHorizontalHeaderLabels([name for name, _tip in SUMMARY_COLUMNS])
        for column, (_name, tip) in enumerate(SUMMARY_COLUMNS):
            self.horizontalHeaderItem(column).setToolTip(tip)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setWordWrap(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

    def sizeHint(self) -> QSize:
        """Wide enough for every column, so the chart beside it takes only the rest."""
        hint = super().sizeHint()
        frame = 2 * self.frameWidth()
        rows = self.horizontalHeader().height() + self.verticalHeader().length()
        return QSize(self.horizontalHeader().length() + frame + 2, max(hint.height(), rows + frame))

    def rows_height(self) -> int:
        """Its height with its header and every row shown, and no more."""
        header = self.horizontalHeader()
        rows = max(header.height(), header.sizeHint().height()) + self.verticalHeader().length()
        return rows + 2 * self.frameWidth() + 2

    def set_summary(self, summary: list[ModeSummary], agents: list[EvalAgent] | None = None) -> None:
        """One row per mode; ``agents`` (the report's) give another agent's row its command as tooltip."""
        baseline = baseline_of(summary)
        known = {agent.mode: agent for agent in agents or []}
        self.setRowCount(len(summary))
        for row, line in enumerate(summary):
            cost, cost_tip = cost_vs_baseline(line, baseline)
            cells = (
                mode_label(line.mode),
                str(line.runs),
                str(line.solved),
                rate_text(line),
                summary_tokens(line, line.median_tokens),
                seconds_text(line.median_wall_s) if line.runs else NONE,
                summary_tokens(line, line.tokens_per_solved) if line.runs else NONE,
                cost,
            )
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if column:
                    item.setTextAlignment(RIGHT)
                if line.mode == RETRY_MODE:
                    font = QFont(item.font())
                    font.setItalic(True)
                    item.setFont(font)
                self.setItem(row, column, item)
            self.item(row, 7).setToolTip(plain_tip(cost_tip))
            first = self.item(row, 0)
            first.setIcon(swatch(line.mode))
            first.setData(MODE_ROLE, line.mode)
            if is_agent_mode(line.mode):
                first.setToolTip(plain_tip(agent_tip(line.mode, known.get(line.mode))))
            if not line.metered:
                for column in (4, 6):
                    self.item(row, column).setToolTip(plain_tip(unmetered_tip(line.mode)))
                    self.item(row, column).setForeground(MUTED_TEXT)
            notes = []
            if line.over_budget:
                notes.append(f"{line.over_budget} over budget")
            if line.errors:
                notes.append(f"{line.errors} errors")
            if notes:
                self.item(row, 2).setToolTip(", ".join(notes))
        self.updateGeometry()

    def cell_text(self, row: int, column: int) -> str:
        item = self.item(row, column)
        return item.text() if item is not None else ""

    def mode_at(self, row: int) -> str:
        """The mode of summary row ``row``."""
        item = self.item(row, 0)
        return str(item.data(MODE_ROLE)) if item is not None else ""


class RunFilter(QSortFilterProxyModel):
    """Rows of one mode and one status (empty: any) whose task contains the filter text."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = ""
        self.status = ""
        self.task = ""
        self.setSortRole(SORT_ROLE)

    def set_filter(self, mode: str, status: str, task: str) -> None:
        self.beginFilterChange()
        self.mode, self.status, self.task = mode, status, task.strip().lower()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        run: EvalRun | None = self.sourceModel().index(source_row, 0, source_parent).data(RUN_ROLE)
        if run is None:
            return False
        return (
            (not self.mode or run.mode == self.mode)
            and (not self.status or run.status == self.status)
            and (not self.task or self.task in run.task.lower())
        )


class RunsTable(QTableView):
    """Every run of the report. Interface: :meth:`set_runs`, :meth:`set_filter`, :meth:`shown_runs`,
    :meth:`selected_run`; :attr:`runActivated` on double-click or Enter."""

    runActivated = Signal(object)
    """The EvalRun of the row double-clicked (or Enter)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("evalRuns")
        self.source = QStandardItemModel(0, len(RUN_COLUMNS))
        self.source.setHorizontalHeaderLabels(list(RUN_COLUMNS))
        self.filter = RunFilter()
        self.filter.setSourceModel(self.source)
        self.setModel(self.filter)
        self.setSortingEnabled(True)
        self.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.activated.connect(self._activated)
        self.agents: dict[str, EvalAgent] = {}

    def set_runs(self, runs: list[EvalRun], agents: list[EvalAgent] | None = None) -> None:
        """Show ``runs``; the selected run stays selected when it is still there (a reload)."""
        self.agents = {agent.mode: agent for agent in agents or []}
        selected = self.selected_run()
        scrolled = self.verticalScrollBar().value()
        self.source.removeRows(0, self.source.rowCount())
        for run in runs:
            self.source.appendRow(self._row(run))
        if self.source.rowCount():
            for column in range(len(RUN_COLUMNS) - 1):
                self.resizeColumnToContents(column)
        if selected is not None:
            self.select_run(selected.key)
        self.verticalScrollBar().setValue(scrolled)  # a reload leaves the view where the user had it

    def _row(self, run: EvalRun) -> list[QStandardItem]:
        agent = is_agent_mode(run.mode)
        tree = (NONE if agent else "no tree") if run.tree_file is None else str(run.tree_nodes)
        cells: list[tuple[str, object]] = [
            (run.task, run.task),
            (mode_label(run.mode), run.mode),
            (str(run.attempt), run.attempt),
            (run_status(run), run.status),
            (run_tokens(run), run.tokens if run.metered else -1),
            (seconds_text(run.wall_s), run.wall_s),
            (tree, -1 if run.tree_file is None else run.tree_nodes),
            (reason_line(run.reason) or NONE, run.reason),
        ]
        items = []
        for column, (text, key) in enumerate(cells):
            item = QStandardItem(text)
            item.setData(key, SORT_ROLE)
            if column in (2, 4, 5, 6):
                item.setTextAlignment(RIGHT)
            items.append(item)
        items[0].setData(run, RUN_ROLE)
        items[3].setForeground(STATUS_COLOURS.get(run.status, QColor("black")))
        items[1].setIcon(swatch(run.mode))
        if agent:
            items[1].setToolTip(plain_tip(agent_tip(run.mode, self.agents.get(run.mode))))
        if run.metered:
            items[4].setToolTip(
                f"{run.input_tokens} in, {run.output_tokens} out, {run.model_calls} model calls"
                + (f", {run.tries} sessions" if run.tries > 1 else "")
                + (f", {run.recovered_calls} tool calls recovered from text" if run.recovered_calls else "")
                + (f", {run.compactions} context compactions" if run.compactions else "")
            )
        else:
            items[4].setToolTip(plain_tip(unmetered_tip(run.mode)))
            items[4].setForeground(MUTED_TEXT)
        items[0].setToolTip(plain_tip(run.task))
        no_tree = "Another agent records no search tree: its diff and transcript are in the details"
        items[6].setToolTip(
            plain_tip(run.tree_file or (no_tree if agent else "This run recorded no search tree"))
        )
        if run.reason:
            items[7].setToolTip(plain_tip(run.reason[-2000:]))
        return items

    def set_filter(self, mode: str, status: str, task: str = "") -> None:
        self.filter.set_filter(mode, status, task)

    def run_at(self, row: int) -> EvalRun:
        """The run shown in ``row`` (after sorting and filtering)."""
        return self.filter.index(row, 0).data(RUN_ROLE)

    def shown_runs(self) -> list[EvalRun]:
        """The runs shown, top to bottom."""
        return [self.run_at(row) for row in range(self.filter.rowCount())]

    def cell_text(self, row: int, column: int) -> str:
        return str(self.filter.index(row, column).data(Qt.ItemDataRole.DisplayRole))

    def selected_run(self) -> EvalRun | None:
        rows = self.selectionModel().selectedRows()
        return rows[0].data(RUN_ROLE) if rows else None

    def select_run(self, key: tuple[str, str, int]) -> bool:
        """Select the run with ``key`` (task, mode, attempt) if it is shown."""
        for row in range(self.filter.rowCount()):
            if self.run_at(row).key == key:
                self.selectRow(row)
                return True
        return False

    def _activated(self, index: QModelIndex) -> None:
        run = self.filter.index(index.row(), 0).data(RUN_ROLE)
        if run is not None:
            self.runActivated.emit(run)
