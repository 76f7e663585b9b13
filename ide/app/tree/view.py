"""The search-tree dock: a run's tree drawn live, inspected node by node, replayed step by step.

Live events are applied to the model at once (cheap) and drawn on a coalescing timer. An update restyles
its node where it stands (colour, size, status: O(changed), plus one O(n) pass for what the tree verified
and its best path, :mod:`ide.app.tree.verdict`); only a new node, or a pruned subtree hidden,
needs a new layout, and those are paced to at most one per :data:`RELAYOUT_MS` and to a bounded share of
the time (:data:`RELAYOUT_SPACING`), however many batches arrive in between. Duplicated live events are
ignored, early ones held until the gap fills, and an event that does not fit stops its run with a line in
the dock (:class:`~ide.app.tree.runs.RunFeed`).

The default fit keeps captions readable: it never shrinks the drawing below
:data:`~ide.app.tree.style.MIN_SCALE` (it scrolls to the selected node, the best path's end or the
newest node instead), and the direction is chosen to fit the dock — left to right for deep chains,
top-down for wide trees — unless the toolbar overrides it. Hovering a node shows a summary of it; an
overview map, shown only when the tree does not fit, sits where it covers no node, and pans the view.

The drawing is in :mod:`ide.app.tree.scene` (styles in :mod:`ide.app.tree.style`), the view and the
overview in :mod:`ide.app.tree.overview`, the inspector in :mod:`ide.app.tree.inspector`, the toolbar
and the timeline in :mod:`ide.app.tree.toolbar`, a node's actions in :mod:`ide.app.tree.node_actions`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QGraphicsScene, QLabel, QSplitter, QWidget

from ide.app.tree.inspector import TreeInspector, exploration_constant, node_tooltip, uses_uct
from ide.app.tree.lineage import NOT_IN_SESSION, run_rows, titles
from ide.app.tree.model import Layout, tidy_layout, visible_ids
from ide.app.tree.node_actions import NodeActions
from ide.app.tree.overview import TreeGraphicsView, TreeOverview
from ide.app.tree.runs import RunFeed, figures_text, run_summary
from ide.app.tree.scene import (
    Geometry,
    TreeCanvas,
    build_geometry,
    prefers_left_to_right,
    render_png,
    render_svg,
)
from ide.app.tree.toolbar import ReplayTimeline, TreeToolbar
from ide.app.tree.verdict import Marks, RunCheck
from ide.app.widgets.controls import edge_to_edge
from ide.protocol.tree import SearchTree, TreeEvent, TreeFileError, TreeNode, read_jsonl, write_jsonl

RELAYOUT_MS = 100
"""Longest a live event waits before it is drawn; also the shortest time between two re-layouts."""
HOVER_REACH_PX = 8.0
"""How near (screen pixels) the pointer must be to a node drawn smaller than that for its hover text."""
RELAYOUT_SPACING = 4.0
"""A live re-layout waits at least this many times the last one's cost after it (at most ~20 % busy)."""


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
        self.run_feed = RunFeed()
        self.runs = self.run_feed.runs
        self.file_runs = self.run_feed.file_runs
        self.stale_runs = self.run_feed.stale_runs
        self.faults = self.run_feed.faults
        self.checks = self.run_feed.checks
        self.marks = Marks()
        """Trusts and best path of the tree drawn (:mod:`ide.app.tree.verdict`)."""
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
        self._layout: Layout | None = None
        self._structure_dirty = False
        self._restyle: set[str] = set()
        self._best_dirty = False
        self._relayout_cost = 0.0
        self._relayout_done = 0.0
        self._auto_fit = True
        self._fit_whole = False
        self.direction = "auto"
        """``auto`` (chosen to fit the view), ``lr`` (left to right) or ``td`` (top-down)."""
        self._geometry_dirty = False
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
        self.graphics.tooltip_text = self.tooltip_at
        self.graphics.resized.connect(self._on_resized)
        self.graphics.userMoved.connect(self._stop_auto_fit)
        self.overview = TreeOverview(self.graphics, self.canvas)
        self.overview.panned.connect(self._stop_auto_fit)
        self.graphics.viewChanged.connect(self.overview.place)

        self.toolbar = TreeToolbar()
        self.run_combo = self.toolbar.run_combo
        self.fit_button = self.toolbar.fit_button
        self.hide_pruned_box = self.toolbar.hide_pruned_box
        self.overview_button = self.toolbar.overview_button
        self.export_button = self.toolbar.export_button
        self.summary = self.toolbar.summary
        self.run_combo.currentIndexChanged.connect(self._on_run_chosen)
        self.fit_button.clicked.connect(self.fit)
        self.whole_button = self.toolbar.whole_button
        self.whole_button.clicked.connect(self.fit_whole)
        self.direction_combo = self.toolbar.direction_combo
        self.direction_combo.currentIndexChanged.connect(
            lambda _i: self.set_direction(self.direction_combo.currentData())
        )
        self.legend_button = self.toolbar.legend_button
        self.hide_pruned_box.toggled.connect(self.set_hide_pruned)
        self.overview_button.toggled.connect(self.overview.set_wanted)
        self.toolbar.exportRequested.connect(self._export)
        self.message = QLabel()
        self.message.setObjectName("treeMessage")
        self.message.setContentsMargins(6, 0, 6, 0)
        self.message.hide()

        self.side = TreeInspector()
        self.inspector = self.side.text
        self.branch_button = self.side.branch_button
        self.branch_button.clicked.connect(self._request_branch_diff)
        self.legend = self.side.legend
        self.legend_button.toggled.connect(self.legend.setVisible)
        self.node_actions = NodeActions(self)
        self.side.layout().addWidget(self.node_actions.buttons)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.graphics)
        splitter.addWidget(self.side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([3000, 1000])
        splitter.setCollapsible(0, False)

        self.timeline = ReplayTimeline()
        self.slider, self.step_label = self.timeline.slider, self.timeline.step_label
        self.slider.valueChanged.connect(self._on_slider)

        column = edge_to_edge(self, 2)
        column.addWidget(self.toolbar)
        column.addWidget(self.message)
        column.addWidget(self.node_actions.origin_bar)
        column.addWidget(splitter, 1)
        column.addWidget(self.timeline)
        self._set_enabled()

    def add_events(self, events: Iterable[TreeEvent], *, source: str | None = None) -> None:
        """Apply live (or opened) events; the drawing follows on the coalescing timer.

        A live event already applied (a replayed session sends them again) is ignored; one that arrives
        early is held until the events before it come. An event that does not fit its run (unknown
        parent, a second root…) stops that run where it was, with a line in the dock saying so.
        """
        touched_current = relist = False
        finished: list[str] = []
        for event in events:
            key = event.run_id if source is None else f"{source} · {event.run_id}"
            tree = self.runs.get(key)
            if tree is None:
                tree = self.runs[key] = SearchTree()
                if source is not None:
                    self.file_runs.add(key)
                self._list_runs()
                relist = True  # once its first event says where it continues from
                if source is None:
                    self.runStarted.emit(key)
                if source is not None or self.current is None or self.step is None:
                    self.select_run(key)
            for applied in self.run_feed.feed(key, tree, event):
                if key == self.current and self.step is None:
                    touched_current = True
                    self._note_change(tree, applied)
                relist = relist or applied.forked_from is not None
                if applied.kind == "finished":
                    finished.append(key)
        if relist:
            self._list_runs()
        tree = self.runs.get(self.current) if self.current is not None else None
        if tree is not None:
            following = self.step is None
            self.slider.blockSignals(True)
            self.slider.setMaximum(len(tree.events))
            if following:
                self.slider.setValue(len(tree.events))
            self.slider.blockSignals(False)
            self.timeline.show_step()
        self._show_faults()
        if touched_current:
            self._schedule()
        for key in finished:
            self.runFinished.emit(key)

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

    def open_file(self, path: Path, check: RunCheck | None = None) -> str:
        """Load a ``.arbor-tree.jsonl`` file as runs of their own, judged by an eval report's ``check`` of
        the run if given; returns the first run's key.

        Raises :class:`TreeFileError` (message ``file:line: …``) on a file that is not tree events.
        """
        events = read_jsonl(path)
        if not events:
            raise TreeFileError(f"{path}:1: no tree events in the file")
        self.add_events(events, source=path.name)
        key = f"{path.name} · {events[0].run_id}"
        if check is not None:
            self.run_feed.set_check(path.name, check)
            self._structure_dirty = True
            self._schedule(soon=True)
        self.select_run(key)
        return key

    def clear(self, *, keep_files: bool = True) -> dict[str, SearchTree]:
        """Forget the live runs (a session replay rebuilds them); returns what was removed."""
        removed = {k: t for k, t in self.runs.items() if not (keep_files and k in self.file_runs)}
        for key in removed:
            self.run_feed.forget(key)
        self._list_runs()
        if self.current in removed:
            self.current = None
            self.select_run(next(iter(self.runs), None))
        self._show_faults()
        return removed

    def restore(self, runs: dict[str, SearchTree]) -> None:
        """Put back runs :meth:`clear` removed (a replay that failed): shown, but of an ended session."""
        for key, tree in runs.items():
            if key not in self.runs:
                self.runs[key] = tree
                self.stale_runs.add(key)
        self._list_runs()
        if self.current is None and self.runs:
            self.select_run(next(reversed(self.runs)))

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
        elif self._structure_dirty or self._geometry_dirty or self._layout is None:
            if self._structure_dirty or self._layout is None:
                roots, children = visible_ids(tree, hide_pruned=self.hide_pruned)
                self._layout = tidy_layout(roots, children)
            marks, horizontal = self._marks(), self._choose_horizontal(self._layout)
            geometry = build_geometry(tree, self._layout, horizontal=horizontal, marks=marks)
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
        self._structure_dirty = self._best_dirty = self._geometry_dirty = False
        self._restyle.clear()
        self.layout_count += 1
        self._update_summary()
        if self.selected_id is not None:
            self._show_inspector()
        else:  # the node actions follow the run (where it continues from, whether it still runs)
            self.node_actions.refresh()
        self.last_flush_s = time.perf_counter() - started
        self.relaid.emit()

    def _restyle_in_place(self) -> None:
        """Updated nodes take their new colour, size and status where they are drawn (no new layout)."""
        tree, geometry = self.shown, self.canvas.geometry
        if tree is None or not (self._restyle or self._best_dirty):
            return
        marks = self._marks()
        # A test node's verdict is its parent's evidence too: restyle the parents of what changed.
        for node_id in self._restyle | {tree.nodes[i].parent or "" for i in self._restyle if i in tree.nodes}:
            index = geometry.index.get(node_id)
            if index is not None:
                geometry.restyle(index, tree.nodes[node_id], marks.trust(node_id))
                self.canvas.forget_label(index)
        geometry.set_best(marks.best_path)  # scores drawn anew may move the best path
        self._restyle.clear()
        self._best_dirty = False
        self.canvas.update()
        self.overview.invalidate()

    def _marks(self) -> Marks:
        shown = self.shown
        return self.marks.update(shown, self.checks.get(self.current or "")) if shown else self.marks

    def _choose_horizontal(self, layout: Layout) -> bool:
        if self.direction != "auto":
            return self.direction == "lr"
        viewport = self.graphics.viewport().size()
        return prefers_left_to_right(layout, viewport.width(), viewport.height())

    def set_direction(self, direction: str) -> None:
        """Draw left to right (``lr``), top-down (``td``) or whichever fits the view (``auto``)."""
        if direction not in ("auto", "lr", "td"):
            raise ValueError(f"no tree direction {direction!r}; there are auto, lr and td")
        self.direction = direction
        self.direction_combo.blockSignals(True)
        self.direction_combo.setCurrentIndex(self.direction_combo.findData(direction))
        self.direction_combo.blockSignals(False)
        self._geometry_dirty = self._auto_fit = True
        self._schedule(soon=True)

    def fit(self, keep_following: bool = False) -> None:
        """Fit the tree in the view, never smaller than readable (scrolling to the selected node, the best
        path's end or the newest node when it does not fit), and follow it as it grows, until the user
        zooms or pans."""
        if not keep_following:
            self._auto_fit, self._fit_whole = True, False
        if not self.canvas.geometry.bounds.isEmpty():
            self.overview.reconsider()
            focus = None if self._fit_whole else self.scene_pos(self._focus_id())
            self.graphics.fit_tree(self.canvas.geometry.bounds, focus, whole=self._fit_whole)

    def fit_whole(self) -> None:
        """Show the whole tree, however small that makes it (captions show again once zoomed in), and
        follow it so as it grows, until the user zooms or pans or asks for Fit."""
        self._auto_fit = self._fit_whole = True
        self.fit(keep_following=True)

    def _focus_id(self) -> str:
        """The node a fit that cannot show everything shows: selected, best path's end, or newest."""
        geometry, tree = self.canvas.geometry, self.shown
        if self.selected_id in geometry.index:
            return self.selected_id or ""
        best = self._marks().best_path
        if best and best[-1] in geometry.index:
            return best[-1]
        if tree is not None:
            return next((i for i in reversed(tree.nodes) if i in geometry.index), "")
        return ""

    def _on_resized(self) -> None:
        """The dock changed size: a followed tree is fitted again, redrawn if another direction fits."""
        geometry = self.canvas.geometry
        if not (self._auto_fit and geometry.ids and self._layout is not None):
            return
        if self._choose_horizontal(self._layout) != geometry.horizontal:
            self._geometry_dirty = True
            self._schedule(soon=True)
        else:
            self.fit(keep_following=True)

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

    def tooltip_at(self, point: QPointF) -> str:
        """The hover text of the node at ``point`` (scene coordinates), or "" where there is none: its
        caption and score, at any zoom (within :data:`HOVER_REACH_PX` of a node drawn too small to hit)."""
        index = self.canvas.node_at(point, HOVER_REACH_PX / max(self.graphics.transform().m11(), 1e-6))
        tree = self.shown
        if index < 0 or tree is None:
            return ""
        node = tree.nodes.get(self.canvas.geometry.ids[index])
        return node_tooltip(node, self._marks().trusts.get(node.id)) if node is not None else ""

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
            self.side.show_node(None)
        else:
            parent = tree.nodes.get(node.parent) if node.parent is not None else None
            uct_parent, c = parent if uses_uct(tree, node) else None, exploration_constant(tree.figures)
            self.side.show_node(node, uct_parent, c, self._marks().trusts.get(node.id))
        self.side.show_branch_button(node, self.branch_diff_unavailable())
        self.node_actions.refresh()

    def set_branch_diff_supported(self, supported: bool) -> None:
        """Whether the backend serves ``_arbor/tree/branch`` for this session's runs."""
        self.branch_diff_supported = supported
        self.side.show_branch_button(self._selected_node(), self.branch_diff_unavailable())

    def branch_diff_unavailable(self) -> str | None:
        """Why the selected node's branch diff cannot be shown (None: it can)."""
        kind = self.node_actions.run_kind(self.current)
        unsupported = None if self.branch_diff_supported else "The backend does not serve branch diffs."
        return NOT_IN_SESSION[kind] if kind != "live" else unsupported

    def _request_branch_diff(self) -> None:
        node = self._selected_node()
        tree = self.shown
        if node is None or not node.changeset_id or tree is None or self.branch_diff_unavailable():
            return
        self.branchDiffRequested.emit(node.changeset_id, node.id, tree.run_id or "")

    def _list_runs(self) -> None:
        """The runs list as one tree of attempts: a continued run under the run it continues from."""
        self.toolbar.list_runs(run_rows(self.runs, titles(self.runs, self.file_runs)), self.current)

    def select_run(self, key: str | None) -> None:
        """Show run ``key`` (None: none), followed live, no node selected."""
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
        self.timeline.show_step()
        self._show_inspector()
        self._show_faults()
        self._structure_dirty = True
        self._set_enabled()
        self._schedule(soon=True)

    def _on_run_chosen(self, index: int) -> None:
        self.select_run(self.run_combo.itemData(index))

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
        self.timeline.show_step()
        self._structure_dirty = True
        self._schedule(soon=True)

    def _update_summary(self) -> None:
        tree = self.shown
        if tree is None:
            self.summary.setText("")
            return
        self.summary.setText(run_summary(tree, len(self.canvas.geometry), replaying=self.step is not None))
        self.summary.setToolTip(figures_text(tree.figures) if tree.finished else "")

    def _set_enabled(self) -> None:
        has = self.current is not None
        controls = (self.fit_button, self.whole_button, self.export_button, self.slider, self.hide_pruned_box)
        for widget in controls:
            widget.setEnabled(has)

    def _export(self, kind: str, path: Path) -> None:
        {"png": self.export_png, "svg": self.export_svg, "jsonl": self.export_jsonl}[kind](path)

    def _export_source(self) -> QRectF:
        self.flush()
        return QRectF(self.canvas.geometry.bounds)

    def export_png(self, path: Path, scale: float = 2.0) -> Path:
        """The whole tree (as shown: replay step, hidden pruned) as a PNG image."""
        return render_png(self.scene, self._export_source(), path, scale)

    def export_svg(self, path: Path) -> Path:
        """The whole tree as an SVG drawing (labels included)."""
        return render_svg(self.scene, self._export_source(), path)

    def export_jsonl(self, path: Path) -> Path:
        """Every event of the current run (whatever the replay step) as ``.arbor-tree.jsonl``."""
        tree = self.runs.get(self.current) if self.current is not None else None
        return write_jsonl(tree.events if tree is not None else [], path)
