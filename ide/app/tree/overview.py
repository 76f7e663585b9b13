"""Moving about the drawn tree: the zooming, panning graphics view (with hover text) and the overview map.

The map shows only when the tree does not fit the view, in a corner of the view where it covers no
node; when every corner would cover one, it moves out of the drawing, into a margin beside it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, QRectF, QSize, QSizeF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QHelpEvent,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QResizeEvent,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QToolTip, QWidget

from ide.app.tree.scene import TreeCanvas, fit_scale
from ide.app.tree.style import MIN_SCALE, SELECT_COLOUR


class TreeGraphicsView(QGraphicsView):
    """Zoom with the wheel (under the cursor), pan by dragging; a click without a drag picks a node."""

    nodeClicked = Signal(QPointF)
    """Scene position of a click."""
    menuRequested = Signal(QPointF, QPoint, bool)
    """A context menu asked for: its scene position, where to show it, and whether from the keyboard (the
    menu key: for the selected node) rather than a right-click there."""
    userMoved = Signal()
    """The user zoomed or panned: stop fitting the tree to the view as it grows."""
    viewChanged = Signal()
    """The visible part of the scene moved or changed size (the overview redraws its rectangle)."""
    resized = Signal()
    """The view itself (not only its viewport) changed size: a followed tree is fitted again."""

    def __init__(self, scene: QGraphicsScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        self._press: QPoint | None = None
        self.tooltip_text: Callable[[QPointF], str] | None = None
        """The hover text at a scene point ("" for none)."""

    def zoom(self, factor: float) -> None:
        scale = self.transform().m11()
        factor = min(max(factor, 0.0005 / scale), 8.0 / scale)
        self.scale(factor, factor)
        self.viewChanged.emit()

    def fit_tree(self, rect: QRectF, focus: QPointF | None, *, whole: bool = False) -> None:
        """Show the tree drawn in ``rect`` (scene), never blown up: whole, however small that makes it,
        or never smaller than :data:`MIN_SCALE`, scrolled to ``focus`` when it does not fit then."""
        viewport = self.viewport().size()
        scale = fit_scale((rect.width(), rect.height()), viewport.width(), viewport.height())
        shown = scale if whole else max(scale, MIN_SCALE)
        self.setTransform(QTransform.fromScale(shown, shown))
        self.centerOn(focus if focus is not None and shown > scale else rect.center())
        self.viewChanged.emit()

    def visible_scene_rect(self) -> QRectF:
        """The part of the scene the viewport shows."""
        return self.mapToScene(self.viewport().rect()).boundingRect()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self.viewChanged.emit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)  # the viewport's size
        self.viewChanged.emit()

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.Resize:
            self.resized.emit()
        return handled

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_text(self.mapToScene(event.pos())) if self.tooltip_text else ""
            if text:
                QToolTip.showText(event.globalPos(), text, self.viewport())
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().viewportEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        keyboard = event.reason() == QContextMenuEvent.Reason.Keyboard
        self.menuRequested.emit(self.mapToScene(event.pos()), event.globalPos(), keyboard)
        event.accept()

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
    """A small picture of the whole tree, with the visible part outlined, where it covers no node.

    Clicking or dragging in it centres the main view on that point. The picture is drawn once per new
    layout (into an image) and the rectangle on every move, so panning costs only a blit.
    """

    panned = Signal()
    """The user moved the main view from the overview."""

    SIZE = QSize(180, 110)
    SMALL = QSize(120, 74)
    MARGIN = 6

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
        self.wanted = True
        """The user wants the map (the toolbar's Overview): shown whenever the tree does not fit."""
        self.in_margin = False
        """Out of the drawing, in a margin to the right of the viewport (no corner was free)."""
        self._placing = False
        view.viewChanged.connect(self.update)

    def invalidate(self) -> None:
        """The tree changed: draw its picture again when next shown."""
        self._image = None
        self.update()

    def set_wanted(self, wanted: bool) -> None:
        self.wanted = wanted
        self.reconsider()

    def reconsider(self) -> None:
        """Look for a free corner again (after a fit, a new layout or a resize), leaving the margin."""
        self._set_margin(False)
        self.place()

    def _set_margin(self, on: bool) -> None:
        if on != self.in_margin:
            self.in_margin = on
            self._view.setViewportMargins(0, 0, self.SMALL.width() + 2 * self.MARGIN if on else 0, 0)

    def _covers_a_node(self, rect: QRect) -> bool:
        view, geo = self._view, self._canvas.geometry
        area = view.mapToScene(rect.translated(-view.viewport().pos())).boundingRect()
        return any(area.intersects(geo.node_box(i)) for i in geo.visible(area))

    def place(self) -> None:
        """Show the map where it covers no node, or hide it when the whole tree is in view."""
        if self._placing:
            return
        self._placing = True
        try:
            self._place()
        finally:
            self._placing = False

    def _place(self) -> None:
        bounds = self._canvas.geometry.bounds
        view = self._view
        fits = (
            view.viewport().rect().adjusted(-3, -3, 3, 3).contains(view.mapFromScene(bounds).boundingRect())
        )
        if not self.wanted or bounds.isEmpty() or fits:
            self._set_margin(False)
            self.hide()
            return
        viewport = view.viewport().geometry()
        if self.in_margin:
            self.setFixedSize(self.SMALL)
            self.move(viewport.right() + self.MARGIN + 1, viewport.bottom() - self.height() - self.MARGIN)
            self.show()
            return
        m = self.MARGIN
        for size in (self.SIZE, self.SMALL):
            w, h = size.width(), size.height()
            for x, y in (
                (viewport.right() - w - m, viewport.bottom() - h - m),
                (viewport.left() + m, viewport.bottom() - h - m),
                (viewport.right() - w - m, viewport.top() + m),
                (viewport.left() + m, viewport.top() + m),
            ):
                spot = QRect(x, y, w, h)
                if not self._covers_a_node(spot.adjusted(-2, -2, 2, 2)):
                    self.setFixedSize(size)
                    self.move(x, y)
                    self.show()
                    self.raise_()
                    return
        self._set_margin(True)  # the viewport narrows; its resize places the map again
        self._place()

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
