"""What a dock or controller is built from: the application context, and the Part and Dock base classes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QStackedWidget, QWidget

from ide.app.acp_client import BackendBridge, BackendState
from ide.app.parts.needs import Providers

if TYPE_CHECKING:
    from ide.app.status.banner import Banner
    from ide.app.status.bar import BackendStatus
    from ide.app.workspace.viewer import CodeViewer
    from ide.client.agentproc import AgentChoice
    from ide.client.events import SessionEvent
    from ide.protocol import ErrorInfo
    from ide.settings import ResolvedSettings, Settings

S = TypeVar("S")
W = TypeVar("W", bound=QWidget)

DOCK_SHARE = 0.4
"""How much of the window's height a bottom dock takes when it is shown."""
DOCK_MIN_WIDTH = 200
"""The narrowest a dock's content asks to be: what it shows (a long label, a wide answer) never pushes the
code viewer aside, and a wider need scrolls or is cut in the dock."""


@dataclass(frozen=True)
class Place:
    """Where a dock goes in the window: its area; the tab group it is tabbed into (the group's first dock is
    raised, a dock of no group is stacked under the area's first); hidden until it has something to show."""

    area: Qt.DockWidgetArea
    tab_group: str | None = None
    hidden: bool = False


LEFT = Place(Qt.DockWidgetArea.LeftDockWidgetArea)
"""The column left of the viewer, its docks stacked (workspace, outline)."""
SIDE = Place(Qt.DockWidgetArea.RightDockWidgetArea, "side")
"""Tabs right of the viewer (chat, memory, sessions)."""
BOTTOM = Place(Qt.DockWidgetArea.BottomDockWidgetArea, "bottom")
"""Tabs under the viewer, there from the first launch (review, search tree): what the user came for."""
BOTTOM_ON_DEMAND = Place(Qt.DockWidgetArea.BottomDockWidgetArea, "bottom", hidden=True)
"""A tab under the viewer shown when it has something to show (eval)."""


@dataclass(frozen=True)
class Spec:
    """What the window knows of a part before building it."""

    name: str
    """Key in the window's ``docks`` (and a dock's object name, ``<name>Dock``)."""
    title: str = ""
    """A dock's title (its tab and View-menu entry)."""
    place: Place | None = None
    """Where a dock goes: :data:`LEFT`, :data:`SIDE`, :data:`BOTTOM` (or a place of its own)."""
    order: int = 100
    """Where the part comes among the others: its dock in the View menu and its tab group (the first of a
    group is raised), the actions it adds to a menu. Needs are declared, not ordered: a part is built after
    the providers of what it requires (:mod:`ide.app.parts.needs`)."""
    shortcut: str | None = None
    """A shortcut for a dock's View-menu toggle."""


class KeptAcrossReplay(Generic[S]):
    """What a view showed before a session's replay (a restart, a reopened session): the view is cleared
    for the replay to rebuild it and, when the replay fails, cleared again and given back what it showed."""

    def __init__(self, bridge: BackendBridge, clear: Callable[[], S], restore: Callable[[S], None]) -> None:
        self._clear, self._restore = clear, restore
        self._saved: S | None = None
        bridge.replayStarting.connect(self._starting)
        bridge.replayFailed.connect(self._failed)
        bridge.sessionReady.connect(self._forget)

    @property
    def replaying(self) -> bool:
        """A replay is under way (what it brings back is history, not news)."""
        return self._saved is not None

    def _starting(self) -> None:
        self._saved = self._clear()

    def _failed(self, _message: str) -> None:
        if self._saved is not None:
            saved, self._saved = self._saved, None
            self._clear()
            self._restore(saved)

    def _forget(self, *_: object) -> None:
        self._saved = None


class AppWindow(QMainWindow):
    """What a part may ask of the window, typed: :class:`~ide.app.window.MainWindow` is the one window.

    Parts reach each other through their declared needs (:mod:`ide.app.parts.needs`), never through the
    window; scripts and tests find a part by its class (``window.part(ChatDock)``)."""

    closed = Signal()
    """The window closed."""
    promptSent = Signal(str)
    """A prompt went to the backend as a new turn."""
    maximisedChanged = Signal(bool)
    """A dock took the whole window (True), or the layout came back (False)."""

    agent: AgentChoice
    """The agent the window was started with (the Agent menu restarts the window for another)."""
    stop_action: QAction
    """Agent → Stop Turn."""

    @property
    def maximised(self) -> QDockWidget | None:
        """The dock that has the whole window, if one has."""
        raise NotImplementedError

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn (ignored unless the backend is ready)."""
        raise NotImplementedError

    def maximise(self, dock: QDockWidget, keep: tuple[QDockWidget, ...] = ()) -> None:
        """Give ``dock`` the whole window (``keep`` stay beside it) until the layout comes back."""
        raise NotImplementedError

    def restore_layout(self) -> None:
        """Bring back the layout a :meth:`maximise` replaced (nothing when no dock has the window)."""
        raise NotImplementedError

    def restart_backend(self) -> None:
        """Restart the backend and restore the conversation."""
        raise NotImplementedError


class AppContext:
    """What every part sees: the bridge, the workspace, the viewer and the centre holding it, status bar and
    banner, the workspace's settings, the providers of the capabilities parts declare they need, and a few
    window services (a menu, a status message)."""

    def __init__(
        self,
        window: AppWindow,
        bridge: BackendBridge,
        settings: Settings | None,
        viewer: CodeViewer,
        status: BackendStatus,
        banner: Banner,
        menus: dict[str, QMenu],
        centre: QStackedWidget,
    ) -> None:
        self.window = window
        self.bridge = bridge
        self.workspace: Path = bridge.workspace
        self._settings = settings
        self._resolved: ResolvedSettings | None = None
        self._when_read: list[Callable[[Settings], None]] = []
        self.viewer = viewer
        self.status = status
        self.banner = banner
        self.menus = menus
        """The menu bar's menus by name: file, view, go, agent."""
        self.centre = centre
        """The window's centre: the viewer, and the start page while the conversation is empty."""
        self.providers = Providers()
        """The parts built so far, by the capabilities they provide (what their needs read)."""

    @property
    def settings(self) -> Settings:
        """The workspace's settings, read at first use: the window reads them once its first frame is on
        screen (importing and reading them is ~0.1 s of CPU that frame does not wait for). A
        broken setting is said in the banner and the defaults stand in."""
        self.read_settings()
        assert self._settings is not None
        return self._settings

    @property
    def resolved(self) -> ResolvedSettings | None:
        """The workspace's settings with what waits for trust (None when settings were given, or broken)."""
        self.read_settings()
        return self._resolved

    def with_settings(self, apply: Callable[[Settings], None]) -> None:
        """Call ``apply`` with the settings once they are read: now if they are, else when first used."""
        if self._settings is not None:
            apply(self._settings)
        else:
            self._when_read.append(apply)

    def read_settings(self) -> None:
        """Read the workspace's settings now, unless they were read (or given)."""
        if self._settings is not None:
            return
        from ide.settings import Settings

        self._resolved = self._load()
        self._settings = self._resolved.settings if self._resolved is not None else Settings()
        waiting, self._when_read = self._when_read, []
        for apply in waiting:
            apply(self._settings)

    def reload_settings(self) -> None:
        """Read the workspace's settings again (a trust decision changes what they hold); when a setting is
        broken now, the banner says so and the settings read before stay."""
        resolved = self._load()
        if resolved is not None:
            self._resolved, self._settings = resolved, resolved.settings

    def _load(self) -> ResolvedSettings | None:
        """The workspace's settings read from its files; None, said in the banner, when one is broken."""
        from ide.protocol import ErrorInfo
        from ide.settings import SettingsError, load_settings

        try:
            return load_settings(self.workspace)
        except SettingsError as exc:
            self.banner.show_error(
                ErrorInfo(kind="settings", message=str(exc), fix="Fix the setting, then reopen.")
            )
            return None

    def message(self, text: str, timeout_ms: int = 0) -> None:
        """A transient message in the status bar."""
        self.window.statusBar().showMessage(text, timeout_ms)

    def show_error(self, info: ErrorInfo) -> None:
        """Explain ``info`` in the banner (with a Restart button when the backend is not running)."""
        self.banner.show_error(info, restartable=self.bridge.state == BackendState.STOPPED)

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn, as the chat's Send does."""
        self.window.send_prompt(text)

    def maximise(self, dock: QDockWidget, keep: tuple[QDockWidget, ...] = ()) -> None:
        """Give ``dock`` the whole window (``keep`` stay beside it) until the user brings the layout back."""
        self.window.maximise(dock, keep)

    def restore_layout(self) -> None:
        """Bring back the layout a :meth:`maximise` replaced (nothing when no dock has the window)."""
        self.window.restore_layout()

    def action(
        self, menu: str, text: str, slot: Any, shortcut: str | QKeySequence.StandardKey | None = None
    ) -> QAction:
        """A new action at the end of the menu ``menu``."""
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        self.menus[menu].addAction(action)
        return action


class Part(QObject):
    """A piece of the window built from the registry: it creates its widgets and wires its own requests
    and notifications through ``ctx.bridge``. A controller without a dock subclasses this directly."""

    spec: ClassVar[Spec]
    """Its name and order (and a dock's title and place); a class without one is a base, not a part."""
    provides: ClassVar[tuple[type, ...]] = ()
    """The capabilities (:mod:`ide.app.parts.capabilities`) this part offers the others."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx.window)
        self.ctx = ctx
        self.bridge = ctx.bridge

    def subscribe(self) -> None:
        """Subscribe to the backend's notifications (``bridge.on_notification``): called when the window
        starts, before any part's :meth:`start` and the backend's. Not at construction: the declarations
        hold their wire models, and the first frame does without pydantic."""

    def start(self) -> bool:
        """The window starts: False holds the backend's start (this part starts it later)."""
        return True

    # What the backend's life means to this part: a part overrides the handlers it needs, and :meth:`attach`
    # connects those (and only those) to the bridge's signals of the same meaning.

    def on_session_ready(self, session_id: str, replayed: bool) -> None:
        """A session is open (``replayed``: restored, its history replayed)."""

    def on_state(self, state: str) -> None:
        """The backend is in this :class:`BackendState` now."""

    def on_session_event(self, event: SessionEvent) -> None:
        """One event of the current session, as the bridge's fold made it: a ``session/update`` read, a
        prompt sent, the turn's end or failure."""

    def on_turn_finished(self, stop_reason: str, meta: Any) -> None:
        """A turn ended, with the prompt's stop reason and ``_meta``."""

    def on_error(self, info: ErrorInfo) -> None:
        """The bridge raised an error (the window's banner shows it)."""

    def on_backend_died(self, code: int, stderr_tail: str) -> None:
        """The backend's process ended without being asked."""

    def attach(self) -> None:
        """Connect the bridge's signals to the handlers this part overrides. The window calls it once the
        part is built, so a handler runs after what the part's own ``__init__`` connected to that signal."""
        for handler, signal in BRIDGE_SIGNALS.items():
            if getattr(type(self), handler) is not getattr(Part, handler):
                getattr(self.bridge, signal).connect(getattr(self, handler))


BRIDGE_SIGNALS = {
    "on_session_ready": "sessionReady",
    "on_state": "stateChanged",
    "on_session_event": "sessionEvent",
    "on_turn_finished": "turnFinished",
    "on_error": "errorRaised",
    "on_backend_died": "backendDied",
}
"""Part handler → the :class:`BackendBridge` signal it is connected to (see :meth:`Part.attach`)."""


class Dock(Part):
    """A part shown in a dock widget. Subclasses set the class attributes and give their widget to
    ``__init__``, or, when :attr:`deferred`, make it in :meth:`build`."""

    min_width: ClassVar[int | None] = DOCK_MIN_WIDTH
    """The narrowest the dock's content may be made; None: what its own layout needs, for a dock whose
    buttons must read whole at any width (the review's rows wrap, so that is the widest of its buttons)."""
    deferred: ClassVar[bool] = False
    """The dock is out of sight in a fresh window's first frame (a tab behind another, shown on demand): its
    widget is made by :meth:`build` once the first frame is on screen (the window's
    :meth:`build_deferred`), or as soon as the dock is shown or anything reads it (:meth:`content`), so the
    first frame does not wait for it. Until then the dock holds an empty placeholder."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        spec = cls.__dict__.get("spec")
        if spec is not None and not (spec.title and spec.place):
            raise TypeError(f"{cls.__name__}: a dock's Spec needs a title and a place")

    def __init__(self, ctx: AppContext, widget: QWidget | None = None) -> None:
        super().__init__(ctx)
        self.dock = QDockWidget(self.spec.title, ctx.window)
        self.dock.setObjectName(f"{self.spec.name}Dock")
        self.widget: QWidget | None = None
        """The dock's content (None while a deferred dock's is not built)."""
        if widget is None:
            if not self.deferred:
                raise TypeError(f"{type(self).__name__}: a dock that is not deferred is given its widget")
            placeholder = QWidget()
            placeholder.setMinimumWidth(DOCK_MIN_WIDTH)
            self.dock.setWidget(placeholder)
            self.dock.visibilityChanged.connect(self._shown)
        else:
            self._set_content(widget)
        self.dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )

    def build(self) -> QWidget:
        """A deferred dock's widget, made and wired (called once, by :meth:`content`)."""
        raise NotImplementedError(f"{type(self).__name__} is deferred: it builds its widget in build()")

    def content(self) -> QWidget:
        """The dock's widget, built now if it is deferred and not built yet."""
        if self.widget is None:
            placeholder = self.dock.widget()
            self._set_content(self.build())
            placeholder.deleteLater()
        assert self.widget is not None
        return self.widget

    @property
    def built(self) -> bool:
        """The dock's widget is made (always, unless :attr:`deferred`)."""
        return self.widget is not None

    def _set_content(self, widget: QWidget) -> None:
        self.widget = widget
        if self.min_width is not None:
            widget.setMinimumWidth(self.min_width)
        self.dock.setWidget(widget)

    def _shown(self, visible: bool) -> None:
        """A deferred dock coming into sight (a restored layout, its View-menu entry, its tab) is built
        before it paints."""
        if visible and self.widget is None:
            self.content()

    def show(self) -> None:
        """Show and raise the dock; a hidden one opens at its share of the window's height, or as a tab at
        the height its group has (what the user resized it to)."""
        window, widget = self.ctx.window, self.dock
        if widget.isHidden():
            # A tab beside one already open keeps the group's height (what the user resized it to); a dock
            # opening an area sizes it. A hidden dock is in no tab group yet (tabifiedDockWidgets is empty),
            # so the group is found by its place: the docks of its area, the one shown on top.
            tabs = self._group_shown() if self.spec.place and self.spec.place.tab_group else []
            height = tabs[0].height() if tabs else int(window.height() * DOCK_SHARE)
            widget.show()
            # Once the layout has taken the new dock in (a new tab bar resizes the area) — unless a dock
            # took the window or gave it back meanwhile: a height measured in one layout is not the other's
            # (a turn's review shown beside a run's maximised tree, then the layout restored at its end).
            layout = getattr(window, "maximised", None)
            QTimer.singleShot(
                0,
                window,
                lambda: self._resize_to(height) if getattr(window, "maximised", None) is layout else None,
            )
        widget.raise_()

    def _resize_to(self, height: int) -> None:
        """Make the dock ``height`` high: resizeDocks sizes its area, tab bar included, so the bar's share is
        added once the first resize shows it."""
        window, widget = self.ctx.window, self.dock
        window.resizeDocks([widget], [height], Qt.Orientation.Vertical)
        window.layout().activate()
        short = height - widget.height()
        if 0 < short < height:
            window.resizeDocks([widget], [height + short], Qt.Orientation.Vertical)

    def _group_shown(self) -> list[QDockWidget]:
        """The docked, visible docks of this dock's area whose content is on screen (a tab's top one)."""
        window, widget = self.ctx.window, self.dock
        area = window.dockWidgetArea(widget)
        return [
            dock
            for dock in window.findChildren(QDockWidget)
            if dock is not widget
            and dock.isVisible()
            and not dock.isFloating()
            and window.dockWidgetArea(dock) == area
            and not dock.visibleRegion().isEmpty()
        ]


class Built(Generic[W]):
    """A deferred dock's widget as a typed attribute (``panel = Built["MemoryPanel"]()``): reading it on a
    dock builds the widget now if it is not yet (:meth:`Dock.content`)."""

    def __get__(self, dock: Dock | None, owner: type) -> W:
        if dock is None:
            raise AttributeError(f"{owner.__name__}'s widget is read on a dock, not on its class")
        return cast(W, dock.content())
