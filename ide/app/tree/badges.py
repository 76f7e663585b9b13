"""The small marks drawn on a node, in the drawing and in the legend alike: a check's verdict (✓, ✗),
what the user asked of the node during the run (pruned, expand: :data:`~ide.app.tree.style.STEER_BADGES`)
and where a continued run came from (its root's fork: :data:`~ide.app.tree.style.FORK_BADGE`). Each is a
disc with a white sign drawn with lines, so it shows at any zoom where shapes do."""

from __future__ import annotations

from PySide6.QtCore import QLineF, QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF

BADGE_R = 5.5


def draw_badge(painter: QPainter, mark: str, centre: QPointF, colour: str, radius: float = BADGE_R) -> None:
    """A small disc in ``colour`` at ``centre`` with a white ``mark``: a check (``✓``), a plus (``+``), a
    minus (``−``), a fork (``⑂``) or else a cross (``✗``)."""
    painter.save()
    painter.setPen(QPen(QColor("#ffffff"), 1.2))
    painter.setBrush(QColor(colour))
    painter.drawEllipse(centre, radius, radius)
    pen = QPen(QColor("#ffffff"), radius * 0.32)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    x, y, k = centre.x(), centre.y(), radius * 0.5
    if mark == "✓":
        tick = [QPointF(x - k, y), QPointF(x - k * 0.25, y + k * 0.75), QPointF(x + k, y - k * 0.7)]
        painter.drawPolyline(QPolygonF(tick))
    elif mark in ("+", "−"):
        painter.drawLine(QLineF(x - k, y, x + k, y))
        if mark == "+":
            painter.drawLine(QLineF(x, y - k, x, y + k))
    elif mark == "⑂":
        # A fork: one stem that splits in two, read upwards (the new run grew out of another's node).
        painter.drawLine(QLineF(x, y + k, x, y))
        painter.drawLine(QLineF(x, y, x - k * 0.8, y - k))
        painter.drawLine(QLineF(x, y, x + k * 0.8, y - k))
    else:
        painter.drawLine(QLineF(x - k * 0.75, y - k * 0.75, x + k * 0.75, y + k * 0.75))
        painter.drawLine(QLineF(x - k * 0.75, y + k * 0.75, x + k * 0.75, y - k * 0.75))
    painter.restore()
