"""The drawn tree: scene geometry precomputed after a layout, and the one item that paints it, culled.

:class:`TreeCanvas` paints the whole tree, culled to ``option.exposedRect`` through a per-depth index (a
tidy layout puts each depth on its own row, or column when the tree is drawn left to right, so the
visible nodes are a bisect per depth away), with levels of detail: coloured squares when nodes are a
few pixels wide, shapes and outlines when they are larger, captions (the label, or an action's tool and
main argument, wrapped on two lines) and scores only when the text would be legible. The scene renders
to PNG and SVG files for export.
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

from ide.app.tree.badges import draw_badge
from ide.app.tree.model import Layout
from ide.app.tree.style import (
    BADGES,
    BEST_COLOUR,
    CAPTION_GAP,
    CAPTION_H,
    CAPTION_LINES,
    CAPTION_W,
    DASHED,
    DEFAULT_PEN,
    EDGE_COLOUR,
    FONT_PT,
    FORK_BADGE,
    H_UNIT,
    LABEL_PX,
    LINE_H,
    MAX_R,
    POLYGONS,
    ROW_UNIT,
    SELECT_COLOUR,
    SHAPE_PX,
    STATUS_PENS,
    STEER_BADGES,
    TEXT_COLOUR,
    V_UNIT,
    node_style,
)
from ide.app.tree.verdict import Marks
from ide.protocol.tree import SearchTree, TreeNode

EXPORT_MAX_PX = 8000
"""Longest side, in pixels, of an exported PNG image."""
PAD = max(CAPTION_W / 2, MAX_R + CAPTION_H + 8) + 2
"""How far a node's drawing (ring, caption) reaches from its centre, in scene pixels."""
CAPTION_BACKGROUND = QColor(255, 255, 255, 215)

EdgeRow = tuple[list[QLineF], list[float], list[float], list[bool]]


def extent(layout: Layout, horizontal: bool) -> tuple[float, float]:
    """Scene width and height of ``layout`` drawn top-down or left to right (captions included)."""
    if len(layout) == 0:
        return 0.0, 0.0
    breadth = max(layout.x) - min(layout.x)
    depth = max(layout.depth)
    if horizontal:
        return depth * H_UNIT + CAPTION_W + 8, breadth * ROW_UNIT + 2 * MAX_R + CAPTION_H + 17
    return breadth * H_UNIT + CAPTION_W + 8, depth * V_UNIT + 2 * MAX_R + CAPTION_H + 17


def fit_scale(size: tuple[float, float], width: float, height: float) -> float:
    """The scale at which a drawing of ``size`` fits ``width`` × ``height`` (at most 1: never blown up)."""
    return min(width / max(size[0], 1.0), height / max(size[1], 1.0), 1.0)


def prefers_left_to_right(layout: Layout, width: float, height: float) -> bool:
    """Whether ``layout`` fits a ``width`` × ``height`` view better left to right than top-down: deep
    chains do, wide trees do not. Equal fits (a tree that fits either way) go by shape."""
    across = fit_scale(extent(layout, True), width, height)
    down = fit_scale(extent(layout, False), width, height)
    if not math.isclose(across, down, rel_tol=0.02):
        return across > down
    depth = max(layout.depth, default=0)
    return depth + 1 > max(1.0, max(layout.x, default=0.0) - min(layout.x, default=0.0) + 1)


def wrap_caption(text: str, metrics: QFontMetricsF, width: float, lines: int = CAPTION_LINES) -> list[str]:
    """``text`` on at most ``lines`` lines of ``width`` pixels, the last one elided with "…" if text is
    left: broken at a space, or where a space would leave a line too short, after a ``/``, ``.``, ``_``
    or ``-`` (``read_file src/`` / ``pkg/stats.py``), else anywhere."""
    out: list[str] = []
    rest = text.strip()
    while rest and len(out) < lines:
        if metrics.horizontalAdvance(rest) <= width:
            out.append(rest)
            break
        if len(out) == lines - 1:
            out.append(metrics.elidedText(rest, Qt.TextElideMode.ElideRight, width))
            break
        lo, hi = 1, len(rest)
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if metrics.horizontalAdvance(rest[:mid]) <= width:
                lo = mid
            else:
                hi = mid - 1
        cut = lo
        space = rest.rfind(" ", 0, cut + 1)
        if space >= 0.6 * cut:
            out.append(rest[:space])
            rest = rest[space + 1 :].lstrip()
            continue
        mark = max(rest.rfind(c, 0, cut) for c in "/._-")
        if mark + 1 >= cut / 2 and mark > space:
            cut = mark + 1
        elif space > 0:
            out.append(rest[:space])
            rest = rest[space + 1 :].lstrip()
            continue
        out.append(rest[:cut])
        rest = rest[cut:]
    return out


@dataclass
class Geometry:
    """What the canvas paints, precomputed after a layout: scene positions, styles and a depth index.

    Styles change in place (:meth:`restyle`, :meth:`set_best`) when nodes are updated; only a change of
    shape (a node added, a pruned node hidden) or of direction needs a new Geometry.
    """

    ids: list[str] = field(default_factory=list)
    cx: list[float] = field(default_factory=list)
    cy: list[float] = field(default_factory=list)
    r: list[float] = field(default_factory=list)
    fill: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    """Each node's caption (before wrapping)."""
    score: list[str] = field(default_factory=list)
    """Each node's score as drawn in it (reward 0–10), or ""."""
    steer: list[str] = field(default_factory=list)
    """What the user asked of each node during the run (``prune``, ``expand``), or ""."""
    forked_root: int = -1
    """The index of a continued run's root (it carries the fork mark), else -1."""
    parent: list[int] = field(default_factory=list)
    best: list[bool] = field(default_factory=list)
    best_path: tuple[str, ...] = ()
    """The path :attr:`best` marks."""
    index: dict[str, int] = field(default_factory=dict)
    rows: list[tuple[list[float], list[int]]] = field(default_factory=list)
    """Per depth: the nodes' positions across (sorted) and their indices."""
    edges: list[EdgeRow | None] = field(default_factory=list)
    """Per depth, built when first painted: lines from parents to the depth's nodes, extents across
    and best flags."""
    bounds: QRectF = field(default_factory=QRectF)
    horizontal: bool = False
    """Drawn left to right (depth along x) rather than top-down."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def depth_unit(self) -> float:
        return H_UNIT if self.horizontal else V_UNIT

    def across(self, index: int) -> float:
        """Node ``index``'s position across the depths (x top-down, y left to right)."""
        return self.cy[index] if self.horizontal else self.cx[index]

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
                a, b = self.across(p), self.across(i)
                lo.append(min(a, b))
                hi.append(max(a, b))
                flags.append(best[i] and best[p])
            row = self.edges[depth] = (lines, lo, hi, flags)
        return row

    def depth_range(self, rect: QRectF, pad: float = PAD) -> tuple[int, int, float, float]:
        """The depths ``rect`` (scene) shows, grown by ``pad``, and its extent across them."""
        if self.horizontal:
            m0, m1, c0, c1 = rect.left(), rect.right(), rect.top(), rect.bottom()
        else:
            m0, m1, c0, c1 = rect.top(), rect.bottom(), rect.left(), rect.right()
        unit = self.depth_unit
        d0 = max(0, math.floor((m0 - pad) / unit))
        d1 = min(len(self.rows) - 1, math.ceil((m1 + pad) / unit))
        return d0, d1, c0 - pad, c1 + pad

    def visible(self, rect: QRectF, pad: float = PAD) -> list[int]:
        """Indices of the nodes whose drawing may reach into ``rect`` (scene coordinates)."""
        if not self.ids:
            return []
        d0, d1, c0, c1 = self.depth_range(rect, pad)
        found: list[int] = []
        for d in range(d0, d1 + 1):
            xs, members = self.rows[d]
            found.extend(members[bisect_left(xs, c0) : bisect_right(xs, c1)])
        return found

    def node_rect(self, index: int) -> QRectF:
        """Node ``index``'s shape (with its rings) in scene coordinates."""
        x, y, reach = self.cx[index], self.cy[index], self.r[index] + 7
        return QRectF(x - reach, y - reach, 2 * reach, 2 * reach)

    def caption_rect(self, index: int) -> QRectF:
        """Where node ``index``'s caption may be drawn, in scene coordinates."""
        return QRectF(
            self.cx[index] - CAPTION_W / 2, self.cy[index] + self.r[index] + CAPTION_GAP, CAPTION_W, CAPTION_H
        )

    def node_box(self, index: int) -> QRectF:
        """Everything drawn for node ``index``: its shape, rings and caption."""
        return self.node_rect(index).united(self.caption_rect(index))

    def restyle(self, index: int, node: TreeNode, trust: str | None = None) -> None:
        """Take the updated ``node``'s style (drawn at ``index``, with its ``trust``) without a new layout."""
        style = node_style(node, trust)
        self.r[index], self.fill[index], self.kind[index], self.status[index] = style[:4]
        self.label[index], self.score[index] = style[4], style[5]
        self.steer[index] = node.steer or ""

    def set_best(self, path: Iterable[str]) -> None:
        """Mark the best path (edges along it are rebuilt when next painted); nothing to do when it is the
        path marked already."""
        path = tuple(path)
        if path == self.best_path:
            return
        self.best_path = path
        on = set(path)
        self.best = [node_id in on for node_id in self.ids]
        self.edges = [None] * len(self.rows)


def build_geometry(
    tree: SearchTree,
    layout: Layout,
    *,
    horizontal: bool = False,
    marks: Marks | None = None,
) -> Geometry:
    """Scene coordinates and styles of ``layout``'s nodes, top-down or left to right, and the per-depth
    index used for culling; trusts and best path from ``marks`` (default: worked out here)."""
    marks = marks or Marks().update(tree, None)
    nodes = tree.nodes
    geo = Geometry(horizontal=horizontal)
    if len(layout) == 0:
        return geo
    ids = layout.ids
    geo.ids = ids
    if horizontal:
        geo.cx = [d * H_UNIT for d in layout.depth]
        geo.cy = [x * ROW_UNIT for x in layout.x]
        across = geo.cy
    else:
        geo.cx = [x * H_UNIT for x in layout.x]
        geo.cy = [d * V_UNIT for d in layout.depth]
        across = geo.cx
    geo.parent = layout.parent
    geo.index = {node_id: i for i, node_id in enumerate(ids)}
    styles = [node_style(nodes[node_id], marks.trust(node_id)) for node_id in ids]
    if styles:
        r, fill, kind, status, label, score = (list(column) for column in zip(*styles, strict=True))
        geo.r, geo.fill, geo.kind, geo.status, geo.label, geo.score = r, fill, kind, status, label, score
    geo.steer = [nodes[node_id].steer or "" for node_id in ids]
    if tree.forked_from is not None and tree.root is not None:
        geo.forked_root = geo.index.get(tree.root, -1)
    geo.best_path = tuple(marks.best_path)
    best = set(geo.best_path)
    geo.best = [node_id in best for node_id in ids]
    row_members: list[list[int]] = [[] for _ in range(max(layout.depth) + 1)]
    for i, d in enumerate(layout.depth):
        row_members[d].append(i)  # layout order is preorder: each depth comes out in order across
    for members in row_members:
        xs = [across[i] for i in members]
        if any(a > b for a, b in itertools.pairwise(xs)):
            members.sort(key=across.__getitem__)
            xs = [across[i] for i in members]
        geo.rows.append((xs, members))
    geo.edges = [None] * len(row_members)
    left, right, top, bottom = min(geo.cx), max(geo.cx), min(geo.cy), max(geo.cy)
    side = CAPTION_W / 2 + 4
    above, below = MAX_R + 8, MAX_R + CAPTION_GAP + CAPTION_H + 4
    geo.bounds = QRectF(left - side, top - above, right - left + 2 * side, bottom - top + above + below)
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
        self.last_captions: dict[int, list[str]] = {}
        """The caption lines the last paint drew, by node index (empty when captions were not drawn)."""
        self._font = QFont()
        self._font.setPointSizeF(FONT_PT)
        self._metrics = QFontMetricsF(self._font)
        self._score_font = QFont(self._font)
        self._score_font.setPointSizeF(FONT_PT - 1.5)
        self._score_font.setBold(True)
        self._captions: dict[int, tuple[list[str], float]] = {}
        self._brushes: dict[str, QBrush] = {}
        self._pens: dict[tuple[str, float], QPen] = {}

    def forget_label(self, index: int) -> None:
        """Node ``index``'s caption changed: wrap it again when next painted."""
        self._captions.pop(index, None)

    def set_geometry(self, geometry: Geometry) -> None:
        self.prepareGeometryChange()
        self.geometry = geometry
        self._captions = {}
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(self.geometry.bounds)

    def caption_lines(self, index: int) -> list[str]:
        """Node ``index``'s caption as drawn: wrapped on at most two lines, elided when longer."""
        return self._caption(index)[0]

    def _caption(self, index: int) -> tuple[list[str], float]:
        cached = self._captions.get(index)
        if cached is None:
            lines = wrap_caption(self.geometry.label[index], self._metrics, CAPTION_W)
            width = max((self._metrics.horizontalAdvance(line) for line in lines), default=0.0)
            cached = self._captions[index] = (lines, width)
        return cached

    def node_at(self, point: QPointF, reach: float = 0.0) -> int:
        """Index of the node under ``point`` (scene coordinates; its shape or caption), or -1. ``reach``
        (scene units) is how near a node's centre counts as on it however small it is drawn: a zoomed-out
        tree's nodes are a few pixels wide, and hovering one must still find it."""
        geo = self.geometry
        best, best_distance = -1, float("inf")
        for i in geo.visible(QRectF(point, point), max(PAD, reach)):
            distance = math.hypot(geo.cx[i] - point.x(), geo.cy[i] - point.y())
            lines, width = self._caption(i)
            caption = geo.caption_rect(i)
            caption = QRectF(geo.cx[i] - width / 2 - 2, caption.top(), width + 4, max(len(lines), 1) * LINE_H)
            hit = distance <= max(geo.r[i] * 1.3, 6.0, reach) or caption.contains(point)
            if hit and distance < best_distance:
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
        self.last_captions = {}
        if not geo.ids:
            self.last_painted = 0
            return
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        exposed = option.exposedRect  # type: ignore[attr-defined]
        d0, d1, c0, c1 = geo.depth_range(exposed)
        visible: list[int] = []
        for d in range(d0, d1 + 1):
            xs, members = geo.rows[d]
            visible.extend(members[bisect_left(xs, c0) : bisect_right(xs, c1)])
        self.last_painted = len(visible)
        self._paint_edges(painter, geo, lod, c0, c1, d0, min(len(geo.rows) - 1, d1 + 1))
        if not visible:
            return
        if H_UNIT * lod * 0.15 < SHAPE_PX:
            self._paint_dots(painter, geo, visible)
        else:
            self._paint_shapes(painter, geo, visible, lod)
        if FONT_PT * lod >= LABEL_PX:
            self._paint_captions(painter, geo, visible)

    def _paint_edges(
        self, painter: QPainter, geo: Geometry, lod: float, c0: float, c1: float, d0: int, d1: int
    ) -> None:
        normal: list[QLineF] = []
        best: list[QLineF] = []
        for d in range(max(1, d0), d1 + 1):
            lines, lo, hi, flags = geo.edge_row(d)
            if not lines:
                continue
            if lo and min(lo) >= c0 and max(hi) <= c1 and not any(flags):
                normal.extend(lines)
                continue
            for line, a, b, flag in zip(lines, lo, hi, flags, strict=True):
                if b >= c0 and a <= c1:
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
            if geo.status[i] in DASHED:
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
            badge = BADGES.get(geo.status[i])
            if badge is not None:
                draw_badge(painter, badge[1], QPointF(x + radius * 0.85, y - radius * 0.85), badge[0])
            steer = STEER_BADGES.get(geo.steer[i])
            if steer is not None:
                draw_badge(painter, steer[1], QPointF(x + radius * 0.85, y + radius * 0.85), steer[0])
            if i == geo.forked_root:
                corner = QPointF(x - radius * 0.85, y - radius * 0.85)
                draw_badge(painter, FORK_BADGE[1], corner, FORK_BADGE[0])
        if self.selected >= 0 and self.selected in set(visible):
            i = self.selected
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(self._pen(SELECT_COLOUR, 2.5, cosmetic=True))
            painter.drawEllipse(QPointF(cx[i], cy[i]), r[i] + 6, r[i] + 6)

    def _paint_captions(self, painter: QPainter, geo: Geometry, visible: list[int]) -> None:
        cx, cy, r = geo.cx, geo.cy, geo.r
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(CAPTION_BACKGROUND)
        placed: list[tuple[int, list[str], float]] = []
        for i in visible:
            lines, width = self._caption(i)
            if lines:
                placed.append((i, lines, width))
                top = cy[i] + r[i] + CAPTION_GAP
                painter.drawRect(QRectF(cx[i] - width / 2 - 2, top, width + 4, len(lines) * LINE_H))
        painter.setFont(self._font)
        painter.setPen(self._pen(TEXT_COLOUR, 1.0))
        for i, lines, _width in placed:
            top = cy[i] + r[i] + CAPTION_GAP
            for k, line in enumerate(lines):
                painter.drawText(
                    QRectF(cx[i] - CAPTION_W / 2 - 20, top + k * LINE_H, CAPTION_W + 40, LINE_H),
                    Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter,
                    line,
                )
            self.last_captions[i] = lines
        scored = [i for i in visible if geo.score[i]]
        if scored:
            painter.setFont(self._score_font)
            for i in scored:
                painter.drawText(
                    QRectF(cx[i] - r[i], cy[i] - r[i], 2 * r[i], 2 * r[i]),
                    Qt.AlignmentFlag.AlignCenter,
                    geo.score[i],
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
