"""The main window: builds the docks and controllers of :mod:`ide.app.docks`, its menus, and its layout."""

from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import QMainWindow, QVBoxLayout, QWidget

from ide.agentproc import ARBOR_AGENT, AgentChoice, command_name, default_backend_command
from ide.app.acp_client import BackendBridge
from ide.app.banner import Banner, BannerBar
from ide.app.docks import AppContext, Dock, Part, registry
from ide.app.docks.capabilities import Chat
from ide.app.permission import PermissionDialog
from ide.app.status import BackendStatus
from ide.app.viewer import CodeViewer
from ide.protocol import ErrorInfo
from ide.settings import ResolvedSettings, Settings, SettingsError, load_settings

DEFAULT_SIZE = (1280, 800)
DEFAULT_DOCK_SHARES = (0.18, 0.3)
"""The window's width the left column (workspace, outline) and the right one (chat) start with: the code
viewer keeps about half of it."""
WORKSPACE_SHARE = 0.75
"""How much of the left column the workspace tree takes over the outline."""
GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
# Bump when docks are added or renamed, or the default layout changes, so an old saved layout is not
# forced onto new panels.
STATE_VERSION = 6
MENUS = {"file": "&File", "view": "&View", "go": "&Go", "agent": "&Agent"}


class MainWindow(QMainWindow):
    """Code viewer under the banner (centre), the registry's docks around it, the status bar below."""

    closed = Signal()

    def __init__(
        self,
        workspace: Path,
        *,
        backend_command: list[str] | None = None,
        backend_env: dict[str, str] | None = None,
        settings: Settings | None = None,
        agent: AgentChoice | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace.resolve()
        self.setObjectName("mainWindow")
        self.setWindowTitle(f"{self.workspace.name} — Arbor")
        settings_error: SettingsError | None = None
        resolved: ResolvedSettings | None = None
        if settings is None:
            try:
                resolved = load_settings(self.workspace)
                settings = resolved.settings
            except SettingsError as exc:
                settings_error = exc
                settings = Settings()
        self.settings = settings

        if agent is None:
            name = ARBOR_AGENT if backend_command is None else command_name(backend_command)
            command = backend_command or default_backend_command()
            agent = AgentChoice(name, command, backend_env or {}, shadow=False)
        self.agent = agent
        """The agent chosen at start; the Agent menu switches to another."""
        self.bridge = BackendBridge(self.workspace, agent, parent=self)
        self.banner = Banner()
        self.viewer = CodeViewer(settings.workspace.max_file_bytes)
        self.viewer.set_workspace(self.workspace)
        central = QWidget()
        central.setObjectName("centralArea")
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, BannerBar(self.banner))  # above the docks
        layout.addWidget(self.viewer, 1)
        self.setCentralWidget(central)
        self.status = BackendStatus()
        self.statusBar().setSizeGripEnabled(False)

        menus = {key: self.menuBar().addMenu(title) for key, title in MENUS.items()}
        self.ctx = AppContext(
            self, self.bridge, settings, resolved, self.viewer, self.status, self.banner, menus
        )
        self.stop_action = self.ctx.action("agent", "&Stop Turn", self.bridge.cancel, "Ctrl+.")
        self.restart_action = self.ctx.action("agent", "&Restart Backend", self.restart_backend)
        self.docks: dict[str, Part] = {}
        """Every part by name, for scripts and tests (parts see each other through their declared needs)."""
        for part_type in registry():
            part = part_type(self.ctx)
            part.attach()
            self.docks[part.spec.name] = part
            self.ctx.providers.add(part, part.provides)
            for attribute, source in part.exposes.items():
                setattr(self, attribute, attrgetter(source)(part))
            if isinstance(part, Dock):
                setattr(self, f"{part.spec.name}_dock", part.dock)
        self.ctx.providers.complete = True
        self.statusBar().addPermanentWidget(self.status, 1)
        menus["file"].addSeparator()
        self.ctx.action("file", "&Quit", self.close, QKeySequence.StandardKey.Quit)
        docks = [part for part in self.docks.values() if isinstance(part, Dock)]
        self._lay_out(sorted(docks, key=lambda dock: (dock.spec.order, dock.spec.name)))
        self._default_state = self.saveState(STATE_VERSION)
        menus["view"].addSeparator()
        self.ctx.action("view", "&Reset Layout", self.reset_layout)
        self.permission_dialog = PermissionDialog(self, self.workspace, self._agent_shadow)
        self.bridge.permission_handler = self.permission_dialog.ask
        self.bridge.cancelRequested.connect(self.permission_dialog.cancel_turn)
        self._restore_layout()
        if settings_error is not None:
            self.banner.show_error(
                ErrorInfo(kind="settings", message=str(settings_error), fix="Fix the setting, then reopen.")
            )

    def _agent_shadow(self) -> Path | None:
        """The shadow of the workspace the running agent works in, if it does."""
        return self.bridge.agent_dir if self.bridge.agent_dir != self.workspace else None

    @property
    def resolved(self) -> ResolvedSettings | None:
        """The workspace's settings with what waits for trust (None when settings were given)."""
        return self.ctx.resolved

    def start(self) -> None:
        """Start every part (the file tree lists the workspace) and then the backend (needs the qasync
        loop installed), unless a part holds it: trust asks first when the workspace's config needs it."""
        if all([part.start() for part in self.docks.values()]):
            self.bridge.start()

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn and show it in the chat (ignored unless the backend is ready)."""
        if self.bridge.send_prompt(text):
            if self.banner.kind not in (None, "settings"):
                self.banner.dismiss()  # what the last turn reported no longer applies
            chat = self.ctx.providers.get(Chat)
            if chat is not None:
                chat.panel.add_user_message(text)

    def restart_backend(self) -> None:
        """Restart the backend and restore the conversation (the banner's Restart button)."""
        self.banner.set_restartable(False)
        self.bridge.restart()

    def _lay_out(self, docks: list[Dock]) -> None:
        """Each dock in its area: a tab group's docks tabified (its first raised), others stacked."""
        first_in_area: dict[Qt.DockWidgetArea, Dock] = {}
        first_of_group: dict[str, Dock] = {}
        for dock in docks:
            place = dock.spec.place
            self.addDockWidget(place.area, dock.dock)
            group = first_of_group.get(place.tab_group or "")
            if group is not None:
                self.tabifyDockWidget(group.dock, dock.dock)
            elif place.tab_group is None and place.area in first_in_area:
                self.splitDockWidget(first_in_area[place.area].dock, dock.dock, Qt.Orientation.Vertical)
            if place.tab_group is not None:
                first_of_group.setdefault(place.tab_group, dock)
            first_in_area.setdefault(place.area, dock)
            if place.hidden:
                dock.dock.hide()  # shown when there is something to show
            toggle = dock.dock.toggleViewAction()
            if dock.spec.shortcut:
                toggle.setShortcut(QKeySequence(dock.spec.shortcut))
            self.ctx.menus["view"].addAction(toggle)
        for dock in first_of_group.values():
            dock.dock.raise_()

    def _restore_layout(self) -> None:
        store = QSettings()
        geometry = store.value(GEOMETRY_KEY)
        state = store.value(STATE_KEY)
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(*DEFAULT_SIZE)
        # Dock sizes only take once the window has a layout, so the default is applied at first show.
        self._default_docks = not (isinstance(state, QByteArray) and self.restoreState(state, STATE_VERSION))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._default_docks:
            self._default_docks = False
            self._default_sizes()

    def _default_sizes(self) -> None:
        docks: dict[str, Any] = self.docks
        workspace, outline, chat = (docks[name].dock for name in ("workspace", "outline", "chat"))
        widths = [int(self.width() * share) for share in DEFAULT_DOCK_SHARES]
        self.resizeDocks([workspace, chat], widths, Qt.Orientation.Horizontal)
        heights = [int(self.height() * WORKSPACE_SHARE), int(self.height() * (1 - WORKSPACE_SHARE))]
        self.resizeDocks([workspace, outline], heights, Qt.Orientation.Vertical)

    def reset_layout(self) -> None:
        """Every dock back where a fresh profile has it (a review or search tree that is open stays open,
        in its place) at the default sizes, and the saved layout forgotten."""
        still_open = [
            part
            for part in self.docks.values()
            if isinstance(part, Dock) and part.spec.place.hidden and part.dock.isVisible()
        ]
        self.restoreState(self._default_state, STATE_VERSION)
        store = QSettings()
        store.remove(STATE_KEY)
        store.sync()
        self._default_sizes()
        for dock in still_open:
            dock.show()

    def save_layout(self) -> None:
        """Remember geometry and dock layout for the next window."""
        store = QSettings()
        store.setValue(GEOMETRY_KEY, self.saveGeometry())
        store.setValue(STATE_KEY, self.saveState(STATE_VERSION))
        store.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_layout()
        self.bridge.stop()
        super().closeEvent(event)
        self.closed.emit()
