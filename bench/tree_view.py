"""Search-tree view benchmark: a 5,000-node tree laid out and first painted; 100 live events applied.

    python bench/tree_view.py [--runs 5] [--nodes 5000]

Prints JSON: medians over the runs, offscreen. "layout_first_paint" is the coalesced redraw
(``SearchTreeView.flush``: tidy layout, geometry, fit) plus the viewport's first paint, with the tree's
events already applied; "open" also includes applying all its events. "batch_apply_100" is
``add_events`` of 100 more events to the 5,000-node tree (what happens per notification; the redraw
follows on the timer, at most every 100 ms) and "wire_validate_100" the bridge's pydantic validation of
such a batch. "relayout_tick_5000" is that timer's work on the 5,000-node tree. The peer, measured in the
same run, is 5,000 plain ``QGraphicsEllipseItem`` (positions from the same layout) added to a scene and
painted once, with no layout, labels or culling of its own. Targets: 150 ms and 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QBrush, QColor, QPainter
from PySide6.QtWidgets import QApplication, QGraphicsScene, QGraphicsView, QWidget

from ide.app.theme import apply_theme
from ide.app.tree_model import synthetic_events
from ide.app.tree_view import H_UNIT, V_UNIT, SearchTreeView
from ide.protocol.tree import TreeEvent, TreeEventBatch

FIRST_PAINT_TARGET_S = 0.150
BATCH_TARGET_S = 0.010


class PaintWatch(QObject):
    def __init__(self, widget: QWidget) -> None:
        super().__init__()
        self.painted = False
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.painted = True
        return False


def until_painted(app: QApplication, watch: PaintWatch, action: Callable[[], None]) -> float:
    watch.painted = False
    started = time.perf_counter()
    action()
    while not watch.painted:
        app.processEvents()
    return time.perf_counter() - started


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(samples), 4),
        "min": round(min(samples), 4),
        "max": round(max(samples), 4),
    }


def new_view(app: QApplication) -> tuple[SearchTreeView, PaintWatch]:
    view = SearchTreeView()
    view.resize(1280, 700)
    view.show()
    app.processEvents()
    return view, PaintWatch(view.graphics.viewport())


def extra_batch(run_id: str, first_seq: int, nodes: int) -> list[TreeEvent]:
    """100 live events on the big tree: 50 new nodes under existing ones, each then evaluated."""
    events = synthetic_events(nodes + 50, run_id=run_id, seed=11)
    added = [e for e in events if e.kind == "node_added"][nodes : nodes + 50]
    out: list[TreeEvent] = []
    for event in added:
        assert event.node is not None
        node = event.node.model_copy(
            update={"id": f"x{event.node.id}", "parent": f"n{len(out) * 37 % nodes}"}
        )
        out.append(TreeEvent(run_id=run_id, seq=first_seq + len(out) + 1, kind="node_added", node=node))
        out.append(
            TreeEvent(
                run_id=run_id,
                seq=first_seq + len(out) + 1,
                kind="node_updated",
                node_id=node.id,
                changes={"visits": 1, "value": 0.6, "reward": 0.6, "reward_raw": 6.0, "status": "evaluated"},
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=5000)
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(["bench"])
    assert isinstance(app, QApplication)
    apply_theme(app)
    events = synthetic_events(args.nodes, run_id="bench")
    batch = extra_batch("bench", len(events), args.nodes)
    wire = {"session_id": "s", "events": [e.model_dump(mode="json", exclude_defaults=True) for e in batch]}

    first_paint, opened, apply100, validate100, tick, peer, painted = [], [], [], [], [], [], []
    for _ in range(args.runs):
        view, watch = new_view(app)
        view.add_events(events)
        first_paint.append(until_painted(app, watch, view.flush))
        painted.append(view.canvas.last_painted)
        started = time.perf_counter()
        view.add_events(batch)
        apply100.append(time.perf_counter() - started)
        tick.append(until_painted(app, watch, view.flush))
        view.close()
        view.deleteLater()

        view, watch = new_view(app)

        def open_all(view: SearchTreeView = view) -> None:
            view.add_events(events)
            view.flush()

        opened.append(until_painted(app, watch, open_all))
        view.close()
        view.deleteLater()

        started = time.perf_counter()
        TreeEventBatch.model_validate(wire)
        validate100.append(time.perf_counter() - started)

        layout = view._layout
        assert layout is not None
        scene = QGraphicsScene()
        graphics = QGraphicsView(scene)
        graphics.resize(1280, 700)
        graphics.show()
        app.processEvents()
        peer_watch = PaintWatch(graphics.viewport())

        def plain_items(
            scene: QGraphicsScene = scene, graphics: QGraphicsView = graphics, layout: object = layout
        ) -> None:
            for x, d in zip(layout.x, layout.depth, strict=True):  # type: ignore[attr-defined]
                item = scene.addEllipse(x * H_UNIT - 8, d * V_UNIT - 8, 16, 16)
                item.setBrush(QBrush(QColor("#7ea6e0")))
            graphics.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            graphics.fitInView(scene.itemsBoundingRect())

        peer.append(until_painted(app, peer_watch, plain_items))
        graphics.close()
        graphics.deleteLater()
        app.processEvents()

    from PySide6 import __version__ as pyside_version

    result = {
        "runs": args.runs,
        "tree": {"nodes": args.nodes, "events": len(events), "painted_nodes_first_paint": painted[0]},
        "machine": {
            "python": platform.python_version(),
            "pyside6": pyside_version,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "layout_first_paint_s": {
            **summary(first_paint),
            "target_s": FIRST_PAINT_TARGET_S,
            "meets_target": statistics.median(first_paint) <= FIRST_PAINT_TARGET_S,
        },
        "open_apply_layout_paint_s": summary(opened),
        "peer_5000_qgraphicsellipseitems_add_paint_s": summary(peer),
        "ratio_first_paint_to_peer": round(statistics.median(first_paint) / statistics.median(peer), 2),
        "batch_apply_100_s": {
            **summary(apply100),
            "target_s": BATCH_TARGET_S,
            "meets_target": statistics.median(apply100) <= BATCH_TARGET_S,
        },
        "wire_validate_100_s": summary(validate100),
        "relayout_tick_after_batch_s": summary(tick),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
