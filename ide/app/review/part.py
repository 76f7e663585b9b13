"""The Review dock: the session's change set — decide, apply, roll back, history — and branch diffs shown
read-only. A failed review request reverts only the review's optimistic decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import SignalInstance

from ide.app.parts.base import BOTTOM, AppContext, Dock, Spec
from ide.app.parts.capabilities import Review
from ide.app.review.client import ReviewChannel, ReviewClient
from ide.app.review.pane import ReviewPane

if TYPE_CHECKING:
    from ide.client.events import SessionEvent
    from ide.protocol import ErrorInfo
    from ide.protocol.review import ChangeSetView


class ReviewDock(Dock):
    """Shown when there is something to review; tabbed with the search tree."""

    spec = Spec("review", title="Review", place=BOTTOM, order=30)
    provides = (Review,)
    min_width = None  # its rows of buttons wrap when narrow: never squeezed into fragments of their words

    def __init__(self, ctx: AppContext) -> None:
        self.pane = ReviewPane()
        super().__init__(ctx, self.pane)
        pane, bridge = self.pane, self.bridge

        def commits() -> bool:
            return ctx.settings.review.commit == "commit"

        self.client = ReviewClient(pane, bridge, ctx.workspace, commits, parent=self)
        """The review's traffic: the pane's requests over Arbor's backend, until a foreign agent's review
        backend takes over (:meth:`show_foreign`), and their answers back to the pane."""
        bridge.replayStarting.connect(pane.clear)  # the replayed tool calls rebuild it
        self.client.failed.connect(self._failed)
        self.client.unsent.connect(self._unavailable)
        self.client.applied.connect(self._applied)
        pane.feedbackRequested.connect(ctx.send_prompt)
        pane.changesShown.connect(self._show)
        self._apply_error: tuple[str, str] | None = None
        """(kind, message) of the Apply error the banner shows, which the next Apply's success clears."""
        ctx.with_settings(lambda settings: pane.set_commit_mode(settings.review.commit))

    @property
    def applied(self) -> SignalInstance:
        """An Apply answered (its ``ApplyResult``), shown in the pane: :attr:`ReviewClient.applied`."""
        return self.client.applied

    @property
    def rolledBack(self) -> SignalInstance:
        """A Roll back answered, shown in the pane: :attr:`ReviewClient.rolledBack`."""
        return self.client.rolledBack

    def subscribe(self) -> None:
        from ide.protocol.review import CHANGESET_NOTIFICATION

        self.bridge.on_notification(CHANGESET_NOTIFICATION, self.client.push)

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a search branch's changes read-only, and the dock."""
        self.pane.show_branch(changeset, header)
        self.show()

    def show_changeset(self, changeset: ChangeSetView) -> None:
        """The session's change set now (a search branch adopted): shown as a pushed one — in place of a
        branch shown read-only — and the dock."""
        self.client.push(changeset)
        self.pane.show_pending()
        self.show()

    def show_foreign(self, changeset: ChangeSetView, channel: ReviewChannel) -> None:
        """A foreign agent's edits, held by Arbor's review backend: reviewed, applied and rolled back here
        like Arbor's own, through ``channel`` from now on (the plain ACP diffs shown so far give way)."""
        self.client.channel = channel
        self.pane.set_session(changeset.session_id, str(self.ctx.workspace))
        self.pane.set_interactive(True)
        self.client.push(changeset)

    def _failed(self, method: str, info: ErrorInfo) -> None:
        """A review request failed: the banner says why (an Apply's error until the next Apply succeeds)."""
        from ide.protocol.review import APPLY

        self.ctx.show_error(info)
        if method == APPLY:
            self._apply_error = (info.kind, info.message)

    def _applied(self, _result: object) -> None:
        """A successful Apply: the banner's earlier Apply error, if it still shows, is stale now."""
        banner, error = self.ctx.banner, self._apply_error
        self._apply_error = None
        if error is not None and banner.wanted and (banner.kind, banner.title.text()) == error:
            banner.dismiss()

    def on_session_event(self, event: SessionEvent) -> None:
        self.pane.apply_event(event)

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        self.pane.show_pending_diffs()  # the turn's diffs are all in: shown before anyone hears it ended

    def on_session_ready(self, session_id: str, _replayed: bool) -> None:
        from ide.protocol.review import APPLY, DECIDE

        reviewable = self.bridge.supports(DECIDE) and self.bridge.supports(APPLY)
        # An agent in a shadow is reviewed here once its first capture comes (show_foreign): its plain ACP
        # diffs are not shown meanwhile as "review them in the agent itself".
        shadowed = self.bridge.agent_dir != self.bridge.workspace
        self.pane.set_interactive(reviewable or shadowed)
        self.pane.set_session(session_id, str(self.ctx.workspace))
        self.client.check_identity()
        if reviewable:
            self.client.query(session_id)

    def _unavailable(self) -> None:
        self.ctx.banner.show_notice(
            "The review could not be sent: the backend is not running.",
            "Restart it from the Agent menu; the change set is kept by the session.",
        )

    def _show(self, files: int) -> None:
        if files:
            self.show()
