"""The Review pane: the session's proposed changes as a file list and one file's diff, decided hunk by hunk.

Narrow interface: the window feeds it change sets, apply/rollback results and history, and the session's
events (:mod:`ide.client.events`); the pane asks for things through signals carrying ``ide.protocol.review``
models. What it knows and decides is a Qt-free :class:`~ide.app.review.state.ReviewState`: decisions show
at once (optimistic) and every ChangeSetView from the backend replaces them. The pane composes its pieces
(:mod:`ide.app.review.widgets`: the file list, the toolbar, the branch bar, the hunk bar, the History tab;
:mod:`ide.app.review.diff`: the diff), wires their signals to its own methods, and renders the state after
each change. A search branch's diff and the plain-ACP diffs of an agent without Arbor review are the two
read-only modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QListWidget, QMessageBox, QSplitter, QTabWidget, QVBoxLayout, QWidget

from ide.app.review.diff import DiffView
from ide.app.review.state import (
    ReviewState,
    empty_file_message,
    file_notes,
    has_notes,
    rollback_message,
    rollback_question,
)
from ide.app.review.widgets import (
    STANDARD_NOTE,
    BranchBar,
    HistoryTab,
    HunkBar,
    ReviewFileList,
    ReviewToolbar,
)

if TYPE_CHECKING:
    from ide.client.events import SessionEvent
    from ide.protocol.review import (
        ApplyResult,
        BatchView,
        ChangeSetView,
        DecideParams,
        Decision,
        HistoryResult,
        HunksParams,
        HunksResult,
        RollbackResult,
    )

STANDARD_DIFF_DELAY_MS = 50
"""Coalescing window for rebuilding the read-only review from streamed ACP diffs."""
LOADING = "Loading…"
"""In place of the diff of a file whose hunks were asked for and have not come yet."""


class ReviewPane(QWidget):
    """Files on the left, the selected file's diff on the right, hunk actions above it; History tab.

    Inputs: :meth:`set_session`, :meth:`set_interactive`, :meth:`set_changeset`, :meth:`show_branch`,
    :meth:`show_pending`, :meth:`show_apply_result`, :meth:`show_rollback_result`, :meth:`set_history`,
    :meth:`apply_event`, :meth:`revert`, :meth:`clear`. Outputs: the ``*Requested`` signals.
    """

    decideRequested = Signal(object)
    """A :class:`DecideParams` to send to the backend."""
    applyRequested = Signal(object)
    """An :class:`ApplyParams`."""
    rollbackRequested = Signal(object)
    """A :class:`RollbackParams`."""
    historyRequested = Signal(object)
    """A :class:`HistoryParams`."""
    hunksRequested = Signal(object)
    """A :class:`HunksParams`: the hunks of a file shown as a summary, which it shows "Loading…" for."""
    feedbackRequested = Signal(str)
    """A refinement prompt built from the hunk comments, for the chat to send as a new turn."""
    changesShown = Signal(int)
    """A change set with this many files is on screen (the window raises the dock when it is not 0)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewPane")
        self.state = ReviewState()
        self._asked: set[str] = set()
        """Files whose hunks were asked for and have not come (nor failed) yet."""
        self._retried: set[str] = set()
        """Files asked for again since the change set was shown, their first answer being stale."""
        self.rollback_confirm: QMessageBox | None = None
        """The last Roll back confirmation asked (it names the files and the commit)."""
        self._build()
        self._wire()
        self._standard_timer = QTimer(self)
        self._standard_timer.setSingleShot(True)
        self._standard_timer.setInterval(STANDARD_DIFF_DELAY_MS)
        self._standard_timer.timeout.connect(self._show_standard_diffs)
        self._update_actions()

    def _build(self) -> None:
        self.note = QLabel(STANDARD_NOTE)
        self.note.setObjectName("mutedLabel")
        self.note.setWordWrap(True)
        self.note.hide()  # until the agent's session says it has no Arbor review (set_interactive)
        self._told = False
        """Whether :meth:`set_interactive` has been called: before the agent's session is ready the pane
        does not know whether its edits can be decided here, and says nothing about it."""
        self.branch_bar = BranchBar()
        self.branch_bar.hide()
        self.toolbar = ReviewToolbar()
        self.files = ReviewFileList()
        self.hunk_bar = HunkBar()
        self.diff = DiffView()
        self.history = HistoryTab()
        # The pieces' widgets under the names scripts and tests use.
        self.branch_label, self.back_button = self.branch_bar.label, self.branch_bar.back_button
        toolbar, hunk_bar, diff, history = self.toolbar, self.hunk_bar, self.diff, self.history
        self.summary, self.view_toggle = toolbar.summary, toolbar.view_toggle
        self.accept_all_button, self.reject_all_button = toolbar.accept_all_button, toolbar.reject_all_button
        self.apply_button, self.feedback_button = toolbar.apply_button, toolbar.feedback_button
        self.file_list, self.files_model = self.files, self.files.files_model
        self.hunk_label, self.comment_edit = hunk_bar.hunk_label, hunk_bar.comment_edit
        self.accept_button, self.reject_button = hunk_bar.accept_button, hunk_bar.reject_button
        self.accept_file_button, self.reject_file_button = (
            hunk_bar.accept_file_button,
            hunk_bar.reject_file_button,
        )
        self.comment_button = hunk_bar.comment_button
        self.diff_pages, self.unified, self.left, self.right = diff, diff.unified, diff.left, diff.right
        self.message, self.merged_view = diff.message, diff.merged_view
        self.history_tree, self.history_label = history.tree, history.label
        self.rollback_button, self.refresh_history_button = history.rollback_button, history.refresh_button

        self.meta_label = QLabel("")
        self.meta_label.setObjectName("reviewMetaNote")
        self.meta_label.setWordWrap(True)
        self.meta_label.hide()
        self.conflict_list = QListWidget()
        self.conflict_list.setObjectName("reviewConflicts")
        self.conflict_list.setMaximumHeight(90)
        self.conflict_list.hide()
        self.result_label = QLabel("")
        self.result_label.setWordWrap(True)
        self.result_label.setContentsMargins(6, 0, 6, 0)  # in line with the summary above it
        self.result_label.hide()
        self.identity_label = QLabel("")
        self.identity_label.setObjectName("reviewIdentityWarning")  # styled by the application stylesheet
        self.identity_label.setWordWrap(True)
        self.identity_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.identity_label.hide()
        # These show paths and the backend's messages: text, never markup.
        for label in (self.meta_label, self.result_label, self.identity_label):
            label.setTextFormat(Qt.TextFormat.PlainText)

        diff_side = QWidget()
        diff_layout = QVBoxLayout(diff_side)
        diff_layout.setContentsMargins(0, 0, 0, 0)
        diff_layout.setSpacing(0)
        diff_layout.addWidget(self.meta_label)
        diff_layout.addWidget(self.hunk_bar)
        diff_layout.addWidget(self.diff, 1)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.files)
        body.addWidget(diff_side)
        body.setStretchFactor(1, 3)
        body.setSizes([300, 900])

        changes = QWidget()
        layout = QVBoxLayout(changes)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        rows = (
            self.note,
            self.branch_bar,
            self.identity_label,
            self.toolbar,
            self.result_label,
            self.conflict_list,
        )
        for row in rows:
            layout.addWidget(row)
        layout.addWidget(body, 1)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(changes, "Changes")
        self.tabs.addTab(self.history, "History")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.tabs)

        for widget in (self.files, self.unified, self.left, self.right, self):
            widget.installEventFilter(self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def _wire(self) -> None:
        self.back_button.clicked.connect(self.show_pending)
        self.view_toggle.toggled.connect(self.set_side_by_side)
        self.accept_all_button.clicked.connect(lambda: self.decide_all("accepted"))
        self.reject_all_button.clicked.connect(lambda: self.decide_all("rejected"))
        self.apply_button.clicked.connect(self.apply)
        self.feedback_button.clicked.connect(self.send_feedback)
        self.files.rowChosen.connect(self._on_file_row)
        self.accept_button.clicked.connect(lambda: self.decide_hunk("accepted"))
        self.reject_button.clicked.connect(lambda: self.decide_hunk("rejected"))
        self.accept_file_button.clicked.connect(lambda: self.decide_file("accepted"))
        self.reject_file_button.clicked.connect(lambda: self.decide_file("rejected"))
        self.comment_edit.returnPressed.connect(self.comment_on_hunk)
        self.comment_button.clicked.connect(self.comment_on_hunk)
        self.conflict_list.currentRowChanged.connect(self.show_conflict)
        self.history_tree.currentItemChanged.connect(lambda *_: self._update_actions())
        self.rollback_button.clicked.connect(self.roll_back_selected)
        self.refresh_history_button.clicked.connect(self.request_history)
        self.tabs.currentChanged.connect(self._on_tab)

    # Inputs.

    def set_session(self, session_id: str, cwd: str) -> None:
        """A new session: forget what the pane showed for the previous one."""
        if session_id != self.state.session_id:
            self.clear()
        self.state.session_id = session_id
        self.state.cwd = cwd

    def set_commit_mode(self, mode: str) -> None:
        """``review.commit`` (commit, stage or none): what Apply does after writing, as its button says."""
        self.state.commit_mode = mode
        self._update_actions()

    def set_identity_warning(self, text: str) -> None:
        """Warn above the actions that Apply's commit will fail, with the fix ("" hides the warning)."""
        self.identity_label.setText(text)
        self.identity_label.setVisible(bool(text))

    def set_interactive(self, interactive: bool) -> None:
        """True when the backend serves ``_arbor/review/*``; False shows standard ACP diffs read-only."""
        self._told = True
        if self.state.set_interactive(interactive):
            self._show_mode()
            self._update_actions()

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a search branch's changes read-only under ``header`` (no decisions, apply or feedback),
        until :meth:`show_pending` brings back the session's pending review."""
        self.state.enter_branch(changeset)
        self._show_mode()
        self.branch_label.setText(header)
        self.result_label.hide()
        self.conflict_list.hide()
        self._show_changeset(changeset)

    def show_pending(self) -> None:
        """Leave a branch shown by :meth:`show_branch`: the pending review, as it is now."""
        if self.state.branch is None:
            return
        pending = self.state.leave_branch()
        self._show_mode()
        if pending is not None:
            self._show_changeset(pending)
        else:
            self._show_nothing()

    def clear(self) -> None:
        """Show nothing (a new session, or a replay about to rebuild the view)."""
        self.state.clear()
        self._asked.clear()
        self._show_mode()
        self._standard_timer.stop()
        self.conflict_list.clear()
        self.conflict_list.hide()
        self.result_label.hide()
        self._show_nothing()

    def set_changeset(self, changeset: ChangeSetView) -> None:
        """Show ``changeset`` as the truth, keeping the selected file and hunk where they still exist.

        While a branch is shown, it is kept for when the review comes back."""
        if self.state.receive(changeset):
            self._show_changeset(changeset)

    def set_hunks(self, result: HunksResult) -> None:
        """The hunks asked for with ``hunksRequested``: shown, when the file they are for is current."""
        answered = {file.path for file in result.files}
        self._asked -= answered
        if self.state.load(result.files):
            self._render()
            self._update_actions()
            return
        # An answer about an older change set (the hunks changed since it was asked): ask again, once
        # per change set shown, for the file still waiting.
        stale = [path for path in self.state.wanted() if path in answered]
        if stale and stale[0] not in self._retried:
            self._retried.add(stale[0])
            self._render()

    def hunks_failed(self, params: HunksParams) -> None:
        """Asking for ``params``' hunks failed: showing the file again asks again."""
        self._asked.difference_update(params.paths)
        if set(self.state.wanted()) & set(params.paths):
            self.diff.show_message(
                "This file's changes could not be loaded; select another file, then this one, to retry."
            )

    def apply_event(self, event: SessionEvent) -> None:
        """Collect standard ACP ``diff`` content of tool calls (only when the agent is not Arbor)."""
        if self.state.collect(event) and not self._standard_timer.isActive():
            self._standard_timer.start()

    def show_pending_diffs(self) -> None:
        """Show the standard ACP diffs collected but not shown yet now, not after the short delay: the turn
        that sent them ended, so no more come with them."""
        if self._standard_timer.isActive():
            self._standard_timer.stop()
            self._show_standard_diffs()

    @property
    def refresh_pending(self) -> bool:
        """Standard ACP diffs arrived that the pane has not shown yet (they are shown after a short delay,
        together)."""
        return self._standard_timer.isActive()

    def revert(self) -> None:
        """Drop decisions the backend did not confirm (its request failed) and show its last truth."""
        if self.state.revert():
            self._decisions_changed()

    def show_apply_result(self, result: ApplyResult) -> None:
        """What Apply did: the remaining change set, the batch written and any conflicts."""
        self.set_changeset(result.changeset)
        self.result_label.setText(self.state.applied(result))
        self.result_label.show()
        self.conflict_list.clear()
        for conflict in self.state.conflicts:
            self.conflict_list.addItem(f"{conflict.path} — {conflict.message}")
        self.conflict_list.setVisible(bool(self.state.conflicts))
        self.request_history()

    def set_history(self, history: HistoryResult) -> None:
        """List applied batches, newest first as the backend sends them."""
        self.state.batches = history
        self.history.show_batches(history)
        self._update_actions()

    def show_rollback_result(self, result: RollbackResult) -> None:
        """What Roll back did, in the History tab and in place of the Apply it undid above the changes."""
        message = rollback_message(result)
        self.history_label.setText(message)
        self.result_label.setText(message)
        self.result_label.show()
        self.conflict_list.clear()  # an Apply's conflicts: that Apply is undone
        self.conflict_list.hide()
        self.request_history()

    def forget_result(self) -> None:
        """A turn's new changes are coming: the line about an earlier Apply or Roll back is not about them
        (the History tab keeps it)."""
        self.result_label.hide()
        self.result_label.clear()

    # The user's actions.

    def select_file(self, row: int, hunk: int = 0) -> None:
        """Show file ``row`` of the list with hunk ``hunk`` current (-1: its last hunk)."""
        previous = self.state.current_file
        if not self.state.select(row, hunk):
            return
        if row != previous:
            self.files.show_row(row)
        self._render()
        self._update_actions()

    def next_hunk(self) -> None:
        """Move to the next hunk, on to the next file's first hunk after the last one (j)."""
        self._go(self.state.next_position())

    def previous_hunk(self) -> None:
        """Move to the previous hunk, back to the previous file's last hunk before the first one (k)."""
        self._go(self.state.previous_position())

    def set_side_by_side(self, on: bool) -> None:
        self.diff.side_by_side = on
        if self.view_toggle.isChecked() != on:
            self.view_toggle.setChecked(on)
        self._render()

    def decide_hunk(self, decision: Decision) -> None:
        """Decide the current hunk, then move to the next one (a / r)."""
        params = self.state.decide_hunk(decision)
        if params is not None:
            self._decided(params)
            self.next_hunk()

    def decide_file(self, decision: Decision) -> None:
        """Decide every hunk of the selected file, then move to the next file (Shift+A / Shift+R)."""
        params = self.state.decide_file(decision)
        if params is not None:
            self._decided(params)
            following = self.state.next_file()
            if following is not None:
                self.select_file(following, 0)

    def decide_all(self, decision: Decision) -> None:
        """Decide every hunk of the change set (Accept all / Reject all)."""
        params = self.state.decide_all(decision)
        if params is not None:
            self._decided(params)

    def comment_on_hunk(self) -> None:
        """Attach the comment box's text to the current hunk (and record it with the backend)."""
        text = self.comment_edit.text().strip()
        if not text or not self.state.commentable:
            return
        params = self.state.comment(text)
        self.comment_edit.clear()
        if params is not None:
            self.decideRequested.emit(params)
        self._render()
        self._update_actions()

    def feedback_text(self) -> str | None:
        """The refinement prompt Send feedback would send (None without comments)."""
        return self.state.feedback_text()

    def send_feedback(self) -> None:
        text = self.state.feedback()
        if text is not None:
            self.feedbackRequested.emit(text)

    def apply(self) -> None:
        params = self.state.apply_params()
        if params is not None:
            self.applyRequested.emit(params)

    def request_history(self) -> None:
        params = self.state.history_params()
        if params is not None:
            self.historyRequested.emit(params)

    def show_conflict(self, index: int) -> None:
        """Show the merged-with-markers text of conflict ``index`` in place of the diff."""
        conflict = self.state.conflict(index)
        if conflict is None:
            return
        if conflict.merged is None:
            self.diff.show_message(f"{conflict.path}: {conflict.message}")
        else:
            self.diff.show_merged(conflict.merged)

    def roll_back_selected(self) -> None:
        """Roll back the batch selected in the History tab, once the user confirms."""
        batch = self.state.rollback_target(self.history.selected_row())
        if batch is not None:
            self._confirm_rollback(batch)

    def _confirm_rollback(self, batch: BatchView) -> None:
        from ide.protocol.review import RollbackParams

        text, details = rollback_question(batch)
        confirm = QMessageBox(
            QMessageBox.Icon.Question, "Roll back", text, QMessageBox.StandardButton.Cancel, self
        )
        confirm.setObjectName("rollbackConfirm")
        confirm.setInformativeText(details)
        button = confirm.addButton("Roll back", QMessageBox.ButtonRole.AcceptRole)
        confirm.setDefaultButton(QMessageBox.StandardButton.Cancel)
        params = RollbackParams(cwd=batch.cwd, batch_id=batch.id)
        button.clicked.connect(lambda: self.rollbackRequested.emit(params))
        confirm.finished.connect(confirm.deleteLater)
        self.rollback_confirm = confirm
        confirm.open()

    # Rendering the state.

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        self._retried.clear()
        selection = self.state.show(changeset)
        self.files_model.set_files(changeset.files, self.state.file_states())
        if selection is not None:
            self.select_file(*selection)  # renders the file and the actions (each a pass over every hunk)
        else:
            self.diff.show_message("No changes to review.")
            self._update_actions()
        self.changesShown.emit(len(changeset.files))

    def _show_nothing(self) -> None:
        self.files_model.set_files([], [])
        self.diff.show_message("Select a file to see its changes.")
        self._update_actions()

    def _show_mode(self) -> None:
        """The standard-diffs note and the branch bar, as the state's mode says."""
        self.note.setVisible(self._told and self.state.branch is None and not self.state.interactive)
        self.branch_bar.setVisible(self.state.branch is not None)

    def _show_standard_diffs(self) -> None:
        self.set_changeset(self.state.standard_changeset())

    def _go(self, position: tuple[int, int] | None) -> None:
        if position is None:
            return
        row, hunk = position
        if row != self.state.current_file:
            self.select_file(row, hunk)
            return
        self.state.current_hunk = hunk
        if self.state.current_loaded():
            self.diff.mark(hunk)
        self._update_actions()

    def _decided(self, params: DecideParams) -> None:
        self._decisions_changed()
        self.decideRequested.emit(params)

    def _decisions_changed(self) -> None:
        for row, state in enumerate(self.state.file_states()):
            self.files_model.set_state(row, state)
        self._render()
        self._update_actions()

    def _on_file_row(self, row: int) -> None:
        if row != self.state.current_file:
            self.select_file(row)

    def _render(self) -> None:
        """Render the selected file into the unified or the side-by-side view (only that file)."""
        file = self.state.current_file_view()
        self.meta_label.setVisible(file is not None and has_notes(file))
        if file is None:
            return
        notes = file_notes(file)
        if notes:
            self.meta_label.setText("\n".join(notes))
        if file.summarised:
            self.diff.show_message(LOADING)
            self._ask(file.path)
            return
        if not file.hunks:
            self.diff.show_message(empty_file_message(file))
            return
        decisions = [self.state.decision_of(hunk) for hunk in file.hunks]
        self.diff.show_file(file, self.state.header, decisions, self.state.current_hunk)

    def _ask(self, path: str) -> None:
        from ide.protocol.review import HunksParams

        if path not in self._asked and self.state.changeset is not None:
            self._asked.add(path)
            self.hunksRequested.emit(HunksParams(session_id=self.state.changeset.session_id, paths=[path]))

    def _update_actions(self) -> None:
        actions = self.state.actions(self.history.selected_row())
        self.hunk_bar.show_actions(actions, self.state.hunk_caption())
        self.toolbar.show_actions(actions, self.state.summary(), self.state.apply_label())
        self.history.show_actions(actions)

    def _on_tab(self, index: int) -> None:
        if self.tabs.widget(index) is not None and self.tabs.tabText(index) == "History":
            self.request_history()

    # Keys.

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            action = self._key_action(event)
            if action is not None:
                action()
                return True
        return super().eventFilter(watched, event)

    def _key_action(self, event: QKeyEvent) -> Callable[[], None] | None:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        shift = modifiers == Qt.KeyboardModifier.ShiftModifier
        if modifiers not in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
            return None
        key = event.key()
        if key == Qt.Key.Key_J and not shift:
            return self.next_hunk
        if key == Qt.Key.Key_K and not shift:
            return self.previous_hunk
        if key == Qt.Key.Key_A:
            return (lambda: self.decide_file("accepted")) if shift else (lambda: self.decide_hunk("accepted"))
        if key == Qt.Key.Key_R:
            return (lambda: self.decide_file("rejected")) if shift else (lambda: self.decide_hunk("rejected"))
        return None
