"""An agent that asks to authenticate before it opens a session: the dialog of its methods
(:mod:`ide.app.sessions.auth`), and what each choice does — values stored in the agent's ``[agents]`` env
and the agent started again with them, ``authenticate``, a retry after a terminal sign-in — until the
session opens, or Cancel leaves the agent stopped and the chat says so."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ide.app.chat.conversation import TurnNotice
from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import Chat
from ide.app.parts.needs import Uses

if TYPE_CHECKING:
    from ide.app.sessions.auth import AuthDialog
    from ide.client.auth import AuthNeeded


class AgentAuth(Part):
    """Opens the auth dialog on the bridge's ``authRequired`` and carries out what the user picks."""

    spec = Spec("agent-auth", order=11)
    chat = Uses(Chat)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.dialog: AuthDialog | None = None
        self.needed: AuthNeeded | None = None
        self.stored = ""
        """Where the dialog's values were stored (said once the session opens)."""
        self.bridge.authRequired.connect(self._required)
        self.bridge.authFailed.connect(self._failed)

    def _storable(self, needed: AuthNeeded) -> bool:
        # Imported with the first agent that asks (tomllib and its parser are not for the first frame).
        from ide.client import auth

        agents = self.ctx.settings.agents
        return auth.is_configured(needed.agent, needed.command, agents)

    def _required(self, needed: AuthNeeded) -> None:
        from ide.app.sessions.auth import AuthDialog
        from ide.settings import user_config_path

        dialog = self.dialog
        asked = self.needed
        if dialog is not None and dialog.isVisible() and asked is not None and asked.agent == needed.agent:
            self.needed = needed
            dialog.fail(f"{needed.agent} still asks you to sign in: {needed.message}")
            return
        if dialog is not None:  # an earlier agent's, or one the user closed: a new one for this question
            dialog.rejected.disconnect(self._cancelled)
            dialog.forget()
            dialog.done(0)
            dialog.deleteLater()
        self.needed, self.stored = needed, ""
        self.dialog = dialog = AuthDialog(
            needed, storable=self._storable(needed), config=str(user_config_path()), parent=self.ctx.window
        )
        dialog.saveRequested.connect(self._save)
        dialog.useRequested.connect(self._use)
        dialog.signInRequested.connect(self._sign_in)
        dialog.retryRequested.connect(self._retry)
        dialog.rejected.connect(self._cancelled)
        self.ctx.message(f"{needed.agent} asks you to sign in.", 10_000)
        dialog.show()
        dialog.raise_()

    def _save(self, method_id: str, values: dict[str, str]) -> None:
        from ide.client import auth
        from ide.settings import user_config_path, workspace_config_path

        needed, dialog = self.needed, self.dialog
        assert needed is not None and dialog is not None
        entry = self.ctx.settings.agents.get(needed.agent)
        if entry is None or not self._storable(needed):
            dialog.fail(f"{needed.agent} is not an [agents] entry: use the values for this run only.")
            return
        path = user_config_path()
        try:
            auth.store_agent_env(path, needed.agent, values, entry)
        except auth.StoreError as exc:
            dialog.fail(f"Nothing was stored: {exc}")
            return
        self.ctx.reload_settings()
        stored = f"Stored {', '.join(values)} in [agents.{needed.agent}] env of {path}."
        if auth.defines_agent(workspace_config_path(self.ctx.workspace), needed.agent):
            stored += (
                f" This workspace's .arbor/config.toml has an [agents.{needed.agent}] entry too: once the "
                "workspace is trusted, that entry is used, without these values."
            )
        self.stored = stored
        self._restart_with(method_id, values)

    def _use(self, method_id: str, values: dict[str, str]) -> None:
        self._restart_with(method_id, values)

    def _restart_with(self, method_id: str, values: dict[str, str]) -> None:
        """Start the agent again with ``values`` in its environment and ``authenticate`` with the method
        (an agent such as Codex reads the variable then), then ask for the session."""
        choice = self.bridge.choice
        self.bridge.switch(dataclasses.replace(choice, env={**choice.env, **values}), auth_method=method_id)

    def _sign_in(self, method_id: str) -> None:
        if not self.bridge.authenticate(method_id) and self.dialog is not None:
            self.dialog.fail("The agent is not running any more: Cancel, then Agent → Restart Backend.")

    def _retry(self) -> None:
        # ACP v1: after a terminal login the client connects to the agent again (it may read its
        # credentials only when it starts).
        self.bridge.switch(self.bridge.choice)

    def _failed(self, message: str) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.fail(message)

    def on_session_ready(self, _session_id: str, _replayed: bool) -> None:
        dialog, needed = self.dialog, self.needed
        if dialog is None or not dialog.isVisible():
            return
        dialog.forget()
        dialog.done(1)
        if needed is not None and needed.agent == self.bridge.choice.name:  # not another agent picked since
            self.ctx.message(f"Signed in: {needed.agent} opened a session. {self.stored}".strip(), 15_000)
        self.stored = ""

    def on_backend_died(self, code: int, _stderr_tail: str) -> None:
        if self.dialog is not None and self.dialog.isVisible() and self.needed is not None:
            self.dialog.fail(
                f"{self.needed.agent} exited (code {code}) before it opened a session; the banner shows its "
                "last words. Save and retry, Use for this run only or Retry start it again."
            )

    def _cancelled(self) -> None:
        needed = self.needed
        if self.dialog is not None:
            self.dialog.forget()
        if needed is None or needed.agent != self.bridge.choice.name:
            return  # another agent was picked meanwhile: it is not this dialog's to stop
        self.bridge.stop()
        text = (
            f"{needed.agent} was not started: it asks you to sign in first ({needed.message}). "
            "Agent → Restart Backend asks again."
        )
        self.ctx.message(text, 15_000)
        if self.chat is not None:
            self.chat.panel.apply_update(TurnNotice("stopped", text))
