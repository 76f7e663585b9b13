"""The Search tree dock: the session's search trees live and replayed, trees opened from files, a
branch's changes asked for and shown read-only in the review, and the session steered from a node
(continue from it, use its branch, prune or expand it: :mod:`ide.app.tree.steering`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog

from ide.app.acp_client import BackendState
from ide.app.parts.base import BOTTOM, AppContext, Built, Dock, KeptAcrossReplay, Spec
from ide.app.parts.capabilities import Chat, Review, SearchTrees
from ide.app.parts.needs import Requires, Uses
from ide.app.tree.turn_end import closing_events

if TYPE_CHECKING:
    from ide.app.tree.steering import ContinueElsewhere, TreeSteering
    from ide.app.tree.verdict import RunCheck
    from ide.app.tree.view import SearchTreeView
    from ide.protocol.review import ChangeSetView
    from ide.protocol.tree import BranchDiffParams, TreeEvent, TreeEventBatch


class TreeDock(Dock):
    """Tabbed with the review. A tree opened from a file gets the whole window; so does a run while it
    runs (beside the chat, where its answer streams): the layout comes back when its turn ends, with the
    review on top when the turn left changes to review. A user who brings the layout back during a run
    keeps it for the runs after."""

    spec = Spec("tree", title="Search tree", place=BOTTOM, order=40)
    view = Built["SearchTreeView"]()
    provides = (SearchTrees,)
    review = Requires(Review)
    chat = Uses(Chat)

    treeEvents = Signal(object)
    """A ``list[TreeEvent]`` of the current session's search tree (``_arbor/tree``), live or replayed."""
    branchDiffReceived = Signal(object, object)
    """The :class:`BranchDiffParams` asked and the branch's :class:`ChangeSetView`."""
    branchDiffFailed = Signal(object, str)
    """(BranchDiffParams, message) when the backend could not give the branch's changes."""
    runFinished = Signal(str)
    """The view's :attr:`SearchTreeView.runFinished` (a run's key), there before the view is built."""

    deferred = True  # a tab behind the review

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.kept = KeptAcrossReplay(
            self.bridge, lambda: self.view.clear(), lambda saved: self.view.restore(saved)
        )
        """The trees shown before a replay (the replayed events rebuild them): back if the replay fails."""
        self._branch_requests: dict[str, tuple[str, str]] = {}
        """Change set id → (node id, run id) of branch diffs asked for and not answered yet."""
        self.treeEvents.connect(lambda events: self.view.add_events(events))
        self.branchDiffReceived.connect(self._show_branch_diff)
        self.branchDiffFailed.connect(self._branch_diff_failed)
        ctx.action("file", "Open &Search Tree…", self._open_dialog)
        self.maximise_runs = True
        """A run that starts takes the window until its turn ends (False once the user brought the layout
        back during one)."""
        self._run_maximised = False
        """The window is maximised for the live run (not by the user or a tree file): its turn's end gives
        the layout back."""
        ctx.window.maximisedChanged.connect(self._maximised_changed)

    def subscribe(self) -> None:
        from ide.protocol.tree import TREE_NOTIFICATION

        self.bridge.on_notification(TREE_NOTIFICATION, self._on_batch)

    def build(self) -> SearchTreeView:
        from ide.app.tree.steering import TreeSteering
        from ide.app.tree.view import SearchTreeView  # the tree's scene, legend and inspector load with it

        view = SearchTreeView()
        view.runStarted.connect(self._on_run_started)
        view.runFinished.connect(self.runFinished)
        view.branchDiffRequested.connect(self.request_branch_diff)
        self._steering = TreeSteering(self.ctx, view, self.review)
        view.node_actions.set_backend(self._steering.backend())
        return view

    @property
    def steering(self) -> TreeSteering:
        """The dock's steering requests (continue, use a branch, prune, expand); the view built first."""
        self.content()
        return self._steering

    def continue_elsewhere(self, source: str, handler: ContinueElsewhere) -> None:
        """Continue from here, on a run of the file named ``source``, calls ``handler`` instead of
        continuing in this session (the recorded sample: in a demo window)."""
        self.steering.continue_elsewhere(source, handler)

    def open_file(self, path: Path, *, maximise: bool = True, check: RunCheck | None = None) -> bool:
        """Open a ``.arbor-tree.jsonl`` file in the dock, given the whole window (``maximise``; the same key
        gives the layout back), its run judged by an eval report's ``check``; the banner explains a bad
        file."""
        from ide.protocol.tree import TREE_FILE_SUFFIX, TreeFileError

        try:
            self.view.open_file(path, check)
        except TreeFileError as exc:
            self.ctx.banner.show_notice(
                f"Cannot open the search tree: {exc}",
                f"A {TREE_FILE_SUFFIX} file holds one tree event (JSON) per line, as Export writes them.",
            )
            return False
        self.show()
        if maximise:
            self.ctx.maximise(self.dock)
        return True

    def add_events(self, events: list[TreeEvent]) -> None:
        """Add tree events to the session's trees, as ``_arbor/tree`` does (:attr:`treeEvents`)."""
        self.treeEvents.emit(events)

    def close_open_runs(self, reason: str) -> None:
        """End the live search trees no event closed: active nodes failed, the run failed with ``reason``."""
        view = self.view
        for key, tree in list(view.runs.items()):
            if key not in view.file_runs and key not in view.run_feed.stale_runs:
                events = closing_events(tree, reason)
                if events:
                    view.add_events(events)

    def branch_diff(self, params: BranchDiffParams) -> bool:
        """Ask for one search branch's changes; they arrive as :attr:`branchDiffReceived`, a refusal as
        :attr:`branchDiffFailed`. False (nothing sent) when the backend is not running or lacks it."""
        from ide.protocol.tree import BRANCH_DIFF

        return self.bridge.request(
            BRANCH_DIFF,
            params,
            lambda changeset: self.branchDiffReceived.emit(params, changeset),
            lambda info: self.branchDiffFailed.emit(params, info.message),
        )

    def request_branch_diff(self, changeset_id: str, node_id: str, run_id: str) -> None:
        """Ask the backend for a search branch's changes, to show read-only in the review pane."""
        from ide.protocol.tree import BranchDiffParams

        session_id = self.bridge.session_id
        if session_id is None or not self.branch_diff(
            BranchDiffParams(session_id=session_id, changeset_id=changeset_id)
        ):
            self.view.show_message("Cannot show the branch diff: the backend is not running.")
            return
        self._branch_requests[changeset_id] = (node_id, run_id)

    def _show_branch_diff(self, params: BranchDiffParams, changeset: ChangeSetView) -> None:
        node_id, run_id = self._branch_requests.pop(params.changeset_id, (params.changeset_id, "?"))
        if params.session_id != self.bridge.session_id:
            return  # asked in a session that has ended since
        self.review.show_branch(
            changeset,
            f"Branch {node_id} of run {run_id[:12]} — read-only; the run's chosen branch is what you review",
        )

    def _branch_diff_failed(self, params: BranchDiffParams, message: str) -> None:
        node_id, _run = self._branch_requests.pop(params.changeset_id, (params.changeset_id, ""))
        self.view.show_message(f"Branch diff of {node_id}: {message}")

    def _on_batch(self, batch: TreeEventBatch) -> None:
        if batch.events:
            self.treeEvents.emit(batch.events)

    def _on_run_started(self, _key: str) -> None:
        # A restored session's runs come back quietly; a run that starts now is shown.
        if self.kept.replaying:
            return
        self.show()
        if self.maximise_runs and self.ctx.window.maximised is None:
            self.ctx.maximise(self.dock, (self.chat.dock,) if self.chat is not None else ())
            self._run_maximised = True

    def _maximised_changed(self, maximised: bool) -> None:
        if not maximised and self._run_maximised:
            self.maximise_runs = False  # the user wants the layout during runs
        self._run_maximised = False

    def _give_back(self) -> None:
        """The run's turn ended: the layout as the user had it, the review and the viewer back in sight."""
        if self._run_maximised:
            self._run_maximised = False  # not the user's doing: later runs still take the window
            self.ctx.restore_layout()

    def on_session_ready(self, *_: object) -> None:
        from ide.protocol.tree import BRANCH_DIFF

        self.view.set_branch_diff_supported(self.bridge.supports(BRANCH_DIFF))
        self.view.node_actions.set_backend(self.steering.backend())

    def on_state(self, state: str) -> None:
        if state in (BackendState.READY, BackendState.STOPPED):  # a turn ended (or never ran)
            self._give_back()
        if state == BackendState.STOPPED and self.built:  # a view built later starts without it
            self.view.set_branch_diff_supported(False)
        if self.built:  # a view built later reads the backend then
            self.view.node_actions.set_backend(self.steering.backend())

    def _open_dialog(self) -> None:
        from ide.protocol.tree import TREE_FILE_SUFFIX

        path, _ = QFileDialog.getOpenFileName(
            self.ctx.window,
            "Open search tree",
            str(self.ctx.workspace),
            f"Search trees (*{TREE_FILE_SUFFIX});;All files (*)",
        )
        if path:
            self.open_file(Path(path))
