"""Search-tree view benchmark: a 5,000-node tree laid out and first painted; 100 live events applied.

    python bench/tree_view.py [--runs 5] [--nodes 5000]

Prints JSON: medians over the runs, offscreen. "layout_first_paint" is the coalesced redraw
(``SearchTreeView.flush``: tidy layout, geometry, fit) plus the viewport's first paint, with the tree's
events already applied — the default fit keeps captions readable, so it paints the part of the tree in
view; "whole_tree_paint" is then **Whole tree** (every node painted, as dots); "open" also includes
applying all its events. "batch_apply_100" is
``add_events`` of 100 more events to the 5,000-node tree (what happens per notification; the redraw
follows on the timer, at most every 100 ms) and "wire_validate_100" the bridge's pydantic validation of
such a batch. "relayout_tick_5000" is that timer's work on the 5,000-node tree. The peer, measured in the
same run, is 5,000 plain ``QGraphicsEllipseItem`` (positions from the same layout) added to a scene and
painted once, with no layout, labels or culling of its own. Targets: 150 ms and 10 ms.

"live_run_2000" feeds a 2,000-node synthetic LATS run to a shown view as the bridge does (each batch of
20 events validated as a ``TreeEventBatch`` then given to ``add_events``), one batch per 10 ms timer tick,
while a 5 ms heartbeat timer records when it runs: the longest gap between two beats is the longest the
event loop stalled (layout, geometry and painting included). Target: 50 ms. "median_tick" is the median
coalesced redraw (``SearchTreeView.flush``) during that run. It runs first, after ``settle_heap()``
(ide/gcpolicy.py) — the garbage-collector policy the window applies once its first session is
ready — so Python's full collections, which fall inside the run, cost what the app's would. The runs go
one after another into one dock that keeps them all, as a session's runs do, and each finished run is
frozen (``settle_run``, as ide.app.main arranges). The collector's thresholds are Python's defaults, as
in the app; "longest_full_gc" is the longest full collection that fell inside a run. "peak_rss_mb" is
the process's peak resident memory once those runs are over (all of them kept, as in the dock).
"live_run_2000_without_full_gc" repeats it with the collector off: the view's own work alone.
"""

from __future__ import annotations

import argparse
import gc
import itertools
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

from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QPainter
from PySide6.QtWidgets import QApplication, QGraphicsScene, QGraphicsView, QWidget

from ide.app.theme import apply_theme
from ide.app.tree.model import synthetic_events
from ide.app.tree.style import H_UNIT, V_UNIT
from ide.app.tree.view import SearchTreeView
from ide.gcpolicy import settle_heap, settle_run
from ide.protocol.tree import TreeEvent, TreeEventBatch

FIRST_PAINT_TARGET_S = 0.150
BATCH_TARGET_S = 0.010
LIVE_STALL_TARGET_S = 0.050
LIVE_NODES = 2000
LIVE_BATCH = 20
LIVE_FEED_MS = 10
HEARTBEAT_MS = 5


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


def extra_batch(events: list[TreeEvent], run_id: str, nodes: int) -> list[TreeEvent]:
    """100 live events on the big tree: 50 new nodes under existing ones, each then evaluated."""
    depth = {e.node.id: e.node.depth for e in events if e.node is not None}
    first_seq = len(events) - 1  # before the run's finished event: a finished run takes no more
    more = synthetic_events(nodes + 50, run_id=run_id, seed=11)
    added = [e for e in more if e.kind == "node_added"][nodes : nodes + 50]
    out: list[TreeEvent] = []
    for event in added:
        assert event.node is not None
        parent = f"n{len(out) * 37 % nodes}"
        node = event.node.model_copy(
            update={"id": f"x{event.node.id}", "parent": parent, "depth": depth[parent] + 1}
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


_live_view: list[SearchTreeView] = []


def shared_view(app: QApplication) -> tuple[SearchTreeView, None]:
    """The one dock the live runs go to, one after another, as a session's runs do in the window; it
    keeps them all, and each finished run is frozen as ide.app.main arranges (``settle_run``)."""
    if not _live_view:
        view, _watch = new_view(app)
        view.runFinished.connect(lambda *_: settle_run())
        _live_view.append(view)
    return _live_view[0], None


def live_run(app: QApplication, nodes: int = LIVE_NODES) -> dict[str, float]:
    """Feed a live run batch by batch with a heartbeat running; the longest gap between beats."""
    # The notifications as the bridge receives them: JSON text (strings are not walked by the collector),
    # decoded and validated per batch, so the heap holds what the window holds and nothing of the bench.
    events = synthetic_events(nodes, run_id=f"live{len(_live_view[0].runs) if _live_view else 0}")
    wire = [
        json.dumps(
            {"session_id": "s", "events": [e.model_dump(mode="json", exclude_defaults=True) for e in chunk]}
        )
        for chunk in (events[i : i + LIVE_BATCH] for i in range(0, len(events), LIVE_BATCH))
    ]
    del events
    view, _watch = shared_view(app)
    beats: list[float] = []
    ticks: list[float] = []

    def record_tick() -> None:
        ticks.append(view.last_flush_s)

    view.relaid.connect(record_tick)
    pauses: list[float] = []
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
        elif info["generation"] == 2:
            pauses.append(time.perf_counter() - gc_started[0])

    gc.callbacks.append(on_gc)
    loop = QEventLoop()
    heartbeat = QTimer()
    heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
    heartbeat.timeout.connect(lambda: beats.append(time.perf_counter()))
    feeder = QTimer()
    feeder.setTimerType(Qt.TimerType.PreciseTimer)
    pending = list(reversed(wire))

    def feed() -> None:
        view.add_events(TreeEventBatch.model_validate(json.loads(pending.pop())).events)
        if not pending:
            feeder.stop()

    def caught_up() -> None:
        if not feeder.isActive() and len(view.canvas.geometry) == nodes and view.shown.finished:
            loop.quit()

    feeder.timeout.connect(feed)
    view.relaid.connect(caught_up)
    started = time.perf_counter()
    beats.append(started)
    heartbeat.start(HEARTBEAT_MS)
    feeder.start(LIVE_FEED_MS)
    loop.exec()
    heartbeat.stop()
    gc.callbacks.remove(on_gc)
    beats.append(time.perf_counter())
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    view.relaid.disconnect(record_tick)
    view.relaid.disconnect(caught_up)
    app.processEvents()
    return {
        "longest_stall": max(gaps),
        "median_tick": statistics.median(ticks),
        "longest_tick": max(ticks),
        "longest_full_gc": max(pauses, default=0.0),
        "ticks": len(ticks),
        "batches": len(wire),
        "duration": beats[-1] - started,
    }


def peak_rss_mb() -> float | None:
    """The process's peak resident memory so far, in MB (None where ``resource`` is missing: Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def live_summary(live: list[dict[str, float]]) -> dict[str, object]:
    return {
        "nodes": LIVE_NODES,
        "events": len(synthetic_events(LIVE_NODES, run_id="live")),
        "batch_events": LIVE_BATCH,
        "feed_every_ms": LIVE_FEED_MS,
        "heartbeat_ms": HEARTBEAT_MS,
        "longest_stall_s": {
            **summary([r["longest_stall"] for r in live]),
            "target_s": LIVE_STALL_TARGET_S,
            "meets_target": statistics.median(r["longest_stall"] for r in live) <= LIVE_STALL_TARGET_S,
        },
        "median_tick_s": summary([r["median_tick"] for r in live]),
        "longest_tick_s": summary([r["longest_tick"] for r in live]),
        "longest_full_gc_s": summary([r["longest_full_gc"] for r in live]),
        "redraws": round(statistics.median(r["ticks"] for r in live)),
        "run_duration_s": summary([r["duration"] for r in live]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=5000)
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(["bench"])
    assert isinstance(app, QApplication)
    apply_theme(app)
    # The live runs come first, in the state the window is in once start-up is over (settle_heap, as
    # ide.app.main does when the first session is ready), before the bench builds its 5,000-node trees.
    new_view(app)[0].close()
    settle_heap()
    live = [live_run(app) for _ in range(args.runs)]
    live_peak_rss_mb = peak_rss_mb()
    events = synthetic_events(args.nodes, run_id="bench")
    batch = extra_batch(events, "bench", args.nodes)
    wire = {"session_id": "s", "events": [e.model_dump(mode="json", exclude_defaults=True) for e in batch]}

    first_paint, opened, apply100, validate100, tick, peer, painted = [], [], [], [], [], [], []
    whole: list[float] = []
    for _ in range(args.runs):
        view, watch = new_view(app)
        view.add_events(events[:-1])
        first_paint.append(until_painted(app, watch, view.flush))
        painted.append(view.canvas.last_painted)
        whole.append(until_painted(app, watch, view.fit_whole))
        assert view.canvas.last_painted == args.nodes
        view.fit()
        started = time.perf_counter()
        view.add_events(batch)
        apply100.append(time.perf_counter() - started)
        assert len(view.shown.nodes) == args.nodes + 50, view.faults
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
        "whole_tree_paint_s": {
            **summary(whole),
            "target_s": FIRST_PAINT_TARGET_S,
            "meets_target": statistics.median(whole) <= FIRST_PAINT_TARGET_S,
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
        "live_run_2000": {**live_summary(live), "peak_rss_mb": live_peak_rss_mb},
    }
    # The view's own work, without Python's full collections (which walk every object in the process,
    # the SDK's and the trees' alike, and cost what the heap costs, wherever they happen to fall).
    gc.collect()
    gc.disable()
    try:
        result["live_run_2000_without_full_gc"] = live_summary([live_run(app) for _ in range(args.runs)])
    finally:
        gc.enable()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
