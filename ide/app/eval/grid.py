"""The Eval dock's task grid: one row per task, one column per mode and other agent, each cell what that
task's run(s) in that mode came to — so Arbor's modes and the other agents read side by side, task by task.
A cell is tinted by its outcome; double-clicking it asks for its runs (:attr:`TaskGrid.cellRequested`)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableWidget, QTableWidgetItem

from ide.app.eval.format import (
    NONE,
    STATUS_TEXT,
    agent_of,
    agent_tip,
    plain_tip,
    reason_line,
    run_tokens,
    seconds_text,
    unmetered_tip,
)
from ide.app.eval.palette import AGENT_COLOUR, BASELINE_COLOUR
from ide.protocol.eval import RETRY_MODE, EvalReport, EvalRun, is_agent_mode
from ide.protocol.eval import mode_label as agent_name

CELL_TINTS = {
    "solved": QColor("#e6f4ea"),
    "failed": QColor("#fdecec"),
    "over_budget": QColor("#fff4e0"),
    "timeout": QColor("#fff4e0"),
    "error": QColor("#f3e8f6"),
}
MIXED_TINT = QColor("#f4f6e6")
KEY_ROLE = Qt.ItemDataRole.UserRole + 1
"""A cell's (task, mode)."""
CENTRE = Qt.AlignmentFlag.AlignCenter
HINT_ROWS = 6
GRID_MARKS = {"solved": "✓", "failed": "✗", "over_budget": "⊘", "timeout": "◷", "error": "⚠"}
"""A run's end in a cell, before its tokens (the title over the grid says which is which)."""
MARKS_LEGEND = "✓ solved · ✗ failed · ⊘ over budget · ◷ timeout · ⚠ error"


def column_name(mode: str) -> str:
    """A column's header: another agent by its name over ``(agent)``, the baseline marked."""
    if is_agent_mode(mode):
        return f"{agent_name(mode)}\n(agent)"
    return f"{mode}\n(baseline)" if mode == RETRY_MODE else mode


def cell_text(runs: list[EvalRun]) -> str:
    """One task × mode: ``✓ 2.38k`` for one run (how it ended and its tokens), ``2/3 ✓`` for several."""
    if not runs:
        return NONE
    if len(runs) == 1:
        run = runs[0]
        return f"{GRID_MARKS.get(run.status, '?')} {run_tokens(run)}"
    return f"{sum(run.solved for run in runs)}/{len(runs)} ✓"


def cell_tip(task: str, mode: str, runs: list[EvalRun]) -> str:
    """Each run of the cell: outcome, tokens, time and why it was not solved."""
    lines = [f"{task} · {agent_name(mode)}"]
    for run in sorted(runs, key=lambda r: r.attempt):
        status = STATUS_TEXT.get(run.status, run.status)
        said = f"attempt {run.attempt}: {status}, {run_tokens(run)} tokens, {seconds_text(run.wall_s)}"
        if run.reason:
            said += f" — {reason_line(run.reason)}"
        lines.append(said)
    if any(not run.metered for run in runs):
        lines.append(unmetered_tip(mode))
    if not runs:
        lines.append("no run yet")
    return "\n".join(lines)


class TaskGrid(QTableWidget):
    """Interface: :meth:`set_report`, :meth:`cell_text`, :meth:`key_at`; :attr:`cellRequested`."""

    cellRequested = Signal(str, str)
    """(task, mode) of the cell double-clicked or entered."""

    def __init__(self) -> None:
        super().__init__(0, 0)
        self.setObjectName("evalTaskGrid")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.verticalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)  # a matrix: even columns
        self.horizontalHeader().setMinimumSectionSize(90)
        self.cellActivated.connect(self._requested)
        self.cellDoubleClicked.connect(self._requested)

    def sizeHint(self) -> QSize:
        """As tall as its header and first :data:`HINT_ROWS` rows (the header's hint: it may not be laid
        out yet); it grows to all its rows (:meth:`full_height`) when there is room."""
        rows = min(self.rowCount(), HINT_ROWS) * self.verticalHeader().defaultSectionSize()
        return QSize(super().sizeHint().width(), min(self.full_height(), self._chrome() + rows))

    def full_height(self) -> int:
        """Its height with every row shown (and the horizontal scroll bar, when its columns do not fit)."""
        return self._chrome() + self.verticalHeader().length() + self._scroll_bar()

    def _scroll_bar(self) -> int:
        header = self.horizontalHeader()
        columns = self.verticalHeader().sizeHint().width() + self.columnCount() * header.minimumSectionSize()
        fits = columns + 2 * self.frameWidth() <= self.width()
        return 0 if fits else self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)

    def _chrome(self) -> int:
        header = self.horizontalHeader()
        return max(header.height(), header.sizeHint().height()) + 2 * self.frameWidth() + 2

    def fit(self) -> None:
        """No taller than its rows: the room left goes to the summary and chart above (again once laid
        out, when its header's height is known)."""
        self.setMaximumHeight(self.full_height())

    def set_report(self, report: EvalReport) -> None:
        """A row per task of ``report``, a column per mode in the summary's order (then any mode only the
        runs name)."""
        modes = list(dict.fromkeys([*(row.mode for row in report.summary), *report.modes]))
        modes += [mode for mode in dict.fromkeys(run.mode for run in report.runs) if mode not in modes]
        tasks = list(dict.fromkeys([*report.tasks, *(run.task for run in report.runs)]))
        runs: dict[tuple[str, str], list[EvalRun]] = {}
        for run in report.runs:
            runs.setdefault((run.task, run.mode), []).append(run)
        self.clear()
        self.setRowCount(len(tasks))
        self.setColumnCount(len(modes))
        for column, mode in enumerate(modes):
            header = QTableWidgetItem(column_name(mode))
            if is_agent_mode(mode):
                header.setForeground(AGENT_COLOUR.darker(130))
                header.setToolTip(plain_tip(agent_tip(mode, agent_of(report, mode))))
            elif mode == RETRY_MODE:
                header.setForeground(BASELINE_COLOUR.darker(130))
                header.setToolTip("The baseline: ReAct retried until solved or out of budget")
            self.setHorizontalHeaderItem(column, header)
        for row, task in enumerate(tasks):
            label = QTableWidgetItem(task)
            label.setToolTip(plain_tip(task))
            self.setVerticalHeaderItem(row, label)
            for column, mode in enumerate(modes):
                self.setItem(row, column, self._cell(task, mode, runs.get((task, mode), [])))
        self.resizeRowsToContents()
        self.fit()
        self.updateGeometry()

    @staticmethod
    def _cell(task: str, mode: str, runs: list[EvalRun]) -> QTableWidgetItem:
        item = QTableWidgetItem(cell_text(runs))
        item.setTextAlignment(CENTRE)
        item.setData(KEY_ROLE, (task, mode))
        item.setToolTip(plain_tip(cell_tip(task, mode, runs)))
        statuses = {run.status for run in runs}
        if len(statuses) == 1:
            item.setBackground(CELL_TINTS.get(next(iter(statuses)), QColor("white")))
        elif statuses:
            item.setBackground(MIXED_TINT)
        if any(not run.metered for run in runs):
            font = QFont(item.font())
            font.setItalic(True)
            item.setFont(font)
        return item

    def cell_text(self, row: int, column: int) -> str:
        item = self.item(row, column)
        return item.text() if item is not None else ""

    def key_at(self, row: int, column: int) -> tuple[str, str] | None:
        """The (task, mode) of a cell."""
        item = self.item(row, column)
        return tuple(item.data(KEY_ROLE)) if item is not None else None  # type: ignore[return-value]

    def _requested(self, row: int, column: int) -> None:
        key = self.key_at(row, column)
        if key is not None:
            self.cellRequested.emit(*key)
