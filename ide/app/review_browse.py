"""Browsing a change set in the Review pane: file selection, the diff views, hunk navigation, actions."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import (
    QModelIndex,
)

from ide.app.diff_editor import DiffEditor, lex_rows
from ide.app.diffs import file_state, header_text, side_by_side_rows, unified_rows
from ide.app.review_layout import META_MARK, ReviewLayout
from ide.protocol.hidden import describe
from ide.protocol.review import Decision, FileChangeView, HunkView


class ReviewBrowser(ReviewLayout):
    """The shown change set's file list and diff, the current hunk, and which actions apply to it."""

    def decision_of(self, hunk: HunkView) -> Decision:
        return self._decisions.get(hunk.id, hunk.decision)

    def comment_of(self, hunk: HunkView) -> str | None:
        return self._comments.get(hunk.id, hunk.comment)

    def _current_file_view(self) -> FileChangeView | None:
        if self.changeset is None or not 0 <= self.current_file < len(self.changeset.files):
            return None
        return self.changeset.files[self.current_file]

    def current_hunk_view(self) -> HunkView | None:
        file = self._current_file_view()
        if file is None or not 0 <= self.current_hunk < len(file.hunks):
            return None
        return file.hunks[self.current_hunk]

    def select_file(self, row: int, hunk: int = 0) -> None:
        """Show file ``row`` of the list with hunk ``hunk`` current (-1: its last hunk)."""
        if self.changeset is None or not 0 <= row < len(self.changeset.files):
            return
        file = self.changeset.files[row]
        self.current_hunk = (len(file.hunks) - 1 if hunk < 0 else hunk) if file.hunks else -1
        if row != self.current_file:
            self.current_file = row
            self.file_list.selectionModel().blockSignals(True)
            self.file_list.setCurrentIndex(self.files_model.index(row, 0))
            self.file_list.selectionModel().blockSignals(False)
            self.file_list.scrollTo(self.files_model.index(row, 0))
        self._render_current()
        self._update_actions()

    def _on_file_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and current.row() != self.current_file:
            self.select_file(current.row())

    def set_side_by_side(self, on: bool) -> None:
        self.side_by_side = on
        if self.view_toggle.isChecked() != on:
            self.view_toggle.setChecked(on)
        self._render_current()

    def _header(self, hunk: HunkView) -> str:
        return header_text(hunk, self.decision_of(hunk), self.comment_of(hunk))

    def _render_current(self) -> None:
        """Render the selected file into the unified or the side-by-side view (only that file)."""
        file = self._current_file_view()
        hidden = [finding for hunk in file.hunks for finding in hunk.hidden] if file is not None else []
        self.meta_label.setVisible(file is not None and (file.meta is not None or bool(hidden)))
        if file is None:
            return
        notes = []
        if file.meta:
            notes.append(
                f"{META_MARK}{file.path} needs its own accept — {file.meta}. "
                "Accept all leaves it pending; Accept file (Shift+A) or each hunk accepts it."
            )
        if hidden:
            notes.append(
                f"{META_MARK}This change hides characters: {describe(hidden)}. The text reads differently "
                "than it runs (Trojan Source); they are shown as ⟪U+…⟫. Accept all leaves such hunks "
                "pending: read each, then accept it on its own."
            )
        if notes:
            self.meta_label.setText("\n".join(notes))
        if not file.hunks:
            if file.binary:
                self._show_message(f"{file.path} is a binary file ({file.status}).")
            elif file.old_path:
                self._show_message(f"Renamed from {file.old_path}, content unchanged.")
            else:
                self._show_message(f"{file.path}: {file.status}, no text changes.")
            return
        rows = unified_rows(file, self._header)
        decisions = [self.decision_of(hunk) for hunk in file.hunks]
        name = Path(file.path).name
        if self.side_by_side:
            left, right = side_by_side_rows(rows)
            keep = self.left.verticalScrollBar().value() if self.left.rows else 0
            for editor, column in ((self.left, left), (self.right, right)):
                editor.decisions = decisions
                editor.current_hunk = self.current_hunk
                editor.set_rows(column, lex_rows(name, column, prefixed=False), 0)
            self.diff_pages.setCurrentWidget(self._split_page)
            self._scroll_to_hunk(self.left, keep)
        else:
            keep = self.unified.verticalScrollBar().value()
            self.unified.decisions = decisions
            self.unified.current_hunk = self.current_hunk
            self.unified.set_rows(rows, lex_rows(name, rows, prefixed=True), 1)
            self.diff_pages.setCurrentWidget(self.unified)
            self._scroll_to_hunk(self.unified, keep)

    def _scroll_to_hunk(self, editor: DiffEditor, keep: int) -> None:
        first = editor.first_block_of(self.current_hunk)
        bar = editor.verticalScrollBar()
        last = first + sum(1 for row in editor.rows if row.hunk == self.current_hunk)
        visible = max(1, editor.viewport().height() // max(1, editor.fontMetrics().height()))
        # Keep the scroll position across re-renders unless the current hunk would be off screen.
        if keep <= first and last <= keep + visible:
            bar.setValue(keep)
        else:
            editor.scroll_to_block(first)

    def _mark_current(self) -> None:
        for editor in (self.unified, self.left, self.right):
            editor.current_hunk = self.current_hunk
            editor.viewport().update()
        editor = self.left if self.side_by_side else self.unified
        self._scroll_to_hunk(editor, editor.verticalScrollBar().value())
        self._update_actions()

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.diff_pages.setCurrentWidget(self.message)

    def next_hunk(self) -> None:
        """Move to the next hunk, on to the next file's first hunk after the last one (j)."""
        file = self._current_file_view()
        if file is None:
            return
        if self.current_hunk + 1 < len(file.hunks):
            self.current_hunk += 1
            self._mark_current()
        elif self.changeset is not None and self.current_file + 1 < len(self.changeset.files):
            self.select_file(self.current_file + 1, 0)

    def previous_hunk(self) -> None:
        """Move to the previous hunk, back to the previous file's last hunk before the first one (k)."""
        if self._current_file_view() is None:
            return
        if self.current_hunk > 0:
            self.current_hunk -= 1
            self._mark_current()
        elif self.current_file > 0:
            self.select_file(self.current_file - 1, -1)

    def _refresh_states(self) -> None:
        if self.changeset is None:
            return
        for row, file in enumerate(self.changeset.files):
            self.files_model.set_state(row, file_state(file, self.decision_of))

    def _update_actions(self) -> None:
        hunk = self.current_hunk_view()
        file = self._current_file_view()
        has_changes = self.changeset is not None and bool(self.changeset.files)
        for button in (self.accept_button, self.reject_button):
            button.setEnabled(self.interactive and hunk is not None)
        for button in (self.accept_file_button, self.reject_file_button):
            button.setEnabled(self.interactive and file is not None)
        for button in (self.accept_all_button, self.reject_all_button, self.apply_button):
            button.setEnabled(self.interactive and has_changes)
        commentable = hunk is not None and self.branch is None
        self.comment_edit.setEnabled(commentable)
        self.comment_button.setEnabled(commentable)
        self.feedback_button.setEnabled(self.branch is None and self.feedback_text() is not None)
        row = self.history_tree.indexOfTopLevelItem(self.history_tree.currentItem())
        can_roll_back = 0 <= row < len(self.batches.batches) and not self.batches.batches[row].rolled_back
        self.rollback_button.setEnabled(self.interactive and can_roll_back)
        self.refresh_history_button.setEnabled(self.interactive)
        if file is not None and hunk is not None:
            self.hunk_label.setText(
                f"Hunk {self.current_hunk + 1}/{len(file.hunks)} · {self.decision_of(hunk)}"
            )
        else:
            self.hunk_label.setText("")
        self.summary.setText(self._summary())

    def _summary(self) -> str:
        if self.branch is not None:
            files = self.branch.files
            hunks = sum(len(file.hunks) for file in files)
            return (
                f"{len(files)} files · {hunks} hunks · read-only" if files else "This branch changed nothing."
            )
        if self.changeset is None or not self.changeset.files:
            return "No changes to review."
        counts = {"pending": 0, "accepted": 0, "rejected": 0}
        for file in self.changeset.files:
            for hunk in file.hunks:
                counts[self.decision_of(hunk)] += 1
        total = sum(counts.values())
        meta = sum(
            1
            for file in self.changeset.files
            if file.meta and any(self.decision_of(hunk) == "pending" for hunk in file.hunks)
        )
        own = f" · {meta} need their own accept" if meta else ""
        return (
            f"{len(self.changeset.files)} files · {total} hunks · {counts['accepted']} accepted · "
            f"{counts['rejected']} rejected · {counts['pending']} pending{own}"
        )
