"""The Chat dock: the conversation, its prompt box and mode picker, kept across a restored session."""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtCore import Qt

from ide.app.chat import ChatPanel
from ide.app.docks.base import AppContext, Dock


class ChatDock(Dock):
    """Shows the session's updates; a restart's replay rebuilds it, a failed replay restores it."""

    name = "chat"
    title = "Chat"
    order = 20
    area = Qt.DockWidgetArea.RightDockWidgetArea
    tab_group = "side"
    exposes: ClassVar[dict[str, str]] = {"chat": "panel"}

    def __init__(self, ctx: AppContext) -> None:
        self.panel = ChatPanel()
        self.panel.workspace = ctx.workspace
        super().__init__(ctx, self.panel)
        self._saved: list[Any] | None = None
        bridge, panel = self.bridge, self.panel
        bridge.sessionUpdate.connect(panel.apply_update)
        bridge.stateChanged.connect(panel.set_backend_state)
        bridge.modeChanged.connect(lambda _mode: self._show_modes())
        bridge.sessionReady.connect(self._on_session_ready)
        bridge.turnFinished.connect(lambda *_: panel.flush())
        bridge.replayStarting.connect(self._on_replay_starting)
        bridge.replayFailed.connect(self._on_replay_failed)
        panel.promptSubmitted.connect(ctx.send_prompt)
        panel.modeChosen.connect(bridge.set_mode)
        panel.stopRequested.connect(bridge.cancel)
        panel.locationActivated.connect(ctx.open_location)

    def _show_modes(self) -> None:
        self.panel.set_modes(self.bridge.modes, self.bridge.mode)

    def _on_session_ready(self, _session_id: str, replayed: bool) -> None:
        self._show_modes()
        self._saved = None
        if replayed:
            self.panel.flush()

    def _on_replay_starting(self) -> None:
        # Keep what the chat showed: if the replay fails, the old transcript comes back.
        self._saved = self.panel.clear()

    def _on_replay_failed(self, _message: str) -> None:
        if self._saved is not None:
            self.panel.clear()
            self.panel.replay(self._saved)
            self._saved = None
