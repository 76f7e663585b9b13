"""The Review pane's one line to the review it shows: :class:`ReviewClient` sends the pane's requests
(decide, apply, roll back, history, hunks, the session's change set) over a :class:`ReviewChannel` and
gives the pane their answers, takes the change sets pushed to it, and checks git's identity before the
Apply a change set invites.

The channel is Arbor's backend (the window's bridge), or Arbor's review backend once it holds a foreign
agent's edits: anything with the bridge's ``request``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from PySide6.QtCore import QObject, Signal

from ide.app.background import run_blocking, spawn
from ide.gitsafe import identity_fix, missing_identity

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ide.app.review.pane import ReviewPane
    from ide.protocol import ErrorInfo
    from ide.protocol.method import Method
    from ide.protocol.review import (
        ApplyParams,
        ApplyResult,
        ChangeSetView,
        DecideParams,
        HistoryParams,
        HistoryResult,
        HunksParams,
        HunksResult,
        RollbackParams,
        RollbackResult,
    )

P = TypeVar("P", bound="BaseModel")
T = TypeVar("T", bound="BaseModel")
Answer = Callable[[T], None]
"""What gets a request's answer."""
Refusal = Callable[["ErrorInfo"], None]
"""What gets a request's refusal, or word that no answer came."""


class ReviewChannel(Protocol):
    """Where review requests go: :class:`~ide.app.acp_client.BackendBridge` (Arbor's backend) or
    :class:`~ide.app.foreign.review_backend.ReviewBackend` (a foreign agent's edits)."""

    def request(self, method: Method[P, T], params: P, on_result: Answer[T], on_error: Refusal) -> bool:
        """Send ``method``: its answer goes to ``on_result``, a refusal or no answer to ``on_error``;
        False, and nothing sent, when it cannot go (the backend is not running)."""
        ...


class ReviewClient(QObject):
    """Owns the review's traffic: every request of ``pane`` goes over :attr:`channel`, every answer comes
    back to ``pane``, then to these signals."""

    changesetReceived = Signal(object)
    """The pane shows this :class:`ChangeSetView` now: pushed (:meth:`push`) or a request's answer."""
    applied = Signal(object)
    """The pane shows the :class:`ApplyResult` of an Apply: files may have been written, made or removed."""
    rolledBack = Signal(object)
    """The pane shows the :class:`RollbackResult` of a Roll back: files were put back."""
    historyReceived = Signal(object)
    """The pane lists the :class:`HistoryResult` of a history request."""
    hunksReceived = Signal(object)
    """The pane has the :class:`HunksResult` of a hunks request (the files a summary left out)."""
    failed = Signal(str, object)
    """A request (its method) failed, with its :class:`ErrorInfo`: the pane dropped its guesses (the
    decisions not confirmed, the hunks it waited for)."""
    unsent = Signal()
    """A decision, an Apply or a Roll back could not be sent: the backend is not running."""
    identityChecked = Signal(str)
    """Git's identity for the workspace was checked: the warning the pane shows above Apply ("" when
    none)."""

    def __init__(
        self,
        pane: ReviewPane,
        channel: ReviewChannel,
        workspace: Path,
        commits: Callable[[], bool],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.pane = pane
        self.channel = channel
        """Where requests go: Arbor's backend, until a foreign agent's review backend takes over."""
        self.workspace = workspace
        self._commits = commits
        """Whether Apply commits (``review.commit = commit``): only then is git's identity checked."""
        self._pushed = 0
        """Change sets pushed so far (turn ends, a foreign agent's review): an answer to a query sent
        before the latest of them is older than what the pane shows, and is dropped."""
        pane.decideRequested.connect(self.decide)
        pane.applyRequested.connect(self.apply)
        pane.rollbackRequested.connect(self.rollback)
        pane.historyRequested.connect(self.history)
        pane.hunksRequested.connect(self.hunks)

    def push(self, changeset: ChangeSetView) -> None:
        """A change set pushed to the review (a turn's end, a foreign agent's capture): shown, without the
        line about an earlier Apply, and git's identity checked again (the user may have fixed it)."""
        self._pushed += 1
        self.pane.forget_result()
        self._show(changeset)
        self.check_identity()

    def query(self, session_id: str) -> bool:
        """Ask for the session's change set; its answer is shown unless a change set is pushed meanwhile
        (the answer, sent before it, would blank the review it shows)."""
        from ide.protocol.review import CHANGESET, ChangeSetParams

        params = ChangeSetParams(session_id=session_id)
        return self._send(CHANGESET, params, partial(self._answered, self._pushed))

    def decide(self, params: DecideParams) -> None:
        from ide.protocol.review import DECIDE

        if not self._send(DECIDE, params, self._show):
            self.pane.revert()
            self.unsent.emit()

    def apply(self, params: ApplyParams) -> None:
        from ide.protocol.review import APPLY

        if not self._send(APPLY, params, self._applied):
            self.unsent.emit()

    def rollback(self, params: RollbackParams) -> None:
        from ide.protocol.review import ROLLBACK

        if not self._send(ROLLBACK, params, self._rolled_back):
            self.unsent.emit()

    def history(self, params: HistoryParams) -> None:
        from ide.protocol.review import HISTORY

        self._send(HISTORY, params, self._history)  # a refresh: no banner

    def hunks(self, params: HunksParams) -> None:
        from ide.protocol.review import HUNKS

        def failed(info: ErrorInfo) -> None:
            self.pane.hunks_failed(params)
            self.failed.emit(HUNKS, info)

        if not self.channel.request(HUNKS, params, self._hunks, failed):
            self.pane.hunks_failed(params)

    def check_identity(self) -> None:
        """Ask git (off the UI thread) whether Apply's commit will have an author; the pane warns with the
        fix when it will not (only when Apply commits)."""
        if self._commits():
            spawn(self._check_identity(), name="check git identity")

    def _send(self, method: Method[Any, Any], params: BaseModel, done: Callable[[Any], None]) -> bool:
        return self.channel.request(method, params, done, partial(self._failed, method))

    def _failed(self, method: str, info: ErrorInfo) -> None:
        from ide.protocol.review import APPLY

        if method == APPLY:
            self.check_identity()
        self.pane.revert()
        self.failed.emit(method, info)

    def _answered(self, pushed_before: int, changeset: ChangeSetView) -> None:
        if self._pushed == pushed_before:
            self._show(changeset)

    def _show(self, changeset: ChangeSetView) -> None:
        self.pane.set_changeset(changeset)
        self.changesetReceived.emit(changeset)

    def _applied(self, result: ApplyResult) -> None:
        self.pane.show_apply_result(result)
        self.check_identity()
        self.applied.emit(result)

    def _rolled_back(self, result: RollbackResult) -> None:
        self.pane.show_rollback_result(result)
        self.rolledBack.emit(result)

    def _history(self, result: HistoryResult) -> None:
        self.pane.set_history(result)
        self.historyReceived.emit(result)

    def _hunks(self, result: HunksResult) -> None:
        self.pane.set_hunks(result)
        self.hunksReceived.emit(result)

    async def _check_identity(self) -> None:
        workspace = self.workspace
        missing = await run_blocking(missing_identity, workspace)
        warning = (
            f"Apply will fail to commit: git has no {' and '.join(missing)} for {workspace}. "
            f"Set them once with: {identity_fix(missing)}"
            if missing
            else ""  # set, or git could not be asked (Apply will say why)
        )
        self.pane.set_identity_warning(warning)
        self.identityChecked.emit(warning)
