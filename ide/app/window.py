"""The main window: builds the docks and controllers of :mod:`ide.app.parts`, its menus, and its layout."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import QDockWidget, QStackedWidget, QVBoxLayout, QWidget

from ide.app.acp_client import BackendBridge
from ide.app.parts import AppContext, Dock, Part, registry
from ide.app.parts.base import AppWindow
from ide.app.parts.layout import DockLayout
from ide.app.status.banner import Banner, BannerBar
from ide.app.status.bar import BackendStatus
from ide.app.workspace.viewer import CodeViewer
from ide.client.agentproc import ARBOR_AGENT, AgentChoice, command_name, default_backend_command

if TYPE_CHECKING:
    from ide.app.chat.permission import PermissionDialog
    from ide.settings import Settings

MENUS = {"file": "&File", "view": "&View", "go": "&Go", "agent": "&Agent"}
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
        ordered = sorted(docks, key=lambda dock: (dock.spec.order, dock.spec.name))
        self.dock_layout = DockLayout(self.ctx, ordered, self._tree_dock)
        """Where the docks are: the saved layout, Reset Layout, one dock maximised and back."""
        self.maximise_action = self.dock_layout.maximise_action
        self.firstPainted.connect(self.build_deferred)
        # What the settings show (the trust button, what Apply does, the Agent menu's agents) follows it.
        self.firstPainted.connect(self.ctx.read_settings)
        self.bridge.permission_handler = self._ask_permission
        self.bridge.cancelRequested.connect(self._cancel_permission)
        self.dock_layout.restore()

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

    def start(self) -> None:
        """Start every part (the file tree lists the workspace) and then the backend (needs the qasync
        loop installed), unless a part holds it: trust asks first when the workspace's config needs it."""
        for part in self.docks.values():
            part.subscribe()
        if all([part.start() for part in self.docks.values()]):
            self.bridge.start()
        else:
            self.bridge.withdraw_start()

    def wait_for_first_paint(self) -> bool:
        """Run Qt's events until the window's first paint (at most :data:`FIRST_FRAME_WAIT_MS`, or until the
        window closes); True once it painted. :attr:`firstPainted` is emitted from the next event loop to
        run: ``run_gui`` makes qasync's loop after this, so asyncio and qasync load once the first frame is
        on screen and what waits for that frame still runs on the qasync loop."""
        if not self._first_frame.painted:
            wait = QEventLoop()
            self._first_frame.held = True
            self._first_frame.seen.connect(wait.quit)
            self.closed.connect(wait.quit)
            QTimer.singleShot(FIRST_FRAME_WAIT_MS, wait, wait.quit)
            wait.exec()
            self._first_frame.release()
        return self._first_frame.painted

    def start_after_first_frame(self, wait_ms: int = FIRST_FRAME_WAIT_MS) -> None:
        """:meth:`start` once the first frame is painted: the backend's process, the workspace listing and
        the parts' first requests then run beside an event loop that has nothing left to paint, not in
        front of the first frame (on two cores the backend's start-up alone doubled the time to it). A
        window that paints nothing within ``wait_ms`` starts anyway."""
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
        QTimer.singleShot(wait_ms, self, start)

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn (ignored unless the backend is ready): the session's ``PromptSent``
        shows it in the chat."""
        if self.bridge.send_prompt(text):
            self.promptSent.emit(text)
            if self.banner.kind not in (None, "settings"):
                self.banner.dismiss()  # what the last turn reported no longer applies

    def restart_backend(self) -> None:
        """Restart the backend and restore the conversation (the banner's Restart button)."""
        self.banner.set_restartable(False)
        self.bridge.restart()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.dock_layout.shown()

    @property
    def maximised(self) -> QDockWidget | None:
        """The dock that has the whole window, if one has."""
        return self.dock_layout.maximised

    def maximise(self, dock: QDockWidget, keep: tuple[QDockWidget, ...] = ()) -> None:
        """Give ``dock`` the whole window (``keep`` stay beside it) until the layout comes back."""
        self.dock_layout.maximise(dock, keep)

    def restore_layout(self) -> None:
        """Back from :meth:`maximise`: every dock where and as large as it was."""
        self.dock_layout.restore_layout()

    def _tree_dock(self) -> QDockWidget:
        from ide.app.tree.part import TreeDock

        return self.part(TreeDock).dock

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._first_frame.held:
            # Asked while the first frame is painted, before the loop the parts stop on runs: once it runs.
            event.ignore()
            self._first_frame.close_asked = True
            return
        self.dock_layout.save()
        self.bridge.stop()
        super().closeEvent(event)
        self.closed.emit()


class _FirstFrame(QObject):
    """Emits the window's :attr:`MainWindow.firstPainted` after its first paint event, then leaves it alone.
    Qt paints a frame's widgets in one pass that starts with the window: a zero timer set at the window's
    paint event fires once the whole frame is painted."""

    seen = Signal()
    """The window's first paint event, as it comes (the frame's widgets are painted in the same pass)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.painted = False
        self.held = False
        """Set: :meth:`release` emits firstPainted, not the paint (``MainWindow.wait_for_first_paint``)."""
        self.close_asked = False
        """The window was asked to close while held: it closes once released."""
        self._window = window
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self.painted:
            self.painted = True
            self._window.removeEventFilter(self)
            self.seen.emit()
            if not self.held:
                QTimer.singleShot(0, self._window, self._window.firstPainted.emit)
        return False

    def release(self) -> None:
        """No longer held: firstPainted follows a paint already seen from the next event loop to run."""
        self.held = False
        if self.close_asked:
            QTimer.singleShot(0, self._window, self._window.close)
        elif self.painted:
            QTimer.singleShot(0, self._window, self._window.firstPainted.emit)
