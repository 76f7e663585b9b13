"""The Chat dock: the conversation, its prompt box and mode picker, kept across a restored session; how
each turn ended (answered, stopped, failed and why), with a failed turn's open search tree closed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from ide.app.acp_client import BackendState
from ide.app.chat.panel import ChatPanel
from ide.app.parts.base import SIDE, AppContext, Dock, KeptAcrossReplay, Spec
from ide.app.parts.capabilities import Chat, OpensFiles, SearchTrees
from ide.app.parts.needs import Requires, Uses

if TYPE_CHECKING:
    from ide.client.events import SessionEvent
    from ide.protocol import ErrorInfo


class ChatDock(Dock):
    """Shows the session's updates; a restart's replay rebuilds it, a failed replay restores it."""

    spec = Spec("chat", title="Chat", place=SIDE, order=20)
    provides = (Chat,)
    files = Requires(OpensFiles)
    trees = Uses(SearchTrees)

    def __init__(self, ctx: AppContext) -> None:
        self.panel = ChatPanel()
        self.panel.workspace = ctx.workspace
        super().__init__(ctx, self.panel)
        self.kept = KeptAcrossReplay(self.bridge, self.panel.clear, self.panel.replay)
        """What the chat showed before a replay: if the replay fails, the old transcript comes back."""
        self._error: ErrorInfo | None = None
        """The error the bridge raised in this turn of the event loop (the prompt's answer, if the
        state goes back to ready in the same call)."""
        bridge, panel = self.bridge, self.panel
        bridge.stateChanged.connect(panel.set_backend_state)
        bridge.modeChanged.connect(lambda _mode: self._show_modes())
        panel.promptSubmitted.connect(ctx.send_prompt)
        panel.modeChosen.connect(bridge.set_mode)
        panel.stopRequested.connect(bridge.cancel)
        panel.locationActivated.connect(self.files.open_location)

    def _show_modes(self) -> None:
        self.panel.set_modes(self.bridge.modes, self.bridge.mode)

    def on_session_event(self, event: SessionEvent) -> None:
        self.panel.apply_update(event)

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        self.panel.turn_ended(stop_reason)

    def on_session_ready(self, _session_id: str, replayed: bool) -> None:
        self._show_modes()
        if replayed:
            self.panel.flush()

    def on_error(self, info: ErrorInfo) -> None:
        self._error = info
        QTimer.singleShot(0, self._forget_error)

    def _forget_error(self) -> None:
        self._error = None

    def on_state(self, state: str) -> None:
        # A failed prompt: the bridge raises its error, then goes back to ready in the same call.
        if state == BackendState.READY and self.panel.turn_running and self._error is not None:
            info, self._error = self._error, None
            self._turn_failed(info.message, info.fix)

    def on_backend_died(self, *_: object) -> None:
        if self.panel.turn_running:
            self._turn_failed("the backend stopped during the turn.", "Restart it (the banner's button).")

    def _turn_failed(self, message: str, fix: str | None) -> None:
        self.panel.turn_failed(message, fix)
        if self.trees is not None:  # a failed turn's open search trees are closed
            self.trees.close_open_runs(f"{message}\n{fix}" if fix else message)
