"""The search-tree view at the Search tree dock's size, and the check that its captions can be read."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from ide.app.tree.style import LINE_H, MIN_SCALE
from ide.app.tree.view import SearchTreeView


def dock_sized(qtbot: Any) -> SearchTreeView:
    """A view the size the Search tree dock has in a 1280×800 window (scripts/screenshot.py)."""
    widget = SearchTreeView()
    qtbot.addWidget(widget)
    widget.resize(1280, 330)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def assert_captions_readable(view: SearchTreeView, node_ids: list[str], *, all_in_view: bool) -> None:
    """Every node's caption is painted at a readable size, with at least 24 characters before any
    ellipsis (or all of it), and, with ``all_in_view``, inside the viewport."""
    scale = view.graphics.transform().m11()
    assert scale >= MIN_SCALE
    assert LINE_H * scale >= 11, "a caption line is at least 11 pixels high on screen"
    geometry, canvas = view.canvas.geometry, view.canvas
    viewport = view.graphics.viewport().rect()
    for node_id in node_ids:
        i = geometry.index[node_id]
        if not all_in_view:
            view.center_on(node_id)
        QApplication.processEvents()  # the scene takes a new drawing's size on the next pass
        view.graphics.viewport().repaint()
        lines = canvas.last_captions.get(i)
        assert lines, f"{node_id}'s caption is painted"
        full = geometry.label[i]
        shown = " ".join(line.rstrip("…") for line in lines)
        assert shown.replace(" ", "") == full.replace(" ", "") or len(shown) >= 24, (node_id, lines)
        width = max(canvas._metrics.horizontalAdvance(line) for line in lines)
        rect = geometry.caption_rect(i)
        painted = QRectF(geometry.cx[i] - width / 2, rect.top(), width, len(lines) * LINE_H)
        on_screen = view.graphics.mapFromScene(painted).boundingRect()
        assert viewport.contains(on_screen), (node_id, on_screen, viewport)
