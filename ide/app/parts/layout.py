"""The window's dock layout: each dock in its place, the default sizes, the layout saved between runs and
Reset Layout, and one dock given the whole window and back (View → Maximise Search Tree)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget

from ide.app.parts.base import DOCK_SHARE, AppContext, Dock

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
MAXIMISE_SHORTCUT = "Ctrl+Shift+T"
"""Maximise the Search tree (everything else out of the way) and back: one key both ways."""
KEPT_SHARE = 0.34
"""The width a dock kept beside a maximised one (the chat beside a live run) takes: its controls fit."""
SIDE_CORNERS = (Qt.Corner.TopRightCorner, Qt.Corner.BottomRightCorner)
DEFAULT_CORNERS = {
    Qt.Corner.TopRightCorner: Qt.DockWidgetArea.TopDockWidgetArea,
    Qt.Corner.BottomRightCorner: Qt.DockWidgetArea.BottomDockWidgetArea,
}
"""Qt's owners of the right-hand corners (the bottom area spans under the chat), restored after a maximise."""


class DockLayout:
    """Lays ``docks`` out in the context's window (in this order), adds the View menu's entries (a toggle
    per dock, Maximise Search Tree, Reset Layout), and keeps the layout: restored from the last run by
    :meth:`restore`, saved by :meth:`save`, one dock maximised and back."""

    def __init__(self, ctx: AppContext, docks: list[Dock], tree: Callable[[], QDockWidget]) -> None:
        self._ctx = ctx
        self.window = window = ctx.window
        self.docks = docks
        self._tree = tree
        """The Search tree's dock (what the View menu maximises)."""
        self._maximised: QDockWidget | None = None
        self._before_maximise: QByteArray | None = None
        self._title = ""
        """The maximised dock's own title (while maximised it says how to come back)."""
        self._default_docks = False
        """The default sizes wait for the window's first show (no saved layout was restored)."""
        self._lay_out()
        self._default_state = window.saveState(STATE_VERSION)
        ctx.menus["view"].addSeparator()
        self.maximise_action = ctx.action(
            "view", "&Maximise Search Tree", self.toggle_maximise_tree, MAXIMISE_SHORTCUT
        )
        self.maximise_action.setCheckable(True)
        self.maximise_action.setToolTip(
            f"Give the Search tree the whole window; {MAXIMISE_SHORTCUT} again brings the layout back"
        )
        ctx.action("view", "&Reset Layout", self.reset)

    def _lay_out(self) -> None:
        """Each dock in its area: a tab group's docks tabified (its first raised), others stacked."""
        window = self.window
        first_in_area: dict[Qt.DockWidgetArea, Dock] = {}
        first_of_group: dict[str, Dock] = {}
        for dock in self.docks:
            place = dock.spec.place
            window.addDockWidget(place.area, dock.dock)
            group = first_of_group.get(place.tab_group or "")
            if group is not None:
                window.tabifyDockWidget(group.dock, dock.dock)
            elif place.tab_group is None and place.area in first_in_area:
                window.splitDockWidget(first_in_area[place.area].dock, dock.dock, Qt.Orientation.Vertical)
            if place.tab_group is not None:
                first_of_group.setdefault(place.tab_group, dock)
            first_in_area.setdefault(place.area, dock)
            if place.hidden:
                dock.dock.hide()  # shown when there is something to show
            toggle = dock.dock.toggleViewAction()
            if dock.spec.shortcut:
                toggle.setShortcut(QKeySequence(dock.spec.shortcut))
            self._ctx.menus["view"].addAction(toggle)
        for dock in first_of_group.values():
            dock.dock.raise_()

    def restore(self) -> None:
        """The geometry and dock layout the last window saved (else the default size; the default dock
        sizes at the first show, :meth:`shown`)."""
        window, store = self.window, QSettings()
        geometry = store.value(GEOMETRY_KEY)
        state = store.value(STATE_KEY)
        if not (isinstance(geometry, QByteArray) and window.restoreGeometry(geometry)):
            window.resize(*DEFAULT_SIZE)
        # Dock sizes only take once the window has a layout, so the default is applied at first show.
        self._default_docks = not (
            isinstance(state, QByteArray) and window.restoreState(state, STATE_VERSION)
        )

    def shown(self) -> None:
        """The window is shown: the default dock sizes, the first time, unless a saved layout was restored."""
        if self._default_docks:
            self._default_docks = False
            self._default_sizes()

    def _default_sizes(self) -> None:
        window = self.window
        named = {dock.spec.name: dock.dock for dock in self.docks}
        workspace, outline, chat = (named[name] for name in ("workspace", "outline", "chat"))
        widths = [int(window.width() * share) for share in DEFAULT_DOCK_SHARES]
        window.resizeDocks([workspace, chat], widths, Qt.Orientation.Horizontal)
        heights = [int(window.height() * WORKSPACE_SHARE), int(window.height() * (1 - WORKSPACE_SHARE))]
        window.resizeDocks([workspace, outline], heights, Qt.Orientation.Vertical)
        area = Qt.DockWidgetArea.BottomDockWidgetArea
        widgets = [dock.dock for dock in self.docks]
        bottom = [dock for dock in widgets if dock.isVisible() and window.dockWidgetArea(dock) == area]
        if bottom:
            window.resizeDocks(bottom[:1], [int(window.height() * DOCK_SHARE)], Qt.Orientation.Vertical)

    @property
    def maximised(self) -> QDockWidget | None:
        """The dock that has the whole window, if one has."""
        return self._maximised

    def maximise(self, dock: QDockWidget, keep: tuple[QDockWidget, ...] = ()) -> None:
        """Give ``dock`` the whole window (``keep``: docks that stay beside it); :meth:`restore_layout` — or
        the same key — brings back the layout as it was, sizes included."""
        window = self.window
        if self._maximised is dock:
            return
        if self._maximised is None:
            self._before_maximise = window.saveState(STATE_VERSION)
        self._maximised = dock
        kept = {dock, *keep}
        for part in self.docks:
            if part.dock not in kept and not part.dock.isFloating():
                part.dock.hide()
        dock.show()
        dock.raise_()
        window.centralWidget().hide()  # the docks' areas then share the whole window
        # A dock kept beside it (the chat) becomes a narrow full-height column; the maximised one the rest.
        for corner in SIDE_CORNERS:
            window.setCorner(corner, Qt.DockWidgetArea.RightDockWidgetArea)
        beside = [kept for kept in keep if window.dockWidgetArea(kept) != window.dockWidgetArea(dock)]
        if beside:  # once the layout has taken the new corners in
            side = int(window.width() * KEPT_SHARE)
            widths = [window.width() - side, *[side] * len(beside)]
            resize = partial(window.resizeDocks, [dock, *beside], widths, Qt.Orientation.Horizontal)
            QTimer.singleShot(0, window, resize)
        self._title = dock.windowTitle()
        dock.setWindowTitle(f"{self._title} — {MAXIMISE_SHORTCUT} brings the layout back")
        self.maximise_action.setChecked(True)
        window.maximisedChanged.emit(True)

    def restore_layout(self) -> None:
        """Back from :meth:`maximise`: every dock where and as large as it was."""
        window = self.window
        if self._maximised is None:
            return
        dock, self._maximised = self._maximised, None
        dock.setWindowTitle(self._title)
        # The tab shown stays the one shown: the maximised dock, or a tab of its group raised over it since
        # (the review, with a turn's changes).
        group = [dock, *window.tabifiedDockWidgets(dock)]
        shown = next((tab for tab in group if tab.isVisible() and not tab.visibleRegion().isEmpty()), dock)
        for corner in SIDE_CORNERS:
            window.setCorner(corner, DEFAULT_CORNERS[corner])
        window.centralWidget().show()
        if self._before_maximise is not None:
            window.restoreState(self._before_maximise, STATE_VERSION)
            # The state holds the toolbars' visibility too: the banner's bar shows what the banner says now.
            banner = self._ctx.banner
            if banner.bar is not None:
                banner.bar.show_banner(banner.wanted)
        self._before_maximise = None
        if shown is not dock:
            shown.show()  # a dock the maximised layout opened (the review) is not in the state restored
        QTimer.singleShot(0, shown.raise_)
        self.maximise_action.setChecked(False)
        window.maximisedChanged.emit(False)

    def toggle_maximise_tree(self) -> None:
        """View → Maximise Search Tree (Ctrl+Shift+T): maximise the tree, or bring the layout back."""
        if self._maximised is not None:
            self.restore_layout()
        else:
            self.maximise(self._tree())

    def reset(self) -> None:
        """Every dock back where a fresh profile has it (an eval dock that is open stays open, in its
        place) at the default sizes, and the saved layout forgotten."""
        self.restore_layout()
        still_open = [dock for dock in self.docks if dock.spec.place.hidden and dock.dock.isVisible()]
        self.window.restoreState(self._default_state, STATE_VERSION)
        store = QSettings()
        store.remove(STATE_KEY)
        store.sync()
        self._default_sizes()
        for dock in still_open:
            dock.show()

    def save(self) -> None:
        """Remember geometry and dock layout for the next window (the layout from before a maximise)."""
        window, store = self.window, QSettings()
        store.setValue(GEOMETRY_KEY, window.saveGeometry())
        state = self._before_maximise if self._maximised is not None else None
        store.setValue(STATE_KEY, state if state is not None else window.saveState(STATE_VERSION))
        store.sync()
