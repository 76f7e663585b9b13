"""The main window: builds the docks and controllers of :mod:`ide.app.parts`, its menus, and its layout."""

from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import QDockWidget, QStackedWidget, QVBoxLayout, QWidget

from ide.app.acp_client import BackendBridge
from ide.app.parts import AppContext, Dock, Part, registry
from ide.app.parts.base import DOCK_SHARE, AppWindow
from ide.app.parts.capabilities import Chat
from ide.app.status.banner import Banner, BannerBar
from ide.app.status.bar import BackendStatus
from ide.app.workspace.viewer import CodeViewer
from ide.client.agentproc import ARBOR_AGENT, AgentChoice, command_name, default_backend_command

if TYPE_CHECKING:
    from ide.app.chat.permission import PermissionDialog
    from ide.settings import ResolvedSettings, Settings

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
STATE_VERSION = 7
MENUS = {"file": "&File", "view": "&View", "go": "&Go", "agent": "&Agent"}
MAXIMISE_SHORTCUT = "Ctrl+Shift+T"
KEPT_SHARE = 0.34
"""The width a dock kept beside a maximised one (the chat beside a live run) takes: its controls fit."""
SIDE_CORNERS = (Qt.Corner.TopRightCorner, Qt.Corner.BottomRightCorner)
DEFAULT_CORNERS = {
    Qt.Corner.TopRightCorner: Qt.DockWidgetArea.TopDockWidgetArea,
    Qt.Corner.BottomRightCorner: Qt.DockWidgetArea.BottomDockWidgetArea,
}
"""Qt's owners of the right-hand corners (the bottom area spans under the chat), restored after a maximise."""
"""Maximise the Search tree (everything else out of the way) and back: one key both ways."""
P = TypeVar("P", bound=Part)
FIRST_FRAME_WAIT_MS = 1000
"""How long :meth:`MainWindow.start_after_first_frame` waits for a first frame that does not come (a window
shown minimised) before it starts anyway."""


class MainWindow(AppWindow):
    """The centre (the start page, then the code viewer) under the banner, the registry's docks around it,
    the status bar below."""

    firstPainted = Signal()
    """The window's first frame is on screen (emitted once, after every widget of that frame painted)."""

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
        self._first_frame = _FirstFrame(self)
        self.workspace = workspace.resolve()
        self.setObjectName("mainWindow")
        self.setWindowTitle(f"{self.workspace.name} — Arbor")
        if agent is None:
            name = ARBOR_AGENT if backend_command is None else command_name(backend_command)
            command = backend_command or default_backend_command()
            agent = AgentChoice(name, command, backend_env or {}, shadow=False)
        self.agent = agent
        """The agent chosen at start; the Agent menu switches to another."""
        self.bridge = BackendBridge(self.workspace, agent, parent=self)
        self.banner = Banner()
        self.viewer = CodeViewer(lambda: self.ctx.settings.workspace.max_file_bytes)
        self.viewer.set_workspace(self.workspace)
        central = QWidget()
        central.setObjectName("centralArea")
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, BannerBar(self.banner))  # above the docks
        self.centre = QStackedWidget()
        """The start page (while the conversation is empty) or the code viewer."""
        self.centre.addWidget(self.viewer)
        layout.addWidget(self.centre, 1)
        self.setCentralWidget(central)
        self._maximised: QDockWidget | None = None
        self._before_maximise: QByteArray | None = None
        self._title = ""
        """The maximised dock's own title (while maximised it says how to come back)."""
        self.status = BackendStatus()
        self.statusBar().setSizeGripEnabled(False)

        menus = {key: self.menuBar().addMenu(title) for key, title in MENUS.items()}
        self.ctx = AppContext(
            self, self.bridge, settings, self.viewer, self.status, self.banner, menus, self.centre
        )
        """What the parts see; it reads the workspace's settings at their first use (after the first frame,
        when :meth:`start` runs, unless a part needs them sooner)."""
        self.stop_action = self.ctx.action("agent", "&Stop Turn", self.bridge.cancel, "Ctrl+.")
        self.restart_action = self.ctx.action("agent", "&Restart Backend", self.restart_backend)
        self.docks: dict[str, Part] = {}
        """Every part by name (parts see each other through their declared needs; scripts, tests and the
        entry point find one by its class with :meth:`part`)."""
        for part_type in registry():
            part = part_type(self.ctx)
            part.attach()
            self.docks[part.spec.name] = part
            self.ctx.providers.add(part, part.provides)
        self.ctx.providers.complete = True
        self.statusBar().addPermanentWidget(self.status, 1)
        menus["file"].addSeparator()
        self.ctx.action("file", "&Quit", self.close, QKeySequence.StandardKey.Quit)
        docks = [part for part in self.docks.values() if isinstance(part, Dock)]
        self._lay_out(sorted(docks, key=lambda dock: (dock.spec.order, dock.spec.name)))
        self._default_state = self.saveState(STATE_VERSION)
        menus["view"].addSeparator()
        self.maximise_action = self.ctx.action(
            "view", "&Maximise Search Tree", self.toggle_maximise_tree, MAXIMISE_SHORTCUT
        )
        self.maximise_action.setCheckable(True)
        self.maximise_action.setToolTip(
            f"Give the Search tree the whole window; {MAXIMISE_SHORTCUT} again brings the layout back"
        )
        self.ctx.action("view", "&Reset Layout", self.reset_layout)
        self.firstPainted.connect(self.build_deferred)
        # What the settings show (the trust button, what Apply does, the Agent menu's agents) follows it.
        self.firstPainted.connect(self.ctx.read_settings)
        self.bridge.permission_handler = self._ask_permission
        self.bridge.cancelRequested.connect(self._cancel_permission)
        self._restore_layout()

    def part(self, kind: type[P]) -> P:
        """The window's part of class ``kind`` (``window.part(ChatDock).panel``)."""
        for part in self.docks.values():
            if type(part) is kind:
                return part
        raise LookupError(f"the window has no {kind.__name__}")

    def build_deferred(self) -> None:
        """Build the deferred docks' widgets (:attr:`Dock.deferred`) not built yet, one per pass of the
        event loop so input and paints go between them: called once the first frame is on screen."""
        waiting = [part for part in self.docks.values() if isinstance(part, Dock) and not part.built]

        def next_one() -> None:
            while waiting:
                part = waiting.pop(0)
                if not part.built:
                    part.content()
                    break
            if waiting:
                QTimer.singleShot(0, self, next_one)

        if waiting:
            QTimer.singleShot(0, self, next_one)

    @cached_property
    def permission_dialog(self) -> PermissionDialog:
        """The agent's permission questions, asked one at a time: made at the first question (or when read),
        never for the first frame."""
        from ide.app.chat.permission import PermissionDialog

        return PermissionDialog(self, self.workspace, self._agent_shadow)

    async def _ask_permission(self, session_id: str, tool_call: Any, options: list[Any]) -> str | None:
        return await self.permission_dialog.ask(session_id, tool_call, options)

    def _cancel_permission(self) -> None:
        if "permission_dialog" in self.__dict__:  # no dialog yet: no question is open
            self.permission_dialog.cancel_turn()

    def _agent_shadow(self) -> Path | None:
        """The shadow of the workspace the running agent works in, if it does."""
        return self.bridge.agent_dir if self.bridge.agent_dir != self.workspace else None

    @property
    def settings(self) -> Settings:
        """The workspace's settings (read at first use: :attr:`AppContext.settings`)."""
        return self.ctx.settings

    @property
    def resolved(self) -> ResolvedSettings | None:
        """The workspace's settings with what waits for trust (None when settings were given)."""
        return self.ctx.resolved

    def start(self) -> None:
        """Start every part (the file tree lists the workspace) and then the backend (needs the qasync
        loop installed), unless a part holds it: trust asks first when the workspace's config needs it."""
        for part in self.docks.values():
            part.subscribe()
        if all([part.start() for part in self.docks.values()]):
            self.bridge.start()
        else:
            self.bridge.withdraw_start()

    def start_after_first_frame(self) -> None:
        """:meth:`start` once the first frame is painted: the backend's process, the workspace listing and
        the parts' first requests then run beside an event loop that has nothing left to paint, not in
        front of the first frame (on two cores the backend's start-up alone doubled the time to it). A
        window that paints nothing within :data:`FIRST_FRAME_WAIT_MS` starts anyway."""
        started = False

        def start() -> None:
            nonlocal started
            if not started:
                started = True
                self.start()

        if self._first_frame.painted:
            QTimer.singleShot(0, self, start)
            return
        # The first frame says the backend is starting, as it is unless the workspace's settings (read
        # after that frame) need trust first: :meth:`start` then shows it stopped while trust asks.
        self.bridge.announce_start()
        self.firstPainted.connect(start)
        QTimer.singleShot(FIRST_FRAME_WAIT_MS, self, start)

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn and show it in the chat (ignored unless the backend is ready)."""
        if self.bridge.send_prompt(text):
            self.promptSent.emit(text)
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
        area = Qt.DockWidgetArea.BottomDockWidgetArea
        widgets = [part.dock for part in self.docks.values() if isinstance(part, Dock)]
        bottom = [dock for dock in widgets if dock.isVisible() and self.dockWidgetArea(dock) == area]
        if bottom:
            self.resizeDocks(bottom[:1], [int(self.height() * DOCK_SHARE)], Qt.Orientation.Vertical)

    @property
    def maximised(self) -> QDockWidget | None:
        """The dock that has the whole window, if one has."""
        return self._maximised

    def maximise(self, dock: QDockWidget, keep: tuple[QDockWidget, ...] = ()) -> None:
        """Give ``dock`` the whole window (``keep``: docks that stay beside it); :meth:`restore_layout` — or
        the same key — brings back the layout as it was, sizes included."""
        if self._maximised is dock:
            return
        if self._maximised is None:
            self._before_maximise = self.saveState(STATE_VERSION)
        self._maximised = dock
        kept = {dock, *keep}
        for part in self.docks.values():
            if isinstance(part, Dock) and part.dock not in kept and not part.dock.isFloating():
                part.dock.hide()
        dock.show()
        dock.raise_()
        self.centralWidget().hide()  # the docks' areas then share the whole window
        # A dock kept beside it (the chat) becomes a narrow full-height column; the maximised one the rest.
        for corner in SIDE_CORNERS:
            self.setCorner(corner, Qt.DockWidgetArea.RightDockWidgetArea)
        beside = [kept for kept in keep if self.dockWidgetArea(kept) != self.dockWidgetArea(dock)]
        if beside:  # once the layout has taken the new corners in
            side = int(self.width() * KEPT_SHARE)
            widths = [self.width() - side, *[side] * len(beside)]
            resize = partial(self.resizeDocks, [dock, *beside], widths, Qt.Orientation.Horizontal)
            QTimer.singleShot(0, self, resize)
        self._title = dock.windowTitle()
        dock.setWindowTitle(f"{self._title} — {MAXIMISE_SHORTCUT} brings the layout back")
        self.maximise_action.setChecked(True)
        self.maximisedChanged.emit(True)

    def restore_layout(self) -> None:
        """Back from :meth:`maximise`: every dock where and as large as it was."""
        if self._maximised is None:
            return
        dock, self._maximised = self._maximised, None
        dock.setWindowTitle(self._title)
        # The tab shown stays the one shown: the maximised dock, or a tab of its group raised over it since
        # (the review, with a turn's changes).
        group = [dock, *self.tabifiedDockWidgets(dock)]
        shown = next((tab for tab in group if tab.isVisible() and not tab.visibleRegion().isEmpty()), dock)
        for corner in SIDE_CORNERS:
            self.setCorner(corner, DEFAULT_CORNERS[corner])
        self.centralWidget().show()
        if self._before_maximise is not None:
            self.restoreState(self._before_maximise, STATE_VERSION)
            # The state holds the toolbars' visibility too: the banner's bar shows what the banner says now.
            if self.banner.bar is not None:
                self.banner.bar.show_banner(self.banner.wanted)
        self._before_maximise = None
        if shown is not dock:
            shown.show()  # a dock the maximised layout opened (the review) is not in the state restored
        QTimer.singleShot(0, shown.raise_)
        self.maximise_action.setChecked(False)
        self.maximisedChanged.emit(False)

    def toggle_maximise_tree(self) -> None:
        """View → Maximise Search Tree (Ctrl+Shift+T): maximise the tree, or bring the layout back."""
        if self._maximised is not None:
            self.restore_layout()
        else:
            from ide.app.tree.part import TreeDock

            self.maximise(self.part(TreeDock).dock)

    def reset_layout(self) -> None:
        """Every dock back where a fresh profile has it (an eval dock that is open stays open, in its
        place) at the default sizes, and the saved layout forgotten."""
        self.restore_layout()
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
        """Remember geometry and dock layout for the next window (the layout from before a maximise)."""
        store = QSettings()
        store.setValue(GEOMETRY_KEY, self.saveGeometry())
        state = self._before_maximise if self._maximised is not None else None
        store.setValue(STATE_KEY, state if state is not None else self.saveState(STATE_VERSION))
        store.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_layout()
        self.bridge.stop()
        super().closeEvent(event)
        self.closed.emit()


class _FirstFrame(QObject):
    """Emits the window's :attr:`MainWindow.firstPainted` after its first paint event, then leaves it alone.
    Qt paints a frame's widgets in one pass that starts with the window: a zero timer set at the window's
    paint event fires once the whole frame is painted."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.painted = False
        self._window = window
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self.painted:
            self.painted = True
            self._window.removeEventFilter(self)
            QTimer.singleShot(0, self._window, self._window.firstPainted.emit)
        return False
