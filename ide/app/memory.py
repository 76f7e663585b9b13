"""The Memory dock: search, read, delete and export what the agent remembers about the workspace."""

from __future__ import annotations

import datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
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

from ide.protocol.memory import NAMESPACES, MemoryEntry, MemoryList

COALESCE_MS = 200


class MemoryPanel(QWidget):
    """Interface: :meth:`set_entries`, :attr:`searchRequested` (query, namespace or ""),
    :attr:`deleteRequested` (id), :attr:`exportRequested`."""

    searchRequested = Signal(str, str)
    deleteRequested = Signal(int)
    exportRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memoryPanel")
        self.query = QLineEdit()
        self.query.setPlaceholderText("Search memory…")
        self.namespace = QComboBox()
        self.namespace.addItem("all", "")
        for name in NAMESPACES:
            self.namespace.addItem(name, name)
        self.list = QListWidget()
        self.list.setObjectName("memoryList")
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setObjectName("memoryDetail")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setEnabled(False)
        self.export_button = QPushButton("Export…")
        self.counts = QLabel("")
        self.counts.setObjectName("memoryCounts")
        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.namespace)
        buttons = QHBoxLayout()
        buttons.addWidget(self.counts, 1)
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
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(COALESCE_MS)
        self._timer.timeout.connect(self.refresh)
        self.query.textChanged.connect(lambda _text: self._timer.start())
        self.namespace.currentIndexChanged.connect(lambda _i: self.refresh())
        self.list.currentItemChanged.connect(self._show_current)
        self.delete_button.clicked.connect(self._delete_current)
        self.export_button.clicked.connect(self.exportRequested.emit)

    def refresh(self) -> None:
        self.searchRequested.emit(self.query.text(), self.namespace.currentData() or "")

    def set_entries(self, result: MemoryList) -> None:
        """Show a search result (or the counts after a delete)."""
        if result.counts:
            self.counts.setText(", ".join(f"{n} {c}" for n, c in result.counts.items()))
        if result.message:
            self.counts.setText(result.message)
        self.list.clear()
        self.entries = {e.id: e for e in result.entries}
        for entry in result.entries:
            item = QListWidgetItem(f"[{entry.namespace}] {entry.title}")
            item.setData(Qt.ItemDataRole.UserRole, entry.id)
            self.list.addItem(item)
        self.detail.clear()
        self.delete_button.setEnabled(False)

    def _show_current(self, item: QListWidgetItem | None, _previous: QListWidgetItem | None = None) -> None:
        entry = self.entries.get(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None
        self.delete_button.setEnabled(entry is not None)
        if entry is None:
            self.detail.clear()
            return
        when = datetime.datetime.fromtimestamp(entry.created_at).strftime("%Y-%m-%d %H:%M")
        score = f", score {entry.score:g}" if entry.score is not None else ""
        self.detail.setPlainText(
            f"{entry.title}\n{entry.namespace} · {entry.task_type} · {when}{score}\n\n{entry.content}"
        )

    def _delete_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.deleteRequested.emit(int(item.data(Qt.ItemDataRole.UserRole)))
