"""The Memory dock: search, read, keep, delete and export what the agent remembers about the workspace.

Each entry shows its provenance: learned by Arbor from a finished run, or written by the agent itself
(``store_insight``) in a given session. Agent-written notes may repeat an injection the agent read
somewhere, so they wait, marked "unreviewed", for the user to keep or delete them; only kept ones inform
later prompts. The "Unreviewed" filter lists just those, and their number is in the dock's title. A failed
request explains itself in the banner and leaves nothing pending; it never touches the review.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ide.app.parts.base import SIDE, AppContext, Built, Dock, Spec

if TYPE_CHECKING:  # the wire models load with the panel and the requests, after the first frame
    from ide.protocol import ErrorInfo
    from ide.protocol.memory import MemoryEntry, MemoryList

COALESCE_MS = 200
UNREVIEWED_COLOUR = QColor("#b7791f")


def provenance(entry: MemoryEntry) -> str:
    """Who wrote an entry and whether the user reviewed it, in a few words for the list."""
    # From author and reviewed, which every backend with provenance sends (not only newer ones).
    if entry.author == "agent":
        return "agent-written · kept" if entry.reviewed else "agent-written · unreviewed"
    return "learned"


def provenance_detail(entry: MemoryEntry) -> str:
    """Provenance in a sentence for the detail pane: who, which session, when, and what it means."""
    session = f"in session {entry.session_id[:8]}" if entry.session_id else "in an unrecorded session"
    when = _when(entry.created_at)
    if entry.author != "agent":
        return f"Learned by Arbor from a finished run {session}, {when}."
    written = f"Written by the agent (store_insight) {session}, {when}"
    if not entry.reviewed:
        return f"{written}. Unreviewed: it stays out of later prompts until you keep it."
    kept = f" on {_when(entry.kept_at)}" if entry.kept_at else ""
    return f"{written}; kept by you{kept}. Later prompts may use it, quoted as a note."


def _when(timestamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


class MemoryPanel(QWidget):
    """Interface: :meth:`set_entries`, :attr:`searchRequested` (query, namespace or "", unreviewed only),
    :attr:`deleteRequested` (id), :attr:`keepRequested` (id), :attr:`exportRequested`,
    :attr:`unreviewedChanged` (how many entries wait for review)."""

    searchRequested = Signal(str, str, bool)
    deleteRequested = Signal(int)
    keepRequested = Signal(int)
    exportRequested = Signal()
    unreviewedChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memoryPanel")
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search memory…")
        self.namespace = QComboBox()
        self.namespace.addItem("all", "")
        from ide.protocol.memory import NAMESPACES

        for name in NAMESPACES:
            self.namespace.addItem(name, name)
        self.list = QListWidget()
        self.list.setObjectName("memoryList")
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setObjectName("memoryDetail")
        self.unreviewed_only = QCheckBox("Unreviewed")
        self.unreviewed_only.setObjectName("memoryUnreviewedOnly")
        self.unreviewed_only.setToolTip("Only notes the agent wrote that you have not kept yet")
        self.keep_button = QPushButton("Keep")
        self.keep_button.setToolTip("You read this agent-written note and keep it: later prompts may use it")
        self.keep_button.setEnabled(False)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Forget this entry")
        self.delete_button.setEnabled(False)
        self.export_button = QPushButton("Export…")
        self.counts = QLabel("")
        self.counts.setObjectName("memoryCounts")
        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.namespace)
        top.addWidget(self.unreviewed_only)
        buttons = QHBoxLayout()
        buttons.addWidget(self.counts, 1)
        buttons.addWidget(self.keep_button)
        buttons.addWidget(self.delete_button)
        buttons.addWidget(self.export_button)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.list)
        split.addWidget(self.detail)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addLayout(buttons)
        self.entries: dict[int, MemoryEntry] = {}
        self.unreviewed = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(COALESCE_MS)
        self._timer.timeout.connect(self.refresh)
        self.query.textChanged.connect(lambda _text: self._timer.start())
        self.namespace.currentIndexChanged.connect(lambda _i: self.refresh())
        self.unreviewed_only.toggled.connect(lambda _on: self.refresh())
        self.keep_button.clicked.connect(self._keep_current)
        self.list.currentItemChanged.connect(self._show_current)
        self.delete_button.clicked.connect(self._delete_current)
        self.export_button.clicked.connect(self.exportRequested.emit)

    def refresh(self) -> None:
        self.searchRequested.emit(
            self.query.text(), self.namespace.currentData() or "", self.unreviewed_only.isChecked()
        )

    def set_counts(self, result: MemoryList) -> None:
        """The counts line and the number waiting for review (after a search, delete or keep)."""
        text = ", ".join(f"{n} {c}" for n, c in result.counts.items())
        if result.unreviewed:
            text += f" · {result.unreviewed} to review"
        if result.message:
            text = result.message
        if text:
            self.counts.setText(text)
        if result.unreviewed != self.unreviewed:
            self.unreviewed = result.unreviewed
            waiting = f" ({self.unreviewed})" if self.unreviewed else ""
            self.unreviewed_only.setText(f"Unreviewed{waiting}")
            self.unreviewedChanged.emit(self.unreviewed)

    def set_entries(self, result: MemoryList) -> None:
        """Show a search result; the entry that was selected stays selected if it is still listed (after
        a Keep it shows as kept)."""
        current = self.list.currentItem()
        selected = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        self.set_counts(result)
        self.list.clear()
        self.entries = {e.id: e for e in result.entries}
        for entry in result.entries:
            item = QListWidgetItem(f"[{entry.namespace}] {entry.title}   · {provenance(entry)}")
            item.setData(Qt.ItemDataRole.UserRole, entry.id)
            if not entry.reviewed:
                item.setForeground(UNREVIEWED_COLOUR)
                item.setToolTip("Written by the agent and not reviewed: it does not inform later prompts")
            self.list.addItem(item)
            if entry.id == selected:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None:
            self._show_current(None)

    def _show_current(self, item: QListWidgetItem | None, _previous: QListWidgetItem | None = None) -> None:
        entry = self.entries.get(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None
        self.delete_button.setEnabled(entry is not None)
        self.keep_button.setEnabled(entry is not None and not entry.reviewed)
        if entry is None:
            self.detail.clear()
            return
        score = f" · score {entry.score:g}" if entry.score is not None else ""
        self.detail.setPlainText(
            f"{entry.title}\n{entry.namespace} · {entry.task_type}{score}\n{provenance_detail(entry)}"
            f"\n\n{entry.content}"
        )

    def _keep_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.keepRequested.emit(int(item.data(Qt.ItemDataRole.UserRole)))

    def _delete_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.deleteRequested.emit(int(item.data(Qt.ItemDataRole.UserRole)))


class MemoryDock(Dock):
    """The Memory panel, tabbed with the chat, and its requests."""

    spec = Spec("memory", title="Memory", place=SIDE, order=60)
    panel = Built["MemoryPanel"]()

    memoryReceived = Signal(object)
    """A MemoryList: a search result."""
    memoryChanged = Signal(object)
    """A MemoryList with the counts after a delete or keep (its own signal, so an answer to a search still
    in flight is never taken for it)."""
    memoryExported = Signal(object)
    """A MemoryExported after an export."""

    deferred = True  # a tab behind the chat

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.deleting: int | None = None
        """The id of an entry whose delete was sent and not answered yet."""
        self.memoryChanged.connect(self._on_changed)
        self.memoryExported.connect(
            lambda done: ctx.message(f"Exported {done.entries} memories to {done.path}", 10000)
        )

    def build(self) -> MemoryPanel:
        panel = MemoryPanel()
        panel.searchRequested.connect(self.search)
        panel.deleteRequested.connect(self.delete)
        panel.keepRequested.connect(self.keep)
        panel.exportRequested.connect(self.export)
        panel.unreviewedChanged.connect(self._show_to_review)
        self.memoryReceived.connect(panel.set_entries)
        return panel

    def search(self, query: str, namespace: str, unreviewed_only: bool = False) -> None:
        """Search the memory; the result fills the panel."""
        from ide.protocol.memory import MEMORY_SEARCH, MemorySearchParams

        session_id = self.bridge.session_id
        if session_id is not None and self.bridge.supports(MEMORY_SEARCH):
            params = MemorySearchParams(
                session_id=session_id,
                query=query,
                namespace=namespace or None,
                unreviewed_only=unreviewed_only,
            )
            self.bridge.request(MEMORY_SEARCH, params, self.memoryReceived.emit, self._failed)

    def delete(self, memory_id: int) -> None:
        """Forget an entry; the delete button waits for the answer."""
        from ide.protocol.memory import MEMORY_DELETE, MemoryDeleteParams

        session_id = self.bridge.session_id
        if session_id is None:
            return
        params = MemoryDeleteParams(session_id=session_id, id=memory_id)
        if self.bridge.request(MEMORY_DELETE, params, self.memoryChanged.emit, self._failed):
            self.deleting = memory_id
            self.panel.delete_button.setEnabled(False)

    def keep(self, memory_id: int) -> None:
        """Keep an agent-written note: later prompts may use it."""
        from ide.protocol.memory import MEMORY_KEEP, MemoryKeepParams

        session_id = self.bridge.session_id
        if session_id is not None:
            params = MemoryKeepParams(session_id=session_id, id=memory_id)
            self.bridge.request(MEMORY_KEEP, params, self.memoryChanged.emit, self._failed)

    def export(self, path: str | None = None) -> None:
        """Write every entry to ``path`` (asked for when None) as JSON."""
        from ide.protocol.memory import MEMORY_EXPORT, MemoryExportParams

        session_id = self.bridge.session_id
        if session_id is None:
            return
        if path is None:
            path, _filter = QFileDialog.getSaveFileName(
                self.ctx.window, "Export memory", "arbor-memory.json", "JSON (*.json)"
            )
        if path:
            params = MemoryExportParams(session_id=session_id, path=path)
            self.bridge.request(MEMORY_EXPORT, params, self.memoryExported.emit, self._failed)

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        """The memory may have learned something, or the agent stored a note to review."""
        self.panel.refresh()

    def on_session_ready(self, *_: object) -> None:
        from ide.protocol.memory import MEMORY_SEARCH

        self.deleting = None
        self.panel.setEnabled(self.bridge.supports(MEMORY_SEARCH))
        self.panel.refresh()

    def _on_changed(self, result: MemoryList) -> None:
        """A keep or delete went through: new counts, and the same search again to show the change."""
        self.deleting = None
        self.panel.set_counts(result)
        self.panel.refresh()

    def _failed(self, info: ErrorInfo) -> None:
        """A refused memory request: the banner says why, nothing stays pending, the review is untouched."""
        self.ctx.show_error(info)
        if self.deleting is not None:
            self.deleting = None
            self.panel.delete_button.setEnabled(self.panel.list.currentItem() is not None)

    def _show_to_review(self, count: int) -> None:
        """The dock's title (its tab's, when tabbed with the chat) counts the agent's notes to review."""
        self.dock.setWindowTitle(f"Memory ({count} to review)" if count else "Memory")
