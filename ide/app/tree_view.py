"""The search-tree view: a run's tree drawn live, inspected node by node, replayed step by step.

One :class:`TreeCanvas` item paints the whole tree, culled to ``option.exposedRect`` through a per-row
index (a tidy layout puts each depth on its own row, so the visible nodes are a bisect per row away),
with levels of detail: coloured squares when nodes are a few pixels wide, shapes and outlines when
they are larger, labels and edge labels (the action's tool) only when the text would be legible.

Live events are applied to the model at once (cheap) and drawn on a coalescing timer. An update restyles
its node where it stands (colour, size, status: O(changed)); only a new node, or a pruned subtree hidden,
needs a new layout, and those are paced to at most one per :data:`RELAYOUT_MS` and to a bounded share of
the time (:data:`RELAYOUT_SPACING`), however many batches arrive in between. Duplicated live events are
ignored, early ones held until the gap fills, and an event that does not fit stops its run with a line in
the dock. A corner overview shows the whole tree and the visible part, and pans the view on a click.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QLineF, QPoint, QPointF, QRectF, QSize, QSizeF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPolygonF,
    QResizeEvent,
    QShowEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGraphicsItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSlider,
    QSplitter,
    QStyleOptionGraphicsItem,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ide.app.theme import ACCENT
from ide.app.tree_model import Layout, tidy_layout, visible_ids
from ide.protocol.tree import (
    TREE_FILE_SUFFIX,
    SearchTree,
    TreeError,
    TreeEvent,
    TreeFileError,
    TreeNode,
    read_jsonl,
    write_jsonl,
)

__all__ = ["SearchTreeView", "TreeCanvas", "TreeFileError", "TreeGraphicsView", "TreeOverview"]

RELAYOUT_MS = 100
"""Longest a live event waits before it is drawn; also the shortest time between two re-layouts."""
RELAYOUT_SPACING = 4.0
"""A live re-layout waits at least this many times the last one's cost after it (at most ~20 % busy)."""
HELD_EVENTS_MAX = 10_000
"""Events of one run kept while waiting for an earlier one that has not arrived."""
EXPLORATION = 1.414
"""The default UCT exploration constant c, as the backend's LATS uses it."""
H_UNIT = 48.0
"""Scene pixels between sibling centres."""
V_UNIT = 80.0
"""Scene pixels between depth levels."""
MIN_R, MAX_R = 7.0, 18.0
LABEL_PX = 7.0
"""Smallest on-screen text height (pixels) worth drawing."""
SHAPE_PX = 5.0
"""Below this on-screen node diameter, nodes are plain squares (no outline, no shape)."""
FONT_PT = 9.0
EXPORT_MAX_PX = 8000

STATUS_COLOURS = {
    "generated": "#c3c8d1",
    "evaluated": "#7ea6e0",
    "active": "#f0a202",
    "terminated_early": "#8a8f98",
    "solution": "#2e9e4f",
    "pruned": "#e4e6ea",
    "failed": "#d64545",
}
STATUS_PENS = {
    "solution": ("#1d6b34", 2.5),
    "failed": ("#a12626", 2.0),
    "active": ("#b57800", 2.0),
    "pruned": ("#b9bdc4", 1.0),
}
DEFAULT_PEN = ("#5d636e", 1.0)
EDGE_COLOUR = "#b3b9c3"
BEST_COLOUR = ACCENT
TEXT_COLOUR = "#30343b"
SELECT_COLOUR = "#ff6a00"


def value_colour(score: float) -> str:
    """Red (0) through yellow to green (1); scores above 1 are read on the 0–10 scale."""
    if score > 1.0:
        score /= 10.0
    score = min(max(score, 0.0), 1.0)
    return QColor.fromHsvF(score / 3.0, 0.65, 0.9).name()


def node_score(node: TreeNode) -> float | None:
    """The value a node is coloured by: its backed-up value once visited, else its reward, else None."""
    if node.visits > 0:
        return node.value
    return node.reward


def node_radius(node: TreeNode) -> float:
    return min(MIN_R + 2.5 * math.log2(1 + max(node.visits, 0)), MAX_R)


def _regular(count: int, start: float) -> list[tuple[float, float]]:
    return [
        (math.cos(start + 2 * math.pi * k / count), math.sin(start + 2 * math.pi * k / count))
        for k in range(count)
    ]


POLYGONS: dict[str, list[tuple[float, float]]] = {
    "answer": [(0.0, -1.2), (1.2, 0.0), (0.0, 1.2), (-1.2, 0.0)],  # diamond
    "plan": _regular(6, 0.0),  # hexagon
    "evaluation": [(0.0, -1.15), (1.1, 0.85), (-1.1, 0.85)],  # triangle
    "synthesis": [
        (r * math.cos(-math.pi / 2 + k * math.pi / 5), r * math.sin(-math.pi / 2 + k * math.pi / 5))
        for k in range(10)
        for r in ((1.25 if k % 2 == 0 else 0.6),)
    ],  # star
}
"""Unit shapes by node kind; thought is a circle, action a square, step a rounded square, root a ring."""


NodeStyle = tuple[float, str, str, str, str, str]
"""Radius, fill colour, kind, status, label and edge label (the action's tool) of a drawn node."""

_COLOURS: dict[float, str] = {}


def node_style(node: TreeNode) -> NodeStyle:
    """How ``node`` is drawn: size by visits, colour by value (status colour until scored), shape by kind."""
    score = node_score(node)
    if score is None:
        fill = STATUS_COLOURS.get(node.status, "#c3c8d1")
    else:
        fill = _COLOURS.get(score) or _COLOURS.setdefault(score, value_colour(score))
    tool = node.action.tool if node.action is not None else ""
    return node_radius(node), fill, node.kind, node.status, node.label or node.kind, tool


EdgeRow = tuple[list[QLineF], list[float], list[float], list[bool]]


@dataclass
class Geometry:
    """What the canvas paints, precomputed after a layout: scene positions, styles and a row index.

    Styles change in place (:meth:`restyle`, :meth:`set_best`) when nodes are updated; only a change of
    shape (a node added, a pruned node hidden) needs a new layout and a new Geometry.
    """

    ids: list[str] = field(default_factory=list)
    cx: list[float] = field(default_factory=list)
    cy: list[float] = field(default_factory=list)
    r: list[float] = field(default_factory=list)
    fill: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    edge_label: list[str] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    best: list[bool] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    rows: list[tuple[list[float], list[int]]] = field(default_factory=list)
    """Per depth: the nodes' x (sorted) and their indices."""
    edges: list[EdgeRow | None] = field(default_factory=list)
    """Per depth, built when first painted: lines from parents to the row's nodes, x extents, best flags."""
    bounds: QRectF = field(default_factory=QRectF)

    def __len__(self) -> int:
        return len(self.ids)

    def edge_row(self, depth: int) -> EdgeRow:
        row = self.edges[depth]
        if row is None:
            cx, cy, parent, best = self.cx, self.cy, self.parent, self.best
            lines, lo, hi, flags = [], [], [], []
            for i in self.rows[depth][1]:
                p = parent[i]
                if p < 0:
                    continue
                lines.append(QLineF(cx[p], cy[p], cx[i], cy[i]))
                lo.append(min(cx[p], cx[i]))
                hi.append(max(cx[p], cx[i]))
                flags.append(best[i] and best[p])
            row = self.edges[depth] = (lines, lo, hi, flags)
        return row

    def restyle(self, index: int, node: TreeNode) -> None:
        """Take the updated ``node``'s style (drawn at ``index``) without a new layout."""
        style = node_style(node)
        self.r[index], self.fill[index], self.kind[index], self.status[index] = style[:4]
        self.label[index], self.edge_label[index] = style[4], style[5]

    def set_best(self, path: Iterable[str]) -> None:
        """Mark the best path (edges along it are rebuilt when next painted)."""
        on = set(path)
        self.best = [node_id in on for node_id in self.ids]
        self.edges = [None] * len(self.rows)


def build_geometry(tree: SearchTree, layout: Layout) -> Geometry:
    """Scene coordinates and styles of ``layout``'s nodes, and the per-row index used for culling."""
    nodes = tree.nodes
    geo = Geometry()
    if len(layout) == 0:
        return geo
    ids = layout.ids
    geo.ids = ids
    geo.cx = cx = [x * H_UNIT for x in layout.x]
    geo.cy = [d * V_UNIT for d in layout.depth]
    geo.parent = layout.parent
    geo.index = {node_id: i for i, node_id in enumerate(ids)}
    styles = [node_style(nodes[node_id]) for node_id in ids]
    if styles:
        r, fill, kind, status, label, edge_label = (list(column) for column in zip(*styles, strict=True))
        geo.r, geo.fill, geo.kind, geo.status, geo.label, geo.edge_label = (
            r,
            fill,
            kind,
            status,
            label,
            edge_label,
        )
    best = set(tree.best_path)
    geo.best = [node_id in best for node_id in ids]
    row_members: list[list[int]] = [[] for _ in range(max(layout.depth) + 1)]
    for i, d in enumerate(layout.depth):
        row_members[d].append(i)  # layout order is preorder: each row comes out left to right
    for members in row_members:
        xs = [cx[i] for i in members]
        if any(a > b for a, b in itertools.pairwise(xs)):
            members.sort(key=cx.__getitem__)
            xs = [cx[i] for i in members]
        geo.rows.append((xs, members))
    geo.edges = [None] * len(row_members)
    margin = MAX_R + H_UNIT / 2
    left, right = min(cx), max(cx)
    geo.bounds = QRectF(
        left - margin, -margin, right - left + 2 * margin, (len(row_members) - 1) * V_UNIT + 2 * margin
    )
    return geo


class TreeCanvas(QGraphicsItem):
    """All nodes and edges of a tree in one item, painted only where exposed."""

    def __init__(self) -> None:
        super().__init__()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.geometry = Geometry()
        self.selected = -1
        self.paint_count = 0
        self.last_painted = 0
        """Nodes drawn by the last paint (tests and the bench check the culling with it)."""
        self._font = QFont()
        self._font.setPointSizeF(FONT_PT)
        self._metrics = QFontMetricsF(self._font)
        self._elided: dict[int, str] = {}
        self._brushes: dict[str, QBrush] = {}
        self._pens: dict[tuple[str, float], QPen] = {}

    def forget_label(self, index: int) -> None:
        """Node ``index``'s label changed: elide it again when next painted."""
        self._elided.pop(index, None)

    def set_geometry(self, geometry: Geometry) -> None:
        self.prepareGeometryChange()
        self.geometry = geometry
        self._elided = {}
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(self.geometry.bounds)

    def node_at(self, point: QPointF) -> int:
        """Index of the node under ``point`` (scene coordinates), or -1."""
        geo = self.geometry
        if not geo.ids:
            return -1
        depth = round(point.y() / V_UNIT)
        if not 0 <= depth < len(geo.rows):
            return -1
        xs, members = geo.rows[depth]
        k = bisect_left(xs, point.x())
        best, best_distance = -1, float("inf")
        for j in (k - 1, k):
            if 0 <= j < len(members):
                i = members[j]
                distance = math.hypot(geo.cx[i] - point.x(), geo.cy[i] - point.y())
                if distance <= max(geo.r[i] * 1.3, 6.0) and distance < best_distance:
                    best, best_distance = i, distance
        return best

    def _brush(self, colour: str) -> QBrush:
        brush = self._brushes.get(colour)
        if brush is None:
            brush = self._brushes[colour] = QBrush(QColor(colour))
        return brush

    def _pen(self, colour: str, width: float, cosmetic: bool = False) -> QPen:
        key = (colour, width if not cosmetic else -width)
        pen = self._pens.get(key)
        if pen is None:
            pen = self._pens[key] = QPen(QColor(colour), width)
            pen.setCosmetic(cosmetic)
        return pen

    def paint(
        self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None
    ) -> None:
        geo = self.geometry
        self.paint_count += 1
        if not geo.ids:
            self.last_painted = 0
            return
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect  # type: ignore[attr-defined]
        pad = MAX_R * 1.3
        x0, x1 = exposed.left() - pad, exposed.right() + pad
        d0 = max(0, math.floor((exposed.top() - pad) / V_UNIT))
        d1 = min(len(geo.rows) - 1, math.ceil((exposed.bottom() + pad) / V_UNIT))
        visible: list[int] = []
        for d in range(d0, d1 + 1):
            xs, members = geo.rows[d]
            visible.extend(members[bisect_left(xs, x0) : bisect_right(xs, x1)])
        self.last_painted = len(visible)
        self._paint_edges(painter, geo, lod, x0, x1, d0, min(len(geo.rows) - 1, d1 + 1))
        if not visible:
            return
        if H_UNIT * lod * 0.3 < SHAPE_PX:
            self._paint_dots(painter, geo, visible)
        else:
            self._paint_shapes(painter, geo, visible, lod)
        if FONT_PT * lod >= LABEL_PX:
            self._paint_labels(painter, geo, visible, lod, d0, d1, x0, x1)

    def _paint_edges(
        self, painter: QPainter, geo: Geometry, lod: float, x0: float, x1: float, d0: float, d1: int
    ) -> None:
        normal: list[QLineF] = []
        best: list[QLineF] = []
        for d in range(max(1, int(d0)), d1 + 1):
            lines, lo, hi, flags = geo.edge_row(d)
            if not lines:
                continue
            if lo and min(lo) >= x0 and max(hi) <= x1 and not any(flags):
                normal.extend(lines)
                continue
            for line, a, b, flag in zip(lines, lo, hi, flags, strict=True):
                if b >= x0 and a <= x1:
                    (best if flag else normal).append(line)
        if normal:
            painter.setPen(self._pen(EDGE_COLOUR, 1.0, cosmetic=True))
            painter.drawLines(normal)
        if best:
            painter.setPen(self._pen(BEST_COLOUR, max(3.0, 1.5 / max(lod, 1e-6)) if lod < 0.5 else 3.0))
            painter.drawLines(best)

    def _paint_dots(self, painter: QPainter, geo: Geometry, visible: list[int]) -> None:
        groups: dict[str, list[QRectF]] = {}
        cx, cy, r, fill = geo.cx, geo.cy, geo.r, geo.fill
        for i in visible:
            radius = r[i]
            groups.setdefault(fill[i], []).append(
                QRectF(cx[i] - radius, cy[i] - radius, 2 * radius, 2 * radius)
            )
        painter.setPen(Qt.PenStyle.NoPen)
        for colour, rects in groups.items():
            painter.setBrush(self._brush(colour))
            painter.drawRects(rects)
        best = [i for i in visible if geo.best[i]]
        if best:
            painter.setBrush(self._brush(BEST_COLOUR))
            painter.drawRects([QRectF(cx[i] - r[i] / 2, cy[i] - r[i] / 2, r[i], r[i]) for i in best])
        if self.selected >= 0 and self.selected in set(visible):
            i = self.selected
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(self._pen(SELECT_COLOUR, 3.0, cosmetic=True))
            painter.drawRect(QRectF(cx[i] - 2 * r[i], cy[i] - 2 * r[i], 4 * r[i], 4 * r[i]))

    def _paint_shapes(self, painter: QPainter, geo: Geometry, visible: list[int], lod: float) -> None:
        cx, cy, r = geo.cx, geo.cy, geo.r
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for i in visible:
            x, y, radius = cx[i], cy[i], r[i]
            colour, width = STATUS_PENS.get(geo.status[i], DEFAULT_PEN)
            pen = self._pen(colour, width)
            if geo.status[i] == "pruned":
                pen = QPen(pen)
                pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.setBrush(self._brush(geo.fill[i]))
            kind = geo.kind[i]
            if kind == "action":
                painter.drawRect(QRectF(x - radius, y - radius, 2 * radius, 2 * radius))
            elif kind == "step":
                painter.drawRoundedRect(QRectF(x - radius, y - radius, 2 * radius, 2 * radius), 4, 4)
            elif kind in POLYGONS:
                painter.drawPolygon(
                    QPolygonF([QPointF(x + radius * u, y + radius * v) for u, v in POLYGONS[kind]])
                )
            else:
                painter.drawEllipse(QPointF(x, y), radius, radius)
                if kind == "root":
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                    painter.drawEllipse(QPointF(x, y), radius * 0.6, radius * 0.6)
            if geo.best[i]:
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.setPen(self._pen(BEST_COLOUR, 2.0))
                painter.drawEllipse(QPointF(x, y), radius + 3.5, radius + 3.5)
        if self.selected >= 0 and self.selected in set(visible):
            i = self.selected
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(self._pen(SELECT_COLOUR, 2.5, cosmetic=True))
            painter.drawEllipse(QPointF(cx[i], cy[i]), r[i] + 7, r[i] + 7)

    def _paint_labels(
        self,
        painter: QPainter,
        geo: Geometry,
        visible: list[int],
        lod: float,
        d0: int,
        d1: int,
        x0: float,
        x1: float,
    ) -> None:
        painter.setFont(self._font)
        painter.setPen(self._pen(TEXT_COLOUR, 1.0))
        height = self._metrics.height()
        width = H_UNIT - 4
        cx, cy, r = geo.cx, geo.cy, geo.r
        for i in visible:
            text = self._elided.get(i)
            if text is None:
                text = self._elided[i] = self._metrics.elidedText(
                    geo.label[i], Qt.TextElideMode.ElideRight, width
                )
            painter.drawText(
                QRectF(cx[i] - width / 2, cy[i] + r[i] + 2, width, height),
                Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                text,
            )
        if FONT_PT * lod < LABEL_PX * 1.4:
            return  # edge labels need a little more room than node labels
        painter.setPen(self._pen(BEST_COLOUR, 1.0))
        small = QFont(self._font)
        small.setItalic(True)
        painter.setFont(small)
        for d in range(max(d0, 1), d1 + 2):
            if d >= len(geo.rows):
                break
            xs, members = geo.rows[d]
            for i in members[bisect_left(xs, x0) : bisect_right(xs, x1)]:
                tool, p = geo.edge_label[i], geo.parent[i]
                if not tool or p < 0:
                    continue
                mx, my = cx[p] + 0.6 * (cx[i] - cx[p]), cy[p] + 0.6 * (cy[i] - cy[p])
                painter.drawText(
                    QRectF(mx - H_UNIT, my - height, 2 * H_UNIT, height),
                    Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom,
                    self._metrics.elidedText(tool, Qt.TextElideMode.ElideRight, 2 * H_UNIT),
                )


class TreeGraphicsView(QGraphicsView):
    """Zoom with the wheel (under the cursor), pan by dragging; a click without a drag picks a node."""

    nodeClicked = Signal(QPointF)
    """Scene position of a click."""
    userMoved = Signal()
    """The user zoomed or panned: stop fitting the tree to the view as it grows."""
    viewChanged = Signal()
    """The visible part of the scene moved or changed size (the overview redraws its rectangle)."""

    def __init__(self, scene: QGraphicsScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        self._press: QPoint | None = None

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11()
        factor = min(max(factor, 0.0005 / scale), 8.0 / scale)
        self.scale(factor, factor)
        self.viewChanged.emit()

    def visible_scene_rect(self) -> QRectF:
        """The part of the scene the viewport shows."""
        return self.mapToScene(self.viewport().rect()).boundingRect()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self.viewChanged.emit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.viewChanged.emit()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom(1.2**steps)
            self.userMoved.emit()
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._press = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        press, self._press = self._press, None
        if press is None or event.button() != Qt.MouseButton.LeftButton:
            return
        if (event.position().toPoint() - press).manhattanLength() <= 4:
            self.nodeClicked.emit(self.mapToScene(event.position().toPoint()))
        else:
            self.userMoved.emit()


class TreeOverview(QWidget):
    """A small picture of the whole tree in the view's corner, with the visible part outlined.

    Clicking or dragging in it centres the main view on that point. The picture is drawn once per new
    layout (into an image) and the rectangle on every move, so panning costs only a blit.
    """

    panned = Signal()
    """The user moved the main view from the overview."""

    SIZE = QSize(180, 110)

    def __init__(self, view: TreeGraphicsView, canvas: TreeCanvas) -> None:
        super().__init__(view)
        self.setObjectName("treeOverview")
        self.setFixedSize(self.SIZE)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view")
        self._view = view
        self._canvas = canvas
        self._image: QImage | None = None
        self._scale = 1.0
        self._offset = QPointF()
        view.viewChanged.connect(self.update)

    def invalidate(self) -> None:
        """The tree changed: draw its picture again when next shown."""
        self._image = None
        self.update()

    def place(self) -> None:
        """Keep to the bottom-right corner of the viewport."""
        viewport = self._view.viewport().geometry()
        self.move(viewport.right() - self.width() - 6, viewport.bottom() - self.height() - 6)

    def _fit(self) -> QRectF:
        bounds = self._canvas.geometry.bounds
        inner = QRectF(self.rect()).adjusted(4, 4, -4, -4)
        if bounds.isEmpty():
            self._scale, self._offset = 1.0, QPointF()
            return bounds
        self._scale = min(inner.width() / bounds.width(), inner.height() / bounds.height())
        drawn = QSizeF(bounds.width() * self._scale, bounds.height() * self._scale)
        self._offset = QPointF(
            inner.left() + (inner.width() - drawn.width()) / 2 - bounds.left() * self._scale,
            inner.top() + (inner.height() - drawn.height()) / 2 - bounds.top() * self._scale,
        )
        return bounds

    def to_scene(self, point: QPointF) -> QPointF:
        """The scene point under ``point`` of this widget."""
        self._fit()
        return QPointF(
            (point.x() - self._offset.x()) / self._scale, (point.y() - self._offset.y()) / self._scale
        )

    def from_scene(self, rect: QRectF) -> QRectF:
        self._fit()
        return QRectF(
            rect.left() * self._scale + self._offset.x(),
            rect.top() * self._scale + self._offset.y(),
            rect.width() * self._scale,
            rect.height() * self._scale,
        )

    def _picture(self) -> QImage:
        image = QImage(self.size(), QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor(255, 255, 255, 225))
        geo = self._canvas.geometry
        self._fit()
        painter = QPainter(image)
        painter.setPen(QPen(QColor("#c9ced6"), 1.0))
        painter.drawRect(QRectF(image.rect()).adjusted(0, 0, -1, -1))
        groups: dict[str, list[QRectF]] = {}
        s, ox, oy = self._scale, self._offset.x(), self._offset.y()
        for x, y, colour in zip(geo.cx, geo.cy, geo.fill, strict=True):
            groups.setdefault(colour, []).append(QRectF(x * s + ox - 1, y * s + oy - 1, 2, 2))
        painter.setPen(Qt.PenStyle.NoPen)
        for colour, rects in groups.items():
            painter.setBrush(QColor(colour))
            painter.drawRects(rects)
        painter.end()
        return image

    def paintEvent(self, event: QPaintEvent) -> None:
        if self._image is None or self._image.size() != self.size():
            self._image = self._picture()
        painter = QPainter(self)
        painter.drawImage(0, 0, self._image)
        if not self._canvas.geometry.bounds.isEmpty():
            painter.setPen(QPen(QColor(SELECT_COLOUR), 1.5))
            painter.setBrush(QColor(255, 106, 0, 30))
            shown = self.from_scene(self._view.visible_scene_rect()).intersected(QRectF(self.rect()))
            painter.drawRect(shown.adjusted(0.5, 0.5, -0.5, -0.5))
        painter.end()

    def _pan(self, event: QMouseEvent) -> None:
        if not self._canvas.geometry.bounds.isEmpty():
            self._view.centerOn(self.to_scene(event.position()))
            self.panned.emit()
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._pan(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._pan(event)


def uct_terms(node: TreeNode, parent: TreeNode, c: float) -> tuple[float, float, float]:
    """Value, exploration term ``c·√(ln N_parent / n)`` and their sum (UCT) of a child; unvisited: ∞."""
    if node.visits <= 0:
        return node.value, math.inf, math.inf
    if parent.visits <= 0:
        return node.value, 0.0, node.value
    exploration = c * math.sqrt(math.log(parent.visits) / node.visits)
    return node.value, exploration, node.value + exploration


def exploration_constant(figures: dict[str, object]) -> float:
    """The run's UCT constant c if its figures name it, else the default 1.414."""
    for key in ("exploration_constant", "exploration_weight", "c"):
        value = figures.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return EXPLORATION


def inspector_html(node: TreeNode, parent: TreeNode | None = None, c: float = EXPLORATION) -> str:
    """The inspector's text for ``node``: every field a person reads to judge a step, and, for a child,
    the UCT terms its selection was scored by."""
    e = html.escape
    rows: list[tuple[str, str]] = [
        ("Label", e(node.label)),
        ("Kind", e(node.kind)),
        ("Status", e(node.status)),
        ("Depth", str(node.depth)),
        ("Visits", str(node.visits)),
        ("Value", f"{node.value:.3f}"),
    ]
    if node.reward_raw is not None or node.reward is not None:
        raw = f"{node.reward_raw:g} / 10" if node.reward_raw is not None else "–"
        norm = f"{node.reward:.3f}" if node.reward is not None else "–"
        rows.append(("Reward", f"{raw} (normalised {norm})"))
    for title, value in (("Role", node.role), ("Model", node.model), ("Change set", node.changeset_id)):
        if value:
            rows.append((title, e(value)))
    if node.input_tokens or node.output_tokens:
        rows.append(("Tokens", f"{node.input_tokens} in / {node.output_tokens} out"))
    if node.latency_ms:
        rows.append(("Latency", f"{node.latency_ms:.0f} ms"))
    rows.append(("Id", e(node.id)))
    table = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
    parts = [f"<table cellspacing='2'>{table}</table>"]
    if parent is not None:
        value, exploration, total = uct_terms(node, parent, c)

        def number(x: float) -> str:
            return "∞" if math.isinf(x) else f"{x:.3f}"

        uct_rows = [
            ("Value", f"{value:.3f}"),
            ("Exploration", f"{number(exploration)} = {c:g}·√(ln {parent.visits} / {node.visits})"),
            ("UCT", number(total)),
            ("Visits", f"{node.visits} of the parent's {parent.visits}"),
        ]
        uct = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in uct_rows)
        parts.append(f"<h4>UCT (c = {c:g})</h4><table cellspacing='2'>{uct}</table>")

    def section(title: str, text: str | None, pre: bool = False) -> None:
        if text:
            body = f"<pre>{e(text)}</pre>" if pre else f"<p>{e(text).replace(chr(10), '<br>')}</p>"
            parts.append(f"<h4>{title}</h4>{body}")

    section("Thought", node.thought)
    if node.action is not None:
        args = json.dumps(node.action.args, indent=2, ensure_ascii=False, default=str)
        how = " (recovered from text: the model wrote the call out)" if node.action.recovered else ""
        section("Action", f"{node.action.tool}{how}\n{args}", pre=True)
    section("Observation", node.observation, pre=True)
    section("Reflection", node.reflection)
    return "".join(parts)


class SearchTreeView(QWidget):
    """The dock's content: toolbar, message line, the tree with its overview, the node inspector and the
    replay timeline."""

    relaid = Signal()
    """The drawing caught up with the model (after a coalesced re-layout)."""
    runStarted = Signal(str)
    """A live run not seen before sent its first events (its key)."""
    runFinished = Signal(str)
    """A run's ``finished`` event was applied (live or from a file): its tree will not change again."""
    nodeSelected = Signal(str)
    branchDiffRequested = Signal(str, str, str)
    """Show branch diff: the node's change set id, the node id and the run id."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runs: dict[str, SearchTree] = {}
        self.file_runs: set[str] = set()
        self.stale_runs: set[str] = set()
        """Runs kept from an earlier session (its restore failed): the backend no longer has them."""
        self.faults: dict[str, str] = {}
        """Runs whose events stopped fitting, and what the dock's message line says about them."""
        self.current: str | None = None
        self.shown: SearchTree | None = None
        """The tree drawn: the current run, or its state at the replay step."""
        self.step: int | None = None
        """Events of the current run shown, or None to follow it live."""
        self.layout_count = 0
        self.hide_pruned = False
        self.selected_id: str | None = None
        self.branch_diff_supported = False
        self.last_flush_s = 0.0
        """How long the last redraw (:meth:`flush`) took; the bench reads it."""
        self._held: dict[str, dict[int, TreeEvent]] = {}
        self._layout: Layout | None = None
        self._structure_dirty = False
        self._restyle: set[str] = set()
        self._best_dirty = False
        self._relayout_cost = 0.0
        self._relayout_done = 0.0
        self._auto_fit = True
        self._urgent = False
        self._fault_shown = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timer)

        self.scene = QGraphicsScene(self)
        self.scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.canvas = TreeCanvas()
        self.scene.addItem(self.canvas)
        self.graphics = TreeGraphicsView(self.scene)
        self.graphics.setObjectName("treeGraphics")
        self.graphics.nodeClicked.connect(self._on_click)
        self.graphics.userMoved.connect(self._stop_auto_fit)
        self.overview = TreeOverview(self.graphics, self.canvas)
        self.overview.panned.connect(self._stop_auto_fit)
        self.graphics.viewChanged.connect(self.overview.place)

        self.run_combo = QComboBox()
        self.run_combo.setMinimumContentsLength(18)
        self.run_combo.currentIndexChanged.connect(self._on_run_chosen)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.clicked.connect(self.fit)
        self.hide_pruned_box = QCheckBox("Hide pruned")
        self.hide_pruned_box.toggled.connect(self.set_hide_pruned)
        self.overview_button = QToolButton()
        self.overview_button.setText("Overview")
        self.overview_button.setCheckable(True)
        self.overview_button.setChecked(True)
        self.overview_button.setToolTip("Show a map of the whole tree in the corner")
        self.overview_button.toggled.connect(self.overview.setVisible)
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
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 4, 6, 0)
        bar.addWidget(self.run_combo)
        bar.addWidget(self.fit_button)
        bar.addWidget(self.hide_pruned_box)
        bar.addWidget(self.overview_button)
        bar.addWidget(self.export_button)
        bar.addWidget(self.summary, 1)
        self.message = QLabel()
        self.message.setObjectName("treeMessage")
        self.message.setContentsMargins(6, 0, 6, 0)
        self.message.hide()

        self.inspector = QTextBrowser()
        self.inspector.setObjectName("treeInspector")
        self.inspector.setOpenLinks(False)
        self.inspector.setPlaceholderText("Click a node to inspect it.")
        self.branch_button = QPushButton("Show branch diff")
        self.branch_button.setObjectName("branchDiffButton")
        self.branch_button.clicked.connect(self._request_branch_diff)
        self.branch_button.hide()
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.setSpacing(2)
        side_layout.addWidget(self.inspector, 1)
        side_layout.addWidget(self.branch_button)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.graphics)
        splitter.addWidget(side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([3000, 1000])
        splitter.setCollapsible(0, False)

        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("treeTimeline")
        self.slider.setRange(0, 0)
        self.slider.setPageStep(10)
        self.slider.valueChanged.connect(self._on_slider)
        self.step_label = QLabel("0 / 0")
        self.step_label.setObjectName("mutedLabel")
        timeline = QHBoxLayout()
        timeline.setContentsMargins(6, 0, 6, 4)
        timeline.addWidget(QLabel("Replay"))
        timeline.addWidget(self.slider, 1)
        timeline.addWidget(self.step_label)

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(bar)
        column.addWidget(self.message)
        column.addWidget(splitter, 1)
        column.addLayout(timeline)
        self._set_enabled()

    # -- events in ---------------------------------------------------------------------------------

    def add_events(self, events: Iterable[TreeEvent], *, source: str | None = None) -> None:
        """Apply live (or opened) events; the drawing follows on the coalescing timer.

        A live event already applied (a replayed session sends them again) is ignored; one that arrives
        early is held until the events before it come. An event that does not fit its run (unknown
        parent, a second root…) stops that run where it was, with a line in the dock saying so.
        """
        touched_current = False
        finished: list[str] = []
        for event in events:
            key = event.run_id if source is None else f"{source} · {event.run_id}"
            tree = self.runs.get(key)
            if tree is None:
                tree = self.runs[key] = SearchTree()
                if source is not None:
                    self.file_runs.add(key)
                self._add_run_item(key, event.run_id)
                if source is None:
                    self.runStarted.emit(key)
                if source is not None or self.current is None or self.step is None:
                    self._select_run(key)
            for applied in self._feed(key, tree, event):
                if key == self.current and self.step is None:
                    touched_current = True
                    self._note_change(tree, applied)
                if applied.kind == "finished":
                    finished.append(key)
        tree = self.runs.get(self.current) if self.current is not None else None
        if tree is not None:
            following = self.step is None
            self.slider.blockSignals(True)
            self.slider.setMaximum(len(tree.events))
            if following:
                self.slider.setValue(len(tree.events))
            self.slider.blockSignals(False)
            self._show_step()
        self._show_faults()
        if touched_current:
            self._schedule()
        for key in finished:
            self.runFinished.emit(key)

    def _feed(self, key: str, tree: SearchTree, event: TreeEvent) -> list[TreeEvent]:
        """Apply ``event`` (and held events it unblocks) to ``tree``; the events applied."""
        if key in self.faults and key not in self._held:
            return []  # stopped for good: an event did not fit
        if event.seq <= tree.seq:
            return []  # a duplicate
        held = self._held.setdefault(key, {})
        if event.seq > tree.seq + 1:
            if len(held) < HELD_EVENTS_MAX:
                held.setdefault(event.seq, event)
            self.faults[key] = (
                f"run {tree.run_id or event.run_id}: events out of order after seq {tree.seq}; "
                "showing the tree up to there"
            )
            return []
        applied: list[TreeEvent] = []
        next_event: TreeEvent | None = event
        while next_event is not None:
            try:
                tree.apply(next_event)
            except TreeError as exc:
                self._held.pop(key, None)
                self.faults[key] = f"{exc}; showing the tree up to seq {tree.seq}"
                return applied
            applied.append(next_event)
            next_event = held.pop(tree.seq + 1, None)
        if held:
            self.faults[key] = (
                f"run {tree.run_id}: events out of order after seq {tree.seq}; showing the tree up to there"
            )
        else:
            del self._held[key]
            self.faults.pop(key, None)
        return applied

    def _note_change(self, tree: SearchTree, event: TreeEvent) -> None:
        """Remember what ``event`` changed in the drawing of the live tree: its shape, or styles only."""
        if event.kind == "node_added":
            self._structure_dirty = True
        elif event.kind == "node_updated" and event.node_id is not None:
            if self.hide_pruned and "status" in event.changes:
                self._structure_dirty = True  # may hide or show a subtree
            self._restyle.add(event.node_id)
        elif event.kind == "best_path":
            self._best_dirty = True
        else:
            self._restyle.add("")  # nothing to restyle, but the summary changes

    def show_message(self, text: str) -> None:
        """Show one line above the tree (empty text hides it)."""
        self._fault_shown = False
        self.message.setText(text)
        self.message.setToolTip(text)
        self.message.setVisible(bool(text))

    def _show_faults(self) -> None:
        """The message line follows the current run's fault (another message stays until replaced)."""
        fault = self.faults.get(self.current) if self.current is not None else None
        if fault is not None:
            self.show_message(fault)
            self._fault_shown = True
        elif self._fault_shown:
            self.show_message("")

    def open_file(self, path: Path) -> str:
        """Load a ``.arbor-tree.jsonl`` file as runs of their own; returns the first run's key.

        Raises :class:`TreeFileError` (message ``file:line: …``) on a file that is not tree events.
        """
        events = read_jsonl(path)
        if not events:
            raise TreeFileError(f"{path}:1: no tree events in the file")
        self.add_events(events, source=path.name)
        key = f"{path.name} · {events[0].run_id}"
        self._select_run(key)
        return key

    def clear(self, *, keep_files: bool = True) -> dict[str, SearchTree]:
        """Forget the live runs (a session replay rebuilds them); returns what was removed."""
        removed = {k: t for k, t in self.runs.items() if not (keep_files and k in self.file_runs)}
        for key in removed:
            del self.runs[key]
            self.file_runs.discard(key)
            self.stale_runs.discard(key)
            self.faults.pop(key, None)
            self._held.pop(key, None)
            self.run_combo.removeItem(self.run_combo.findData(key))
        if self.current in removed:
            self.current = None
            self._select_run(next(iter(self.runs), None))
        self._show_faults()
        return removed

    def restore(self, runs: dict[str, SearchTree]) -> None:
        """Put back runs :meth:`clear` removed (a replay that failed): shown, but of an ended session."""
        for key, tree in runs.items():
            if key not in self.runs:
                self.runs[key] = tree
                self.stale_runs.add(key)
                self._add_run_item(key, tree.run_id or key)
        if self.current is None and self.runs:
            self._select_run(next(reversed(self.runs)))

    # -- drawing -----------------------------------------------------------------------------------

    def _schedule(self, *, soon: bool = False) -> None:
        if soon:
            self._urgent = True  # the user asked for it: no pacing
            self._timer.start(0)
        elif not self._timer.isActive():
            self._timer.start(RELAYOUT_MS)

    def _on_timer(self) -> None:
        # A new layout costs O(n): pace them so they take a bounded share of the time, however fast
        # events come; meanwhile updated nodes are restyled where they stand.
        wait = self._relayout_done + RELAYOUT_SPACING * self._relayout_cost - time.perf_counter()
        if self._structure_dirty and self._layout is not None and not self._urgent and wait > 0.005:
            self._restyle_in_place()
            self._timer.start(math.ceil(wait * 1000))
            return
        self.flush()

    def flush(self) -> None:
        """Bring the drawing up to date now (the timer calls this; tests and exports may too)."""
        started = time.perf_counter()
        self._timer.stop()
        self._urgent = False
        tree = self.shown
        if tree is None:
            self._layout = None
            self.canvas.set_geometry(Geometry())
            self.overview.invalidate()
        elif self._structure_dirty or self._layout is None:
            roots, children = visible_ids(tree, hide_pruned=self.hide_pruned)
            self._layout = tidy_layout(roots, children)
            geometry = build_geometry(tree, self._layout)
            self.canvas.set_geometry(geometry)
            self.canvas.selected = geometry.index.get(self.selected_id, -1) if self.selected_id else -1
            self.scene.setSceneRect(geometry.bounds)
            self.overview.invalidate()
            if self._auto_fit:
                self.fit(keep_following=True)
            self._relayout_done = time.perf_counter()
            self._relayout_cost = self._relayout_done - started
        else:
            self._restyle_in_place()
        self._structure_dirty = self._best_dirty = False
        self._restyle.clear()
        self.layout_count += 1
        self._update_summary()
        if self.selected_id is not None:
            self._show_inspector()
        self.last_flush_s = time.perf_counter() - started
        self.relaid.emit()

    def _restyle_in_place(self) -> None:
        """Updated nodes take their new colour, size and status where they are drawn (no new layout)."""
        tree, geometry = self.shown, self.canvas.geometry
        if tree is None or not (self._restyle or self._best_dirty):
            return
        for node_id in self._restyle:
            index = geometry.index.get(node_id)
            if index is not None:
                geometry.restyle(index, tree.nodes[node_id])
                self.canvas.forget_label(index)
        if self._best_dirty:
            geometry.set_best(tree.best_path)
        self._restyle.clear()
        self._best_dirty = False
        self.canvas.update()
        self.overview.invalidate()

    def fit(self, keep_following: bool = False) -> None:
        """Fit the whole tree in the view (and follow it as it grows, until the user zooms or pans)."""
        if not keep_following:
            self._auto_fit = True
        rect = self.canvas.geometry.bounds
        if rect.isEmpty():
            return
        self.graphics.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.graphics.transform().m11() > 1.5:  # a small tree: do not blow it up
            self.graphics.resetTransform()
            self.graphics.centerOn(rect.center())
        self.graphics.viewChanged.emit()

    def _stop_auto_fit(self) -> None:
        self._auto_fit = False

    def set_hide_pruned(self, hide: bool) -> None:
        if hide != self.hide_pruned:
            self.hide_pruned = hide
            self.hide_pruned_box.setChecked(hide)
            self._structure_dirty = True
            self._schedule(soon=True)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.overview.place()

    # -- selection and inspector -------------------------------------------------------------------

    def _on_click(self, point: QPointF) -> None:
        index = self.canvas.node_at(point)
        self.select_node(self.canvas.geometry.ids[index] if index >= 0 else None)

    def select_node(self, node_id: str | None) -> None:
        """Select ``node_id`` (None clears) and show it in the inspector."""
        self.selected_id = node_id
        geometry = self.canvas.geometry
        self.canvas.selected = geometry.index.get(node_id, -1) if node_id is not None else -1
        self.canvas.update()
        self._show_inspector()
        if node_id is not None:
            self.nodeSelected.emit(node_id)

    def center_on(self, node_id: str) -> bool:
        """Scroll ``node_id`` into the middle of the view; False when it is not drawn."""
        geometry = self.canvas.geometry
        index = geometry.index.get(node_id)
        if index is None:
            return False
        self.graphics.centerOn(QPointF(geometry.cx[index], geometry.cy[index]))
        return True

    def scene_pos(self, node_id: str) -> QPointF | None:
        geometry = self.canvas.geometry
        index = geometry.index.get(node_id)
        return None if index is None else QPointF(geometry.cx[index], geometry.cy[index])

    def _selected_node(self) -> TreeNode | None:
        tree = self.shown
        return tree.nodes.get(self.selected_id) if tree is not None and self.selected_id else None

    def _show_inspector(self) -> None:
        node = self._selected_node()
        tree = self.shown
        if node is None or tree is None:
            self.inspector.clear()
        else:
            parent = tree.nodes.get(node.parent) if node.parent is not None else None
            self.inspector.setHtml(inspector_html(node, parent, exploration_constant(tree.figures)))
        self._update_branch_button(node)

    def set_branch_diff_supported(self, supported: bool) -> None:
        """Whether the backend serves ``_arbor/tree/branch`` for this session's runs."""
        self.branch_diff_supported = supported
        self._update_branch_button(self._selected_node())

    def branch_diff_unavailable(self) -> str | None:
        """Why the selected node's branch diff cannot be shown (None: it can)."""
        key = self.current
        if key in self.file_runs:
            return "This run was opened from a file: its change sets are not in the backend's session."
        if key in self.stale_runs:
            return "This run is from an earlier session that could not be restored."
        if not self.branch_diff_supported:
            return "The backend does not serve branch diffs (_arbor/tree/branch)."
        return None

    def _update_branch_button(self, node: TreeNode | None) -> None:
        button = self.branch_button
        if node is None or not node.changeset_id:
            button.hide()
            return
        why = self.branch_diff_unavailable()
        button.setEnabled(why is None)
        button.setToolTip(why or f"Show the changes of branch {node.id} (change set {node.changeset_id})")
        button.show()

    def _request_branch_diff(self) -> None:
        node = self._selected_node()
        tree = self.shown
        if node is None or not node.changeset_id or tree is None or self.branch_diff_unavailable():
            return
        self.branchDiffRequested.emit(node.changeset_id, node.id, tree.run_id or "")

    # -- runs and the timeline ---------------------------------------------------------------------

    def _add_run_item(self, key: str, run_id: str) -> None:
        self.run_combo.blockSignals(True)
        self.run_combo.addItem(key if key in self.file_runs else f"run {run_id[:12]}", key)
        self.run_combo.blockSignals(False)

    def _select_run(self, key: str | None) -> None:
        if key == self.current and self.shown is not None:
            return
        self.current = key
        self.step = None
        self.selected_id = None
        self._auto_fit = True
        self.run_combo.blockSignals(True)
        self.run_combo.setCurrentIndex(self.run_combo.findData(key) if key is not None else -1)
        self.run_combo.blockSignals(False)
        tree = self.runs.get(key) if key is not None else None
        self.shown = tree
        self.slider.blockSignals(True)
        self.slider.setRange(0, len(tree.events) if tree else 0)
        self.slider.setValue(self.slider.maximum())
        self.slider.blockSignals(False)
        self._show_step()
        self._show_inspector()
        self._show_faults()
        self._structure_dirty = True
        self._set_enabled()
        self._schedule(soon=True)

    def _on_run_chosen(self, index: int) -> None:
        self._select_run(self.run_combo.itemData(index))

    def _on_slider(self, value: int) -> None:
        self.replay_to(value)

    def replay_to(self, count: int) -> None:
        """Show the current run as it was after its first ``count`` events (all of them: follow live)."""
        tree = self.runs.get(self.current) if self.current is not None else None
        if tree is None:
            return
        count = min(max(count, 0), len(tree.events))
        if self.slider.value() != count:
            self.slider.blockSignals(True)
            self.slider.setValue(count)
            self.slider.blockSignals(False)
        if count >= len(tree.events):
            self.step = None
            self.shown = tree
        else:
            self.step = count
            self.shown = tree.at(count)
        self._show_step()
        self._structure_dirty = True
        self._schedule(soon=True)

    def _show_step(self) -> None:
        self.step_label.setText(f"{self.slider.value()} / {self.slider.maximum()}")

    def _update_summary(self) -> None:
        tree = self.shown
        if tree is None:
            self.summary.setText("")
            return
        drawn = len(self.canvas.geometry)
        text = f"{len(tree.nodes)} nodes"
        if drawn != len(tree.nodes):
            text += f" ({drawn} shown)"
        if tree.architecture:
            text += f" · {tree.architecture}"
        if self.step is not None:
            text += " · replay"
        elif tree.finished:
            figures = ", ".join(f"{k} {v}" for k, v in list(tree.figures.items())[:4])
            text += f" · finished{': ' + figures if figures else ''}"
        else:
            text += " · running"
        self.summary.setText(text)

    def _set_enabled(self) -> None:
        has = self.current is not None
        for widget in (self.fit_button, self.export_button, self.slider, self.hide_pruned_box):
            widget.setEnabled(has)

    # -- export ------------------------------------------------------------------------------------

    def _export_dialog(self, kind: str) -> None:
        filters = {
            "png": "PNG image (*.png)",
            "svg": "SVG image (*.svg)",
            "jsonl": f"Tree (*{TREE_FILE_SUFFIX})",
        }
        path, _ = QFileDialog.getSaveFileName(self, "Export search tree", "", filters[kind])
        if path:
            {"png": self.export_png, "svg": self.export_svg, "jsonl": self.export_jsonl}[kind](Path(path))

    def _export_source(self) -> QRectF:
        self.flush()
        return QRectF(self.canvas.geometry.bounds)

    def export_png(self, path: Path, scale: float = 2.0) -> Path:
        """The whole tree (as shown: replay step, hidden pruned) as a PNG image."""
        source = self._export_source()
        scale = min(scale, EXPORT_MAX_PX / max(source.width(), source.height(), 1.0))
        size = QSize(max(1, math.ceil(source.width() * scale)), max(1, math.ceil(source.height() * scale)))
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self.scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
        painter.end()
        if not image.save(str(path), "PNG"):
            raise OSError(f"cannot write {path}")
        return path

    def export_svg(self, path: Path) -> Path:
        """The whole tree as an SVG drawing (labels included)."""
        from PySide6.QtSvg import QSvgGenerator

        source = self._export_source()
        generator = QSvgGenerator()
        generator.setFileName(str(path))
        generator.setSize(QSize(math.ceil(source.width()), math.ceil(source.height())))
        generator.setViewBox(QRectF(0, 0, source.width(), source.height()))
        generator.setTitle("Arbor search tree")
        painter = QPainter(generator)
        self.scene.render(painter, QRectF(0, 0, source.width(), source.height()), source)
        painter.end()
        return path

    def export_jsonl(self, path: Path) -> Path:
        """Every event of the current run (whatever the replay step) as ``.arbor-tree.jsonl``."""
        tree = self.runs.get(self.current) if self.current is not None else None
        return write_jsonl(tree.events if tree is not None else [], path)
