"""The Sessions dock: the workspace's sessions, newest first and titled by their first prompt; reopening one
(``session/load``) brings back its chat, search trees and pending review, and New Session starts afresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ide.app.acp_client import BackendState
from ide.app.parts.base import SIDE, AppContext, Built, Dock, Spec
from ide.app.parts.capabilities import Chat
from ide.app.parts.needs import Uses
from ide.client.sessions import SessionSummary

if TYPE_CHECKING:
    from datetime import datetime

    from ide.protocol import ErrorInfo

SESSION_ROLE = Qt.ItemDataRole.UserRole
UNTITLED = "New session (no prompt yet)"
EMPTY = "No earlier sessions in this workspace yet. Each conversation is kept; reopen it here."


def when(moment: datetime | None, now: datetime | None = None) -> str:
    """A session's last change in local time: the time today, else the date and time."""
    from datetime import datetime

    if moment is None:
        return ""
    local = moment.astimezone()
    today = (now or datetime.now().astimezone()).date()
    if local.date() == today:
        return f"today {local:%H:%M}"
    return f"{local:%d %b %H:%M}" if local.year == today.year else f"{local:%d %b %Y}"


class SessionsPanel(QWidget):
    """The session list with New Session and Open. Interface: :meth:`set_sessions`, :meth:`set_message`,
    :meth:`set_enabled_actions`; signals :attr:`openRequested`, :attr:`newRequested`."""

    openRequested = Signal(str)
    """A session id to reopen (double-click, Enter, or Open)."""
    newRequested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.list = QListWidget()
        self.list.setObjectName("sessionList")
        self.list.setWordWrap(True)
        self.list.setSpacing(3)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.itemActivated.connect(self._activated)
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # a backend's error text, never markup
        self.message.setObjectName("mutedLabel")
        self.new_button = QPushButton("New Session")
        self.new_button.clicked.connect(self.newRequested)
        self.open_button = QPushButton("Open")
        self.open_button.clicked.connect(self._open_current)
        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button)
        buttons.addStretch(1)
        buttons.addWidget(self.open_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(buttons)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.message)
        self.current: str | None = None
        self._new = self._reopen = False
        self.set_message(EMPTY)
        self._update_buttons()

    def set_sessions(self, sessions: list[SessionSummary], current: str | None) -> None:
        """Show ``sessions`` (newest first): the titled ones, and the current one even without a title."""
        self.current = current
        selected = self.selected()
        self.list.clear()
        for session in sessions:
            if session.title is None and session.session_id != current:
                continue  # opened but never prompted: nothing to come back to
            title = " ".join((session.title or UNTITLED).split())
            mark = "  · current" if session.session_id == current else ""
            item = QListWidgetItem(f"{title}\n{when(session.updated_at)}{mark}")
            item.setData(SESSION_ROLE, session.session_id)
            item.setToolTip(f"{session.title or UNTITLED}\nsession {session.session_id}")
            if session.session_id == current:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.list.addItem(item)
            if session.session_id == selected:
                self.list.setCurrentItem(item)
        earlier = [session_id for session_id in self.sessions_shown() if session_id != current]
        self.set_message("" if earlier else EMPTY)
        self._update_buttons()

    def sessions_shown(self) -> list[str]:
        """The ids listed, top to bottom."""
        return [self.list.item(row).data(SESSION_ROLE) for row in range(self.list.count())]

    def titles(self) -> list[str]:
        """The first line (the title) of each row, top to bottom."""
        return [self.list.item(row).text().splitlines()[0] for row in range(self.list.count())]

    def selected(self) -> str | None:
        """The id of the selected session, if any."""
        item = self.list.currentItem()
        return item.data(SESSION_ROLE) if item is not None else None

    def set_message(self, text: str) -> None:
        """A line under the list: why it is empty, or why it could not be read."""
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def set_enabled_actions(self, new: bool, reopen: bool) -> None:
        """Allow starting a new session and reopening one (only while the agent is ready for it)."""
        self._new, self._reopen = new, reopen
        self._update_buttons()

    def _update_buttons(self) -> None:
        self.new_button.setEnabled(self._new)
        selected = self.selected()
        self.open_button.setEnabled(self._reopen and selected is not None and selected != self.current)

    def _activated(self, item: QListWidgetItem) -> None:
        session_id = item.data(SESSION_ROLE)
        if self._reopen and session_id != self.current:
            self.openRequested.emit(session_id)

    def _open_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._activated(item)


class SessionsDock(Dock):
    """Lists the sessions through the bridge (``session/list``) whenever one opens or a turn ends."""

    spec = Spec("sessions", title="Sessions", place=SIDE, order=65)
    panel = Built["SessionsPanel"]()
    chat = Uses(Chat)

    deferred = True  # a tab behind the chat

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._asked = 0
        self.new_action = ctx.action("file", "&New Session", self.new, "Ctrl+Shift+N")
        self.list_action = ctx.action("file", "Open Sess&ion…", self.show_list, "Ctrl+Shift+O")
        self.on_state(self.bridge.state)

    def build(self) -> SessionsPanel:
        panel = SessionsPanel()
        panel.openRequested.connect(self.open)
        panel.newRequested.connect(self.new)
        self._enable(panel, self.bridge.state)
        return panel

    def on_session_ready(self, session_id: str, replayed: bool) -> None:
        self.refresh()

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Ask for the list again; an agent that cannot list sessions says so in the dock."""
        self._asked += 1
        asked = self._asked
        if not self.bridge.list_sessions(lambda found: self._show(asked, found), self._failed):
            running = self.bridge.state != BackendState.STOPPED
            self.panel.set_sessions([], None)
            self.panel.set_message("This agent cannot list its sessions." if running else "")

    def open(self, session_id: str) -> bool:
        """Reopen ``session_id``: the views are cleared and its history replayed into them."""
        return self._open(session_id, "A session can be opened when the agent is ready (no turn running).")

    def new(self) -> bool:
        """Start a new session: an empty chat, no tree, no review."""
        return self._open(None, "A new session can be started when the agent is ready (no turn running).")

    def _open(self, session_id: str | None, refused: str) -> bool:
        if not self.bridge.open_session(session_id):
            self.ctx.message(refused, 5000)
            return False
        if self.chat is not None:
            self.chat.dock.raise_()
        return True

    def show_list(self) -> None:
        """Show the Sessions dock (File → Open Session…) with a fresh list."""
        self.dock.show()
        self.dock.raise_()
        self.panel.list.setFocus()
        self.refresh()

    def _show(self, asked: int, found: list[SessionSummary]) -> None:
        if asked == self._asked:  # an older answer than the last question is out of date
            self.panel.set_sessions(found, self.bridge.session_id)

    def _failed(self, info: ErrorInfo) -> None:
        self.panel.set_message(f"The sessions could not be listed: {info.message}")

    def on_state(self, state: str) -> None:
        if self.built:
            self._enable(self.panel, state)
        self.new_action.setEnabled(state == BackendState.READY)

    def _enable(self, panel: SessionsPanel, state: str) -> None:
        ready = state == BackendState.READY
        panel.set_enabled_actions(ready, ready and self.bridge.can_load_session)
