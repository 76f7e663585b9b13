"""The agent picker: Agent → Use Agent lists Arbor first, then the agents of the ``[agents]`` settings (and
one given with ``--agent``); picking another restarts the connection with it, in a new session."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QActionGroup

from ide.app.parts.base import AppContext, Part, Spec
from ide.client.agentproc import ARBOR_AGENT, AgentChoice, arbor_agent

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDialog

    from ide.settings import Settings


class AgentPicker(Part):
    """The Agent menu's list of ACP agents the window can drive; one is checked, the one running."""

    spec = Spec("agents", order=10)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        started: AgentChoice = ctx.window.agent
        self.current = ARBOR_AGENT if started.is_arbor else started.name or "custom"
        self.choices: dict[str, AgentChoice] = {}
        self.cli_only: list[str] = []
        """Configured CLI agents: ``arbor run --agent`` runs them; the window drives ACP agents only."""
        self.actions: dict[str, QAction] = {}
        self.menu = ctx.menus["agent"].addMenu("Use &Agent")
        self.menu.setObjectName("agentPickerMenu")
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.add_action = ctx.action("agent", "A&dd Agent…", self.add_agent)
        self.add_action.setObjectName("addAgentAction")
        self.add_action.setToolTip("List the agents of the ACP registry and the [agents] entry of each")
        self.add_dialog: QDialog | None = None
        ctx.with_settings(self._list)  # the ``[agents]`` settings, read after the first frame

    def _list(self, settings: Settings) -> None:
        started: AgentChoice = self.ctx.window.agent
        self.choices[ARBOR_AGENT] = started if started.is_arbor else arbor_agent()
        for name, agent in settings.agents.items():
            if agent.protocol == "cli":
                self.cli_only.append(name)
                continue
            self.choices[name] = AgentChoice.from_settings(name, agent)
        if not started.is_arbor:
            self.choices[started.name or "custom"] = started
        for name, choice in self.choices.items():
            label = "Arbor" if name == ARBOR_AGENT else name
            action = QAction(label, self.group)
            action.setCheckable(True)
            action.setChecked(name == self.current)
            action.setToolTip(shlex.join(choice.command))
            action.triggered.connect(lambda _checked=False, chosen=name: self.switch(chosen))
            self.menu.addAction(action)
            self.actions[name] = action
        for name in self.cli_only:
            action = self.menu.addAction(f"{name} (CLI agent: arbor run --agent {name})")
            action.setEnabled(False)
            action.setToolTip("The window drives ACP agents; run a CLI agent with arbor run --agent.")

    def switch(self, name: str) -> bool:
        """Drive the agent ``name`` instead of the current one, in a new session; False if unknown or
        already current."""
        self.ctx.read_settings()  # the configured agents are listed once the settings are read
        choice = self.choices.get(name)
        if choice is None or name == self.current:
            return False
        entry = self.ctx.settings.agents.get(name)
        if entry is not None and not choice.is_arbor and choice.command == entry.argv():
            # As the settings hold it now: an env stored since (the sign-in dialog's) included.
            choice = self.choices[name] = AgentChoice.from_settings(name, entry)
        self.current = name
        self.actions[name].setChecked(True)
        label = "Arbor" if name == ARBOR_AGENT else name
        self.ctx.message(f"Switching to {label}…", 5000)
        self.bridge.switch(choice)
        return True

    def add_agent(self) -> None:
        """Agent → Add Agent…: the registry's agents and the ``[agents]`` entry of the chosen one (the
        feed is read now, never at start-up)."""
        from ide.app.sessions.add_agent import AddAgentDialog
        from ide.settings import user_config_path, workspace_config_path

        settings = self.ctx.settings
        if self.add_dialog is None:
            self.add_dialog = AddAgentDialog(
                settings.registry.url,
                settings.resolved_data_dir(),
                user_config_path(),
                workspace_config_path(self.ctx.workspace),
                self.ctx.window,
            )
            self.add_dialog.load()
        self.add_dialog.show()
        self.add_dialog.raise_()
