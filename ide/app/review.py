"""The Review pane: the session's proposed changes as a file list and one file's diff, decided hunk by hunk.

Narrow interface: the window feeds it change sets, apply/rollback results and history, and standard ACP
``session/update`` payloads; the pane asks for things through signals carrying ``ide.protocol.review``
models. Decisions show at once (optimistic overrides) and every ChangeSetView from the backend replaces
them. Only the selected file is rendered, into one text document, so a change set's size costs little.
The pending review lives in :mod:`ide.app.review_pending`; a search branch's diff and the plain-ACP diffs
of an agent without Arbor review are the two read-only modes here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QObject,
    Qt,
    QTimer,
)
from PySide6.QtGui import (
    QKeyEvent,
)
from PySide6.QtWidgets import (
    QWidget,
)

from ide.app.diff_editor import DiffEditor, DiffHighlighter
from ide.app.diffs import StandardDiffs, file_state
from ide.app.review_layout import META_MARK, STANDARD_NOTE, ReviewFileModel
from ide.app.review_pending import PendingReview
from ide.protocol.review import ChangeSetView

__all__ = ["META_MARK", "STANDARD_NOTE", "DiffEditor", "DiffHighlighter", "ReviewFileModel", "ReviewPane"]

STANDARD_DIFF_DELAY_MS = 50
"""Coalescing window for rebuilding the read-only review from streamed ACP diffs."""


class ReviewPane(PendingReview):
    """Files on the left, the selected file's diff on the right, hunk actions above it; History tab.

    Inputs: :meth:`set_session`, :meth:`set_interactive`, :meth:`set_changeset`, :meth:`show_branch`,
    :meth:`show_pending`, :meth:`show_apply_result`, :meth:`show_rollback_result`, :meth:`set_history`,
    :meth:`apply_update`, :meth:`revert`, :meth:`clear`. Outputs: the ``*Requested`` signals.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._standard = StandardDiffs()
        self._standard_timer = QTimer(self)
        self._standard_timer.setSingleShot(True)
        self._standard_timer.setInterval(STANDARD_DIFF_DELAY_MS)
        self._standard_timer.timeout.connect(self._show_standard_diffs)
        self._update_actions()

    def set_session(self, session_id: str, cwd: str) -> None:
        """A new session: forget what the pane showed for the previous one."""
        if session_id != self.session_id:
            self.clear()
        self.session_id = session_id
        self.cwd = cwd

    def set_interactive(self, interactive: bool) -> None:
        """True when the backend serves ``_arbor/review/*``; False shows standard ACP diffs read-only."""
        if self.branch is not None:
            self._pending_interactive = interactive  # for when the review comes back
            return
        self.interactive = interactive
        self.note.setVisible(not interactive)
        self._update_actions()

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a search branch's changes read-only under ``header`` (no decisions, apply or feedback),
        until :meth:`show_pending` brings back the session's pending review."""
        if self.branch is None:
            self._pending = self.changeset
            self._pending_interactive = self.interactive
        self.branch = changeset
        self.interactive = False
        self.note.hide()
        self.branch_label.setText(header)
        self.branch_bar.show()
        self.result_label.hide()
        self.conflict_list.hide()
        self._show_changeset(changeset)

    def show_pending(self) -> None:
        """Leave a branch shown by :meth:`show_branch`: the pending review, as it is now."""
        if self.branch is None:
            return
        self.branch = None
        self.branch_bar.hide()
        self.interactive = self._pending_interactive
        self.note.setVisible(not self.interactive)
        pending, self._pending = self._pending, None
        if pending is not None:
            self._show_changeset(pending)
        else:
            self.changeset = None
            self.files_model.set_files([], [])
            self.current_file = self.current_hunk = -1
            self._show_message("Select a file to see its changes.")
            self._update_actions()

    def clear(self) -> None:
        """Show nothing (a new session, or a replay about to rebuild the view)."""
        if self.branch is not None:
            self._pending = None
            self.show_pending()
        self._standard = StandardDiffs()
        self._standard_timer.stop()
        self.changeset = None
        self.conflicts = []
        self._decisions.clear()
        self._comments.clear()
        self.files_model.set_files([], [])
        self.current_file = self.current_hunk = -1
        self.conflict_list.clear()
        self.conflict_list.hide()
        self.result_label.hide()
        self._show_message("Select a file to see its changes.")
        self._update_actions()

    def set_changeset(self, changeset: ChangeSetView) -> None:
        """Show ``changeset`` as the truth, keeping the selected file and hunk where they still exist.

        While a branch is shown, it is kept for when the review comes back."""
        if self.branch is not None:
            self._pending = changeset
            return
        self._show_changeset(changeset)

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        previous_path = self._current_file_view().path if self._current_file_view() else None
        previous_hunk = self.current_hunk
        self.changeset = changeset
        self._decisions.clear()
        if self.interactive:
            self._comments.clear()
        files = changeset.files
        self.files_model.set_files(files, [file_state(file, self.decision_of) for file in files])
        row = next((i for i, file in enumerate(files) if file.path == previous_path), 0 if files else -1)
        self.current_file = -1
        if row >= 0:
            keep = previous_hunk if files[row].path == previous_path else 0
            self.select_file(row, hunk=min(keep, len(files[row].hunks) - 1))
        else:
            self.current_hunk = -1
            self._show_message("No changes to review.")
        self._update_actions()
        self.changesShown.emit(len(files))

    def apply_update(self, update: Any) -> None:
        """Collect standard ACP ``diff`` content of tool calls (only when the agent is not Arbor)."""
        if self.interactive:
            return
        if getattr(update, "session_update", None) not in ("tool_call", "tool_call_update"):
            return
        found = False
        for item in getattr(update, "content", None) or []:
            if getattr(item, "type", None) == "diff":
                self._standard.add(self._relative(item.path), item.old_text, item.new_text)
                found = True
        if found and not self._standard_timer.isActive():
            self._standard_timer.start()

    def _relative(self, path: str) -> str:
        if self.cwd:
            try:
                return Path(path).relative_to(self.cwd).as_posix()
            except ValueError:
                pass
        return path

    def _show_standard_diffs(self) -> None:
        self.set_changeset(self._standard.changeset(self.session_id or "", self.cwd or ""))

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
