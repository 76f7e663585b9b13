"""The drawn tree: scene geometry precomputed after a layout, and the one item that paints it, culled.

:class:`TreeCanvas` paints the whole tree, culled to ``option.exposedRect`` through a per-row index (a
tidy layout puts each depth on its own row, so the visible nodes are a bisect per row away), with levels
of detail: coloured squares when nodes are a few pixels wide, shapes and outlines when they are larger,
labels and edge labels (the action's tool) only when the text would be legible. The scene renders to
PNG and SVG files for export.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QLineF, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QImage, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene, QStyleOptionGraphicsItem, QWidget

from ide.app.tree_model import Layout
from ide.app.tree_style import (
    BEST_COLOUR,
    DEFAULT_PEN,
    EDGE_COLOUR,
    FONT_PT,
    H_UNIT,
    LABEL_PX,
    MAX_R,
    POLYGONS,
    SELECT_COLOUR,
    SHAPE_PX,
    STATUS_PENS,
    TEXT_COLOUR,
    V_UNIT,
    node_style,
)
from ide.protocol.tree import SearchTree, TreeNode

EXPORT_MAX_PX = 8000
"""Longest side, in pixels, of an exported PNG image."""

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


def render_png(scene: QGraphicsScene, source: QRectF, path: Path, scale: float = 2.0) -> Path:
    """Render the ``source`` part of ``scene`` as a PNG image, at most :data:`EXPORT_MAX_PX` a side."""
    scale = min(scale, EXPORT_MAX_PX / max(source.width(), source.height(), 1.0))
    size = QSize(max(1, math.ceil(source.width() * scale)), max(1, math.ceil(source.height() * scale)))
    image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    scene.render(painter, QRectF(0, 0, size.width(), size.height()), source)
    painter.end()
    if not image.save(str(path), "PNG"):
        raise OSError(f"cannot write {path}")
    return path


def render_svg(scene: QGraphicsScene, source: QRectF, path: Path) -> Path:
    """Render the ``source`` part of ``scene`` as an SVG drawing (labels included)."""
    from PySide6.QtSvg import QSvgGenerator

    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(math.ceil(source.width()), math.ceil(source.height())))
    generator.setViewBox(QRectF(0, 0, source.width(), source.height()))
    generator.setTitle("Arbor search tree")
    painter = QPainter(generator)
    scene.render(painter, QRectF(0, 0, source.width(), source.height()), source)
    painter.end()
    return path
