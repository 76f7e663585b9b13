"""The Chat dock: the conversation, its prompt box and mode picker, kept across a restored session; how
each turn ended (answered, stopped, failed and why), with a failed turn's open search tree closed. All of it
comes as the session's events: the prompt sent, the agent's updates, the turn's end or failure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ide.app.chat.options import ARBOR_OWN
from ide.app.chat.panel import ChatPanel
from ide.app.parts.base import SIDE, AppContext, Dock, KeptAcrossReplay, Spec
from ide.app.parts.capabilities import Chat, OpensFiles, SearchTrees
from ide.app.parts.needs import Requires, Uses

if TYPE_CHECKING:
    from ide.client.events import SessionEvent


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
        bridge, panel = self.bridge, self.panel
        bridge.stateChanged.connect(panel.set_backend_state)
        bridge.modeChanged.connect(lambda _mode: self._show_modes())
        panel.promptSubmitted.connect(ctx.send_prompt)
        panel.modeChosen.connect(bridge.set_mode)
        panel.stopRequested.connect(bridge.cancel)
        panel.locationActivated.connect(self.files.open_location)
        bridge.configOptionsChanged.connect(self._show_options)
        bridge.configOptionRefused.connect(lambda why: panel.say(f"The agent did not set the option: {why}"))
        panel.options.optionChosen.connect(bridge.set_config_option)

    def _show_options(self, options: tuple[object, ...]) -> None:
        # Arbor's own mode and workflow have their boxes; any other agent's options all get selectors.
        hidden = ARBOR_OWN if self.bridge.agent_meta is not None else frozenset()
        self.panel.options.show_options(options, hidden)

    def _show_modes(self) -> None:
        self.panel.set_modes(self.bridge.modes, self.bridge.mode)

    def on_session_event(self, event: SessionEvent) -> None:
        from ide.client.events import PromptSent, TurnEnded, TurnFailed

        match event:
            case PromptSent():
                self.panel.prompt_sent(event)
            case TurnEnded():
                self.panel.turn_ended(event.stop_reason)
            case TurnFailed():
                self._turn_failed(event.error.message, event.error.fix)
            case _:
                self.panel.apply_update(event)

    def on_session_ready(self, _session_id: str, replayed: bool) -> None:
        self._show_modes()
        if replayed:
            self.panel.flush()

    def on_backend_died(self, *_: object) -> None:
        if self.panel.turn_running:
            self._turn_failed("the backend stopped during the turn.", "Restart it (the banner's button).")

    def _turn_failed(self, message: str, fix: str | None) -> None:
        self.panel.turn_failed(message, fix)
        if self.trees is not None:  # a failed turn's open search trees are closed
            self.trees.close_open_runs(f"{message}\n{fix}" if fix else message)
