"""The Eval dock's chart, drawn with QPainter: solve rate per mode with its 95% interval, and tokens spent
per solved task. Two panels side by side (stacked when the widget is narrow), one horizontal bar per mode
so mode names stay whole; the retry baseline is grey and its solve rate a dashed line across the first
panel, so each mode reads against it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QHelpEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ide.app.eval.format import NOT_COUNTED, agent_tip, percent, plain_tip, tokens_text, unmetered_tip
from ide.app.eval.palette import AGENT_COLOUR, BASELINE_COLOUR, mode_colour
from ide.protocol.eval import RETRY_MODE, EvalAgent, ModeSummary, is_agent_mode
from ide.protocol.eval import mode_label as agent_name

WHISKER_COLOUR = QColor("#1d2b4a")
GRID_COLOUR = QColor("#e3e6eb")
AXIS_TEXT = QColor("#5f6570")
TITLE_TEXT = QColor("#2c3038")
EMPTY_TEXT = QColor("#7a808a")
BACKGROUND = QColor("#ffffff")

SOLVE_PANEL = "solve_rate"
TOKENS_PANEL = "tokens_per_solved"
SIDE_BY_SIDE_MIN_WIDTH = 520
MAX_BAR_THICKNESS = 22
NO_RUNS = "no runs yet"
PAD = 8


@dataclass(frozen=True)
class Bar:
    """One drawn bar: its panel, mode, rectangle, value label and (solve rate only) interval whisker."""

    panel: str
    mode: str
    rect: QRectF
    label: str
    whisker: tuple[float, float] | None = None
    """The interval's left and right x (the whisker crosses the bar at its middle)."""


def chart_name(mode: str) -> str:
    """How the chart names a mode's bars: another agent by its name, marked."""
    return f"{agent_name(mode)} (agent)" if is_agent_mode(mode) else mode


def nice_step(top: float, ticks: int = 4) -> float:
    """A round axis step (1, 2, 2.5 or 5 × 10^k) giving about ``ticks`` steps up to ``top``."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


class EvalChart(QWidget):
    """Interface: :meth:`set_summary`; :meth:`bars` gives what :meth:`paintEvent` draws."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("evalChart")
        self.summary: list[ModeSummary] = []
        self.agents: dict[str, EvalAgent] = {}
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(260, 180)

    def sizeHint(self) -> QSize:
        return QSize(420, 260)  # the summary table beside it is given its whole width first

    def set_summary(self, summary: list[ModeSummary], agents: list[EvalAgent] | None = None) -> None:
        """Chart these rows (one bar per mode in each panel), in their order; ``agents`` (the report's)
        give another agent's bars their tooltip."""
        self.summary = list(summary)
        self.agents = {agent.mode: agent for agent in agents or []}
        self.setToolTip(self._tooltip())
        self.update()

    def panels(self) -> dict[str, QRectF]:
        """Each panel's whole rectangle (title, axes and bars) at the widget's current size."""
        area = QRectF(self.rect()).adjusted(PAD, PAD, -PAD, -PAD)
        if area.width() >= SIDE_BY_SIDE_MIN_WIDTH or area.width() >= area.height():
            half = (area.width() - 3 * PAD) / 2
            first = QRectF(area.left(), area.top(), half, area.height())
            second = QRectF(area.left() + half + 3 * PAD, area.top(), half, area.height())
        else:
            half = (area.height() - 2 * PAD) / 2
            first = QRectF(area.left(), area.top(), area.width(), half)
            second = QRectF(area.left(), area.top() + half + 2 * PAD, area.width(), half)
        return {SOLVE_PANEL: first, TOKENS_PANEL: second}

    def plot_area(self, panel: QRectF, value_labels: list[str]) -> QRectF:
        """Where the bars go inside ``panel``: below the title, right of the mode names, above the axis
        labels, with room on the right for the widest value label."""
        metrics = QFontMetrics(self.font())
        line = metrics.height()
        names = max((metrics.horizontalAdvance(chart_name(row.mode)) for row in self.summary), default=0) + 8
        values = max((metrics.horizontalAdvance(text) for text in value_labels), default=0) + 8
        return panel.adjusted(names, line + 8, -values, -(line + 4))

    def token_axis(self) -> tuple[float, float]:
        """The tokens panel's axis: (right end, step)."""
        values = [
            row.tokens_per_solved for row in self.summary if row.metered and row.tokens_per_solved is not None
        ]
        step = nice_step(max(values, default=0.0))
        top = step * max(1, math.ceil(max(values, default=0.0) / step))
        return top, step

    def bars(self) -> list[Bar]:
        """Every bar of both panels at the widget's current size."""
        if not self.summary:
            return []
        panels = self.panels()
        found: list[Bar] = []
        plot = self.plot_area(panels[SOLVE_PANEL], ["100%"])
        for index, row in enumerate(self.summary):
            slot = self._slot(plot, index)
            rect = QRectF(plot.left(), slot.top(), row.solve_rate * plot.width(), slot.height())
            if not row.runs:  # listed before its first run: nothing to draw yet
                found.append(Bar(SOLVE_PANEL, row.mode, rect, NO_RUNS))
                continue
            whisker = (plot.left() + row.ci_low * plot.width(), plot.left() + row.ci_high * plot.width())
            found.append(Bar(SOLVE_PANEL, row.mode, rect, percent(row.solve_rate), whisker))
        axis_end, _step = self.token_axis()
        labels = [self._token_label(row) for row in self.summary]
        plot = self.plot_area(panels[TOKENS_PANEL], labels)
        for index, row in enumerate(self.summary):
            slot = self._slot(plot, index)
            value = row.tokens_per_solved if row.metered else None
            length = 0.0 if value is None else value / axis_end * plot.width()
            rect = QRectF(plot.left(), slot.top(), length, slot.height())
            found.append(Bar(TOKENS_PANEL, row.mode, rect, labels[index]))
        return found

    @staticmethod
    def _token_label(row: ModeSummary) -> str:
        if not row.runs:
            return NO_RUNS
        if not row.metered:
            return NOT_COUNTED
        return "none solved" if row.tokens_per_solved is None else tokens_text(row.tokens_per_solved)

    def _slot(self, plot: QRectF, index: int) -> QRectF:
        height = plot.height() / max(1, len(self.summary))
        bar = min(MAX_BAR_THICKNESS, height * 0.62)
        return QRectF(plot.left(), plot.top() + index * height + (height - bar) / 2, plot.width(), bar)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), BACKGROUND)
        if not self.summary:
            painter.setPen(EMPTY_TEXT)
            painter.drawText(
                QRectF(self.rect()),
                Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                "No summary yet: arbor eval writes it as runs finish.",
            )
            painter.end()
            return
        panels = self.panels()
        bars = self.bars()
        self._draw_solve_panel(painter, panels[SOLVE_PANEL], [b for b in bars if b.panel == SOLVE_PANEL])
        self._draw_tokens_panel(painter, panels[TOKENS_PANEL], [b for b in bars if b.panel == TOKENS_PANEL])
        painter.end()

    def _title(self, painter: QPainter, panel: QRectF, text: str) -> None:
        font = QFont(self.font())
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(TITLE_TEXT)
        height = QFontMetrics(font).height()
        box = QRectF(panel.left(), panel.top(), panel.width(), height)
        painter.drawText(box, Qt.AlignmentFlag.AlignLeft, text)
        painter.setFont(self.font())

    def _axis(self, painter: QPainter, plot: QRectF, ticks: list[tuple[float, str]]) -> None:
        """Grid lines at each (fraction of the width, label), labels under the plot."""
        metrics = QFontMetrics(self.font())
        for fraction, text in ticks:
            x = plot.left() + fraction * plot.width()
            painter.setPen(QPen(GRID_COLOUR, 1))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
            painter.setPen(AXIS_TEXT)
            label = QRectF(x - 40, plot.bottom() + 3, 80, metrics.height())
            painter.drawText(label, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, text)

    def _mode_names(self, painter: QPainter, plot: QRectF, bars: list[Bar]) -> None:
        metrics = QFontMetrics(self.font())
        painter.setPen(TITLE_TEXT)
        for bar in bars:
            top = bar.rect.center().y() - metrics.height() / 2
            box = QRectF(plot.left() - 200, top, 194, metrics.height())
            painter.setPen(AGENT_COLOUR.darker(130) if is_agent_mode(bar.mode) else TITLE_TEXT)
            name = chart_name(bar.mode)
            painter.drawText(box, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, name)

    def _value_label(self, painter: QPainter, bar: Bar, after: float) -> None:
        metrics = QFontMetrics(self.font())
        box = QRectF(after + 4, bar.rect.center().y() - metrics.height() / 2, 200, metrics.height())
        painter.setPen(EMPTY_TEXT if bar.label == NOT_COUNTED else TITLE_TEXT)
        if bar.label == NOT_COUNTED:
            font = QFont(self.font())
            font.setItalic(True)
            painter.setFont(font)
        painter.drawText(box, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, bar.label)
        painter.setFont(self.font())

    def _draw_solve_panel(self, painter: QPainter, panel: QRectF, bars: list[Bar]) -> None:
        self._title(painter, panel, "Solve rate (95% interval)")
        plot = self.plot_area(panel, ["100%"])
        quarters = 1 if plot.width() / 4 >= 44 else 2  # every other tick when the labels would crowd
        self._axis(painter, plot, [(f / 4, f"{f * 25}%") for f in range(0, 5, quarters)])
        for bar in bars:
            if bar.rect.width() > 0:
                painter.fillRect(bar.rect, mode_colour(bar.mode))
            end = bar.rect.right()
            if bar.whisker is not None:
                low, high = bar.whisker
                y = bar.rect.center().y()
                cap = min(6.0, bar.rect.height() / 2)
                painter.setPen(QPen(WHISKER_COLOUR, 1.5))
                painter.drawLine(QPointF(low, y), QPointF(high, y))
                painter.drawLine(QPointF(low, y - cap), QPointF(low, y + cap))
                painter.drawLine(QPointF(high, y - cap), QPointF(high, y + cap))
                end = max(end, high)
            self._value_label(painter, bar, end)
        baseline = next((row for row in self.summary if row.mode == RETRY_MODE), None)
        if baseline is not None and baseline.runs:
            x = plot.left() + baseline.solve_rate * plot.width()
            painter.setPen(QPen(BASELINE_COLOUR, 1, Qt.PenStyle.DashLine))
            painter.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()))
        self._mode_names(painter, plot, bars)

    def _draw_tokens_panel(self, painter: QPainter, panel: QRectF, bars: list[Bar]) -> None:
        self._title(painter, panel, "Tokens per solved task")
        end, step = self.token_axis()
        plot = self.plot_area(panel, [bar.label for bar in bars])
        count = round(end / step)
        # Every other tick when the labels would crowd.
        every = 1 if plot.width() / max(1, count) >= 48 else 2
        ticks = [(i * step / end, tokens_text(i * step)) for i in range(0, count + 1, every)]
        self._axis(painter, plot, ticks)
        for bar in bars:
            if bar.rect.width() > 0:
                painter.fillRect(bar.rect, mode_colour(bar.mode))
            self._value_label(painter, bar, bar.rect.right())
        self._mode_names(painter, plot, bars)

    def _tooltip(self) -> str:
        return plain_tip("\n".join(self._row_line(row) for row in self.summary))

    @staticmethod
    def _row_line(row: ModeSummary) -> str:
        name = chart_name(row.mode)
        if not row.runs:
            return f"{name}: {NO_RUNS}"
        cost = "tokens not counted"
        if row.metered:
            cost = f"{tokens_text(row.tokens_per_solved)} tokens per solved task"
        return (
            f"{name}: {row.solved}/{row.runs} solved, {percent(row.solve_rate)} "
            f"(95% interval {percent(row.ci_low)}–{percent(row.ci_high)}), {cost}"
        )

    def row_at(self, point: QPoint | QPointF) -> ModeSummary | None:
        """The row whose bar (or name, or value) is at ``point``, in either panel."""
        for bar in self.bars():
            band = QRectF(self.rect().left(), bar.rect.top(), self.width(), bar.rect.height())
            panel = self.panels()[bar.panel]
            if band.contains(QPointF(point)) and panel.left() <= point.x() <= panel.right():
                return next((row for row in self.summary if row.mode == bar.mode), None)
        return None

    def tooltip_at(self, point: QPoint | QPointF) -> str:
        """The tooltip at ``point``: that row's, with an agent's command and why its tokens were not
        counted; elsewhere every row's."""
        row = self.row_at(point)
        if row is None:
            return self._tooltip()
        lines = [self._row_line(row)]
        if is_agent_mode(row.mode):
            lines.append(agent_tip(row.mode, self.agents.get(row.mode)))
        if not row.metered:
            lines.append(unmetered_tip(row.mode))
        return plain_tip("\n\n".join(lines))

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            QToolTip.showText(event.globalPos(), self.tooltip_at(event.pos()), self)
            return True
        return super().event(event)
