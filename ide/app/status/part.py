"""The backend's life where the whole window shows it: the status bar (state, agent and mode, the last
turn), the banner (an error, a death, a conversation that could not be restored, how a turn ended) and
the Stop Turn action."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ide.app.acp_client import BackendState
from ide.app.parts.base import AppContext, Part, Spec

if TYPE_CHECKING:
    from ide.protocol import ErrorInfo, TurnMeta

STOP_REASONS = {
    "max_tokens": "The model hit its output token limit; the answer may be cut short.",
    "max_turn_requests": "The agent used all the model calls one turn may make (agent.max_steps).",
    "refusal": "The model refused to answer.",
}
"""What the banner says when a turn ended for one of these reasons (an ordinary end says nothing)."""


class BackendLife(Part):
    """Status bar, banner and Stop action follow the bridge; built after every other part, so what a
    dock shows of an event comes first."""

    spec = Spec("backend", order=1000)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.bridge.agentChanged.connect(self._show_agent)
        self.bridge.modeChanged.connect(self._show_agent)
        self.bridge.replayFailed.connect(self._on_replay_failed)
        for asked in (self.bridge.authRequired, self.bridge.authFailed):  # the agent waits for the user
            asked.connect(lambda _why: ctx.status.set_state(BackendState.STARTING, "waiting for sign-in"))
        ctx.banner.restartRequested.connect(ctx.window.restart_backend)

    def on_state(self, state: str) -> None:
        banner = self.ctx.banner
        self.ctx.status.set_state(state)
        self.ctx.window.stop_action.setEnabled(state == BackendState.BUSY)
        if banner.isVisible():
            banner.set_restartable(state == BackendState.STOPPED)
        if state == BackendState.READY and banner.kind == "died":
            banner.dismiss()

    def on_session_ready(self, session_id: str, replayed: bool) -> None:
        self._show_agent()

    def on_turn_finished(self, stop_reason: str, meta: TurnMeta | None) -> None:
        self.ctx.status.set_turn(meta)
        explanation = STOP_REASONS.get(stop_reason)
        if explanation:
            self.ctx.banner.show_notice(explanation)

    def on_error(self, info: ErrorInfo) -> None:
        self.ctx.show_error(info)

    def on_backend_died(self, code: int, stderr_tail: str) -> None:
        had_session = self.bridge.session_id is not None
        self.ctx.banner.show_backend_died(code, stderr_tail, had_session=had_session)

    def _show_agent(self, *_: Any) -> None:
        self.ctx.status.set_agent(self.bridge.agent_meta, self.bridge.agent_name, self.bridge.mode)

    def _on_replay_failed(self, message: str) -> None:
        self.ctx.banner.show_notice(
            f"The previous conversation could not be restored: {message}",
            "A new session was started; the messages above are from the old one and the agent no longer "
            "remembers them.",
        )
