"""The Review dock: the session's change set — decide, apply, roll back, history — and branch diffs shown
read-only. A failed review request reverts only the review's optimistic decisions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal, SignalInstance

from ide.app.background import run_blocking, spawn
from ide.app.parts.base import BOTTOM, AppContext, Dock, Spec
from ide.app.parts.capabilities import Review
from ide.app.review.pane import ReviewPane
from ide.gitsafe import identity_fix, missing_identity

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ide.app.acp_client import BackendBridge
    from ide.app.foreign.review_backend import ReviewBackend
    from ide.client.events import SessionEvent
    from ide.protocol import ErrorInfo
    from ide.protocol.method import Method
    from ide.protocol.review import (
        ApplyParams,
        ChangeSetView,
        DecideParams,
        HistoryParams,
        HunksParams,
        RollbackParams,
    )


class ReviewDock(Dock):
    """Shown when there is something to review; tabbed with the search tree."""

    spec = Spec("review", title="Review", place=BOTTOM, order=30)
    provides = (Review,)
    min_width = None  # its rows of buttons wrap when narrow: never squeezed into fragments of their words

    changesetReceived = Signal(object)
    """The session's :class:`ChangeSetView`: pushed after a turn, or the answer to a review request."""
    applied = Signal(object)
    """The :class:`ApplyResult` of an apply."""
    rolledBack = Signal(object)
    """The :class:`RollbackResult` of a rollback."""
    historyReceived = Signal(object)
    """The :class:`HistoryResult` of a history request."""
    hunksReceived = Signal(object)
    """The :class:`HunksResult` of a hunks request (the files a summary left out, as they are shown)."""
    reviewFailed = Signal(str)
    """A review request (its method) failed; the banner says why, and the pane drops its guesses."""
    identityChecked = Signal(str)
    """Git's identity for the workspace was checked: the warning shown above Apply ("" when none)."""

    def __init__(self, ctx: AppContext) -> None:
        self.pane = ReviewPane()
        super().__init__(ctx, self.pane)
        self.channel: BackendBridge | ReviewBackend = self.bridge
        """Where review requests go: Arbor's backend, until a foreign agent's review backend takes over."""
        pane, bridge = self.pane, self.bridge
        bridge.replayStarting.connect(pane.clear)  # the replayed tool calls rebuild it
        self._pushed = 0
        """Change sets pushed so far (turn ends, a foreign agent's review): an answer to a query sent
        before the latest of them is older than what the pane shows, and is dropped."""
        self.changesetReceived.connect(pane.set_changeset)
        self.applied.connect(pane.show_apply_result)
        self.rolledBack.connect(pane.show_rollback_result)
        self.historyReceived.connect(pane.set_history)
        self.reviewFailed.connect(lambda _method: pane.revert())
        pane.decideRequested.connect(self._decide)
        pane.applyRequested.connect(self._apply)
        pane.rollbackRequested.connect(self._rollback)
        pane.historyRequested.connect(self._history)
        pane.hunksRequested.connect(self._hunks)
        self.hunksReceived.connect(pane.set_hunks)
        pane.feedbackRequested.connect(ctx.send_prompt)
        pane.changesShown.connect(self._show)
        self._apply_error: tuple[str, str] | None = None
        """(kind, message) of the Apply error the banner shows, which the next Apply's success clears."""
        ctx.with_settings(lambda settings: pane.set_commit_mode(settings.review.commit))
        self.identityChecked.connect(pane.set_identity_warning)
        self.applied.connect(self._applied)

    def subscribe(self) -> None:
        from ide.protocol.review import CHANGESET_NOTIFICATION

        self.bridge.on_notification(CHANGESET_NOTIFICATION, self._push)

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a search branch's changes read-only, and the dock."""
        self.pane.show_branch(changeset, header)
        self.show()

    def show_foreign(self, changeset: ChangeSetView, channel: ReviewBackend) -> None:
        """A foreign agent's edits, held by Arbor's review backend: reviewed, applied and rolled back here
        like Arbor's own, through ``channel`` from now on (the plain ACP diffs shown so far give way)."""
        self.channel = channel
        self.pane.set_session(changeset.session_id, str(self.ctx.workspace))
        self.pane.set_interactive(True)
        self._push(changeset)

    def _push(self, changeset: ChangeSetView) -> None:
        self._pushed += 1
        self.pane.forget_result()
        self.changesetReceived.emit(changeset)
        self.check_identity()  # before the Apply this change set invites: the user may have fixed it since

    def _send(
        self, method: Method[Any, Any], params: BaseModel, done: SignalInstance | Callable[[Any], None]
    ) -> bool:
        failed = partial(self._failed, method)
        answered = done.emit if isinstance(done, SignalInstance) else done
        return self.channel.request(method, params, answered, failed)

    def _failed(self, method: str, info: ErrorInfo) -> None:
        from ide.protocol.review import APPLY

        self.ctx.show_error(info)
        if method == APPLY:
            self._apply_error = (info.kind, info.message)
            self.check_identity()
        self.reviewFailed.emit(method)

    def _applied(self, _result: object) -> None:
        """A successful Apply: the banner's earlier Apply error, if it still shows, is stale now."""
        banner, error = self.ctx.banner, self._apply_error
        self._apply_error = None
        self.check_identity()
        if error is not None and banner.wanted and (banner.kind, banner.title.text()) == error:
            banner.dismiss()

    def check_identity(self) -> None:
        """Ask git (off the UI thread) whether Apply's commit will have an author; the pane warns with the
        fix when it will not (only when Apply commits: review.commit = commit)."""
        if self.ctx.settings.review.commit == "commit":
            spawn(self._check_identity(), name="check git identity")

    async def _check_identity(self) -> None:
        workspace = self.ctx.workspace
        missing = await run_blocking(missing_identity, workspace)
        if not missing:
            self.identityChecked.emit("")  # set, or git could not be asked (Apply will say why)
            return
        self.identityChecked.emit(
            f"Apply will fail to commit: git has no {' and '.join(missing)} for {workspace}. "
            f"Set them once with: {identity_fix(missing)}"
        )

    def on_session_event(self, event: SessionEvent) -> None:
        self.pane.apply_event(event)

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        self.pane.show_pending_diffs()  # the turn's diffs are all in: shown before anyone hears it ended

    def on_session_ready(self, session_id: str, _replayed: bool) -> None:
        from ide.protocol.review import APPLY, CHANGESET, DECIDE, ChangeSetParams

        reviewable = self.bridge.supports(DECIDE) and self.bridge.supports(APPLY)
        # An agent in a shadow is reviewed here once its first capture comes (show_foreign): its plain ACP
        # diffs are not shown meanwhile as "review them in the agent itself".
        shadowed = self.bridge.agent_dir != self.bridge.workspace
        self.pane.set_interactive(reviewable or shadowed)
        self.pane.set_session(session_id, str(self.ctx.workspace))
        self.check_identity()
        if reviewable:
            params = ChangeSetParams(session_id=session_id)
            self._send(CHANGESET, params, partial(self._answered, self._pushed))

    def _answered(self, pushed_before: int, changeset: ChangeSetView) -> None:
        """The answer to the session's change-set query, unless a turn's change set came in meanwhile
        (the answer, sent before it, would blank the review it shows)."""
        if self._pushed == pushed_before:
            self.changesetReceived.emit(changeset)

    def _decide(self, params: DecideParams) -> None:
        from ide.protocol.review import DECIDE

        if not self._send(DECIDE, params, self.changesetReceived):
            self.pane.revert()
            self._unavailable()

    def _apply(self, params: ApplyParams) -> None:
        from ide.protocol.review import APPLY

        if not self._send(APPLY, params, self.applied):
            self._unavailable()

    def _rollback(self, params: RollbackParams) -> None:
        from ide.protocol.review import ROLLBACK

        if not self._send(ROLLBACK, params, self.rolledBack):
            self._unavailable()

    def _history(self, params: HistoryParams) -> None:
        from ide.protocol.review import HISTORY

        self._send(HISTORY, params, self.historyReceived)  # a refresh: no banner

    def _hunks(self, params: HunksParams) -> None:
        from ide.protocol.review import HUNKS

        def failed(info: ErrorInfo) -> None:
            self.ctx.show_error(info)
            self.pane.hunks_failed(params)

        if not self.channel.request(HUNKS, params, self.hunksReceived.emit, failed):
            self.pane.hunks_failed(params)

    def _unavailable(self) -> None:
        self.ctx.banner.show_notice(
            "The review could not be sent: the backend is not running.",
            "Restart it from the Agent menu; the change set is kept by the session.",
        )

    def _show(self, files: int) -> None:
        if files:
            self.show()
