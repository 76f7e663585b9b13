"""The pending review of a session's change set: decisions, comments, feedback, apply, conflicts, history."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QTreeWidgetItem,
)

from ide.app.diffs import feedback_prompt
from ide.app.review_browse import ReviewBrowser
from ide.protocol.review import (
    ApplyParams,
    ApplyResult,
    DecideParams,
    Decision,
    HistoryParams,
    HistoryResult,
    HunkView,
    RollbackParams,
    RollbackResult,
)


class PendingReview(ReviewBrowser):
    """Deciding the pending change set hunk by hunk, applying it, and rolling applied batches back."""

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
            commit = f", commit {result.batch.commit[:10]}" if result.batch.commit else ""
            parts.append(f"Applied {len(result.batch.paths)} file(s) as batch {result.batch.id}{commit}.")
        else:
            parts.append("Nothing was written.")
        if self.conflicts:
            parts.append(
                f"{len(self.conflicts)} file(s) changed on disk meanwhile and were not written; "
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
        text = f"Rolled back batch {result.batch.id}: restored {len(result.restored)} file(s)."
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
        # As the backend does: meta files are never decided wholesale.
        self._decide(params, [hunk for file in self.changeset.files if not file.meta for hunk in file.hunks])

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
        if not batch.rolled_back:
            self.rollbackRequested.emit(RollbackParams(cwd=batch.cwd, batch_id=batch.id))

    def _on_tab(self, index: int) -> None:
        if self.tabs.widget(index) is not None and self.tabs.tabText(index) == "History":
            self.request_history()
