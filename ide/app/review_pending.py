"""The pending review of a session's change set: decisions, comments, feedback, apply, conflicts, history."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QTreeWidgetItem

from ide.app.diffs import feedback_prompt
from ide.app.review_browse import ReviewBrowser
from ide.protocol.review import (
    ApplyParams,
    ApplyResult,
    BatchView,
    DecideParams,
    Decision,
    HistoryParams,
    HistoryResult,
    HunkView,
    RollbackParams,
    RollbackResult,
)

PATHS_NAMED = 8
"""Files the Roll back confirmation names before "and N more"."""


def plural(count: int, noun: str) -> str:
    """``1 file``, ``3 files``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def commit_phrase(batch: BatchView) -> str:
    """``commit 1a2b3c4d5e "Fix the greeting"`` (its subject), or '' for a batch with no commit."""
    if not batch.commit:
        return ""
    subject = batch.message.splitlines()[0] if batch.message else ""
    return f'commit {batch.commit[:10]} "{subject}"' if subject else f"commit {batch.commit[:10]}"


def rollback_question(batch: BatchView) -> tuple[str, str]:
    """(text, details) of the Roll back confirmation: the files it restores and the commit it reverts."""
    named = ", ".join(batch.paths[:PATHS_NAMED])
    more = len(batch.paths) - PATHS_NAMED
    files = named + (f" and {more} more" if more > 0 else "")
    restores = plural(len(batch.paths), "file")
    text = f"Roll back batch {batch.id}? It restores {restores} as they were before Apply: {files}."
    commit = commit_phrase(batch)
    details = (
        f"Arbor's {commit} is reverted by a new commit; edits of yours made since stay on disk, uncommitted."
        if commit
        else "The batch made no commit; the files are restored from its checkpoint."
    )
    return text, details


class PendingReview(ReviewBrowser):
    """Deciding the pending change set hunk by hunk, applying it, and rolling applied batches back."""

    rollback_confirm: QMessageBox | None = None
    """The last Roll back confirmation asked (it names the files and the commit)."""

    def revert(self) -> None:
        """Drop decisions the backend did not confirm (its request failed) and show its last truth."""
        if self._decisions and self.changeset is not None:
            self._decisions.clear()
            self._refresh_states()
            self._render_current()
            self._update_actions()

    def show_apply_result(self, result: ApplyResult) -> None:
        """What Apply did: the remaining change set, the batch written and any conflicts."""
        self.set_changeset(result.changeset)
        self.conflicts = list(result.conflicts)
        parts = []
        if result.batch is not None:
            commit = commit_phrase(result.batch)
            written = plural(len(result.batch.paths), "file")
            parts.append(f"Applied {written} as batch {result.batch.id}{', ' + commit if commit else ''}.")
        else:
            parts.append("Nothing was written.")
        if result.uncommitted:
            parts.append(
                f"{plural(len(result.uncommitted), 'file')} written but left out of the commit "
                f"(it overlaps edits of yours): {', '.join(result.uncommitted)}."
            )
        if self.conflicts:
            changed = plural(len(self.conflicts), "file")
            verb = "was" if len(self.conflicts) == 1 else "were"
            parts.append(
                f"{changed} changed on disk meanwhile and {verb} not written; "
                "select one below to see the merge with conflict markers."
            )
        self.result_label.setText(" ".join(parts))
        self.result_label.show()
        self.conflict_list.clear()
        for conflict in self.conflicts:
            self.conflict_list.addItem(f"{conflict.path} — {conflict.message}")
        self.conflict_list.setVisible(bool(self.conflicts))
        self.request_history()

    def show_conflict(self, index: int) -> None:
        """Show the merged-with-markers text of conflict ``index`` in place of the diff."""
        if not 0 <= index < len(self.conflicts):
            return
        conflict = self.conflicts[index]
        if conflict.merged is None:
            self._show_message(f"{conflict.path}: {conflict.message}")
            return
        self.merged_view.setPlainText(conflict.merged)
        self.diff_pages.setCurrentWidget(self.merged_view)

    def set_history(self, history: HistoryResult) -> None:
        """List applied batches, newest first as the backend sends them."""
        self.batches = history
        self.history_tree.clear()
        for batch in history.batches:
            item = QTreeWidgetItem(
                [
                    batch.created_at,
                    batch.message.splitlines()[0] if batch.message else "",
                    str(len(batch.paths)),
                    (batch.commit or "")[:10],
                    "rolled back" if batch.rolled_back else "applied",
                ]
            )
            item.setToolTip(2, "\n".join(batch.paths))
            self.history_tree.addTopLevelItem(item)
        if history.batches:
            self.history_tree.setCurrentItem(self.history_tree.topLevelItem(0))
        self._update_actions()

    def show_rollback_result(self, result: RollbackResult) -> None:
        commit = commit_phrase(result.batch)
        text = f"Rolled back batch {result.batch.id}"
        text += f" ({commit})" if commit else ""
        text += f": restored {plural(len(result.restored), 'file')}."
        if result.refused:
            text += " Not restored: " + "; ".join(f"{c.path} — {c.message}" for c in result.refused)
        self.history_label.setText(text)
        self.request_history()

    def _decide(self, params: DecideParams, hunks: list[HunkView]) -> None:
        for hunk in hunks:
            self._decisions[hunk.id] = params.decision
        self._refresh_states()
        self._render_current()
        self._update_actions()
        self.decideRequested.emit(params)

    def decide_hunk(self, decision: Decision) -> None:
        """Decide the current hunk, then move to the next one (a / r)."""
        hunk = self.current_hunk_view()
        if not self.interactive or hunk is None or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, hunk_ids=[hunk.id])
        self._decide(params, [hunk])
        self.next_hunk()

    def decide_file(self, decision: Decision) -> None:
        """Decide every hunk of the selected file, then move to the next file (Shift+A / Shift+R)."""
        file = self._current_file_view()
        if not self.interactive or file is None or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, paths=[file.path])
        self._decide(params, file.hunks)
        if self.current_file + 1 < len(self.changeset.files):
            self.select_file(self.current_file + 1, 0)

    def decide_all(self, decision: Decision) -> None:
        """Decide every hunk of the change set (Accept all / Reject all)."""
        if not self.interactive or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, all=True)
        self._decide(params, self.changeset.wholesale_hunks())

    def comment_on_hunk(self) -> None:
        """Attach the comment box's text to the current hunk (and record it with the backend)."""
        hunk = self.current_hunk_view()
        text = self.comment_edit.text().strip()
        if hunk is None or self.changeset is None or not text or self.branch is not None:
            return
        self._comments[hunk.id] = text
        self.comment_edit.clear()
        if self.interactive:
            self.decideRequested.emit(
                DecideParams(
                    session_id=self.changeset.session_id,
                    decision=self.decision_of(hunk),
                    hunk_ids=[hunk.id],
                    comment=text,
                )
            )
        self._render_current()
        self._update_actions()

    def feedback_text(self) -> str | None:
        """The refinement prompt Send feedback would send (None without comments)."""
        if self.changeset is None:
            return None
        return feedback_prompt(self.changeset, self.comment_of)

    def send_feedback(self) -> None:
        text = self.feedback_text()
        if text is not None and self.branch is None:
            self.feedbackRequested.emit(text)

    def apply(self) -> None:
        if self.interactive and self.changeset is not None:
            self.applyRequested.emit(ApplyParams(session_id=self.changeset.session_id))

    def request_history(self) -> None:
        if self.interactive and self.cwd:
            self.historyRequested.emit(HistoryParams(cwd=self.cwd))

    def roll_back_selected(self) -> None:
        """Roll back the batch selected in the History tab."""
        row = self.history_tree.indexOfTopLevelItem(self.history_tree.currentItem())
        if not self.interactive or not 0 <= row < len(self.batches.batches):
            return
        batch = self.batches.batches[row]
        if batch.rolled_back:
            return
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

    def _on_tab(self, index: int) -> None:
        if self.tabs.widget(index) is not None and self.tabs.tabText(index) == "History":
            self.request_history()
