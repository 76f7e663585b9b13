"""The search tree's legend: fill colour is the value, shape the kind, outline the status, and the marks of
steering (a node pruned or to expand, a continued run's root); a small panel beside the drawing (never
over it), shown or hidden from the toolbar."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFontMetricsF,
    QLinearGradient,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
    QResizeEvent,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from ide.app.tree.badges import draw_badge
from ide.app.tree.style import (
    BADGES,
    BEST_COLOUR,
    DASHED,
    DEFAULT_PEN,
    FORK_BADGE,
    POLYGONS,
    STATUS_COLOURS,
    STATUS_PENS,
    STEER_BADGES,
    STEER_WORDS,
    TEXT_COLOUR,
    value_colour,
)

SHAPES = ("thought", "action", "step", "root", "answer", "plan", "evaluation", "synthesis")
STATUSES = ("verified", "solution", "refuted", "failed", "active", "pruned", "generated")
"""Outlines the legend explains (``generated``: not scored yet, drawn in grey)."""
STATUS_WORDS = {
    "verified": "verified (tests or check passed)",
    "solution": "solution, self-scored",
    "refuted": "self-scored, check failed",
    "generated": "not scored",
}
R = 5.5
ROW_H = 17
GAP = 12


def draw_shape(painter: QPainter, kind: str, centre: QPointF, radius: float) -> None:
    """``kind``'s node shape at ``centre``, with the painter's pen and brush."""
    x, y = centre.x(), centre.y()
    if kind == "action":
        painter.drawRect(QRectF(x - radius, y - radius, 2 * radius, 2 * radius))
    elif kind == "step":
        painter.drawRoundedRect(QRectF(x - radius, y - radius, 2 * radius, 2 * radius), 2, 2)
    elif kind in POLYGONS:
        painter.drawPolygon(QPolygonF([QPointF(x + radius * u, y + radius * v) for u, v in POLYGONS[kind]]))
    else:
        painter.drawEllipse(centre, radius, radius)
        if kind == "root":
            painter.drawEllipse(centre, radius * 0.6, radius * 0.6)


class TreeLegend(QWidget):
    """Four short rows: the value colour scale and the best path; the shapes by kind; the outlines by
    status; the steering marks. They wrap to the panel's width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("treeLegend")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setToolTip(
            "Fill: the node's value (red 0 → green 10; grey until scored). Shape: its kind. "
            "Outline: its status. A solid outline with ✓: a result a test run or the eval check verified; "
            "dashed: a solution only the model's own score claims (✗: the eval check failed it). "
            "Blue ring: the best path. Marks: − a node you pruned, + one you asked to expand (during the "
            "run), a forked stem on the root of a run continued from another run's node."
        )
        self._metrics = QFontMetricsF(self.font())

    def items(self) -> list[list[tuple[str, str]]]:
        """Rows of (what to draw, text): ``scale``, ``best``, ``shape:<kind>``, ``status:<status>``,
        ``steer:<action>``, ``fork``."""
        return [
            [("scale", "value 0 → 10"), ("best", "best path")],
            [(f"shape:{kind}", kind) for kind in SHAPES],
            [(f"status:{status}", STATUS_WORDS.get(status, status)) for status in STATUSES],
            [
                *((f"steer:{action}", words) for action, words in STEER_WORDS.items()),
                ("fork", "continued run"),
            ],
        ]

    def _flow(self, width: float) -> list[tuple[str, str, QRectF]]:
        """Where each item goes in ``width`` pixels: (what, text, rectangle)."""
        placed: list[tuple[str, str, QRectF]] = []
        y = 2.0
        for row in self.items():
            x = 4.0
            for what, text in row:
                mark = 52.0 if what == "scale" else 2 * R + 4
                w = mark + 3 + self._metrics.horizontalAdvance(text)
                if x > 4.0 and x + w > width - 4:
                    x, y = 4.0, y + ROW_H
                placed.append((what, text, QRectF(x, y, w, ROW_H)))
                x += w + GAP
            y += ROW_H
        return placed

    def heightForWidth(self, width: int) -> int:
        placed = self._flow(width)
        return int(max((rect.bottom() for _w, _t, rect in placed), default=0) + 3)

    def hasHeightForWidth(self) -> bool:
        return True

    def sizeHint(self) -> QSize:
        return QSize(300, self.heightForWidth(300))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        height = self.heightForWidth(event.size().width())
        if height != self.height():
            self.setFixedHeight(height)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for what, text, rect in self._flow(self.width()):
            cy = rect.center().y()
            centre = QPointF(rect.left() + R + 1, cy)
            mark = 2 * R + 4
            painter.setPen(QPen(QColor(DEFAULT_PEN[0]), DEFAULT_PEN[1]))
            painter.setBrush(QColor(STATUS_COLOURS["evaluated"]))
            if what == "scale":
                mark = 52.0
                gradient = QLinearGradient(rect.left(), 0, rect.left() + mark, 0)
                for k in range(11):
                    gradient.setColorAt(k / 10, QColor(value_colour(k / 10)))
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(gradient)
                painter.drawRect(QRectF(rect.left(), cy - 4, mark, 8))
            elif what == "best":
                painter.setBrush(QColor(value_colour(0.8)))
                draw_shape(painter, "thought", centre, R - 1.5)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.setPen(QPen(QColor(BEST_COLOUR), 2.0))
                painter.drawEllipse(centre, R + 0.5, R + 0.5)
            elif what.startswith("shape:"):
                draw_shape(painter, what[6:], centre, R)
            elif what == "fork":  # the root's mark, at its upper left as drawn
                draw_shape(painter, "root", centre, R)
                corner = QPointF(centre.x() - R * 0.8, cy - R * 0.8)
                draw_badge(painter, FORK_BADGE[1], corner, FORK_BADGE[0], 3.5)
            elif what.startswith("steer:"):  # at the node's lower right
                draw_shape(painter, "thought", centre, R)
                colour, sign = STEER_BADGES[what[6:]]
                draw_badge(painter, sign, QPointF(centre.x() + R * 0.8, cy + R * 0.8), colour, 3.5)
            else:
                status = what[7:]
                colour, width = STATUS_PENS.get(status, DEFAULT_PEN)
                pen = QPen(QColor(colour), width)
                if status in DASHED:
                    pen.setStyle(Qt.PenStyle.DashLine)
                painter.setPen(pen)
                painter.setBrush(QColor(STATUS_COLOURS.get(status, "#c3c8d1")))
                draw_shape(painter, "thought", centre, R)
                if status in BADGES:
                    badge_colour, sign = BADGES[status]
                    corner = QPointF(centre.x() + R * 0.8, centre.y() - R * 0.8)
                    draw_badge(painter, sign, corner, badge_colour, 3.5)
            painter.setPen(QColor(TEXT_COLOUR))
            painter.drawText(
                QRectF(rect.left() + mark + 3, rect.top(), rect.width() - mark - 3, rect.height()),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                text,
            )
        painter.end()
