"""Ctrl+T symbol search over the backend's code index, and the index's progress in the status bar."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from ide.protocol.index import IndexStatus, SymbolSearchResult
    from ide.protocol.lsp import LspLocation


TYPING_PAUSE_MS = 60
"""Keystrokes are coalesced: a query goes out once typing pauses this long."""
FAILURE_CHARS = 80
"""How much of an indexing failure the status bar shows; the tooltip has all of it."""


class SymbolSearch(QDialog):
    """A query line over a result list. Interface: :attr:`queryChanged` out, :meth:`set_results` in,
    :attr:`symbolChosen` when the user picks a hit (Enter or double-click)."""

    queryChanged = Signal(str)
    symbolChosen = Signal(str, int)
    """(absolute path, 1-based line)."""

    def __init__(self, workspace: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("symbolSearch")
        self.setWindowTitle("Go to Symbol")
        self.workspace = workspace
        self.edit = QLineEdit()
        self.edit.setObjectName("symbolQuery")
        self.edit.setPlaceholderText("Symbol name, part of it, or initials (fuzzy)")
        self.list = QListWidget()
        self.list.setObjectName("symbolResults")
        self.list.setUniformItemSizes(True)
        self.state = QLabel()
        self.state.setObjectName("symbolState")
        layout = QVBoxLayout(self)
        layout.addWidget(self.edit)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.state)
        self.resize(640, 420)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(TYPING_PAUSE_MS)
        self._timer.timeout.connect(self._send)
        self.edit.textChanged.connect(lambda _text: self._timer.start())
        self.list.itemActivated.connect(self._choose)
        self.edit.installEventFilter(self)

    def open_search(self) -> None:
        """Show the dialog with the last query selected, ready to type over."""
        self.show()
        self.raise_()
        self.activateWindow()
        self.edit.setFocus()
        self.edit.selectAll()

    def _send(self) -> None:
        query = self.edit.text().strip()
        if query:
            self.queryChanged.emit(query)
        else:
            self.list.clear()
            self.state.setText("")

    def set_results(self, query: str, result: SymbolSearchResult) -> None:
        """Show the hits of ``query`` unless the user has typed on since (a stale answer)."""
        if query != self.edit.text().strip():
            return
        self.list.clear()
        for hit in result.hits:
            try:
                where = Path(hit.path).relative_to(self.workspace).as_posix()
            except ValueError:
                where = hit.path
            row = f"{hit.name}    {hit.kind} · {where}:{hit.line}"
            item = QListWidgetItem(f"{row}    {hit.signature}" if hit.signature else row)
            item.setToolTip(hit.signature or hit.qualname)
            item.setData(Qt.ItemDataRole.UserRole, (hit.path, hit.line))
            self.list.addItem(item)
        if result.hits:
            self.list.setCurrentRow(0)
        count = len(result.hits)
        notes = [f"{count} symbol{'' if count == 1 else 's'}" if count else f"no symbol matches {query!r}"]
        if result.state != "ready":
            notes.append(result.message or "the index is still being built")
        self.state.setText(" — ".join(notes))

    def show_error(self, message: str) -> None:
        self.list.clear()
        self.state.setText(message)

    def eventFilter(self, watched: object, event: object) -> bool:
        # Up/Down move in the list and Enter opens, while the focus stays in the query line.
        if watched is self.edit and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            key = event.key()
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up) and self.list.count():
                step = 1 if key == Qt.Key.Key_Down else -1
                self.list.setCurrentRow(max(0, min(self.list.count() - 1, self.list.currentRow() + step)))
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                if self._timer.isActive():  # typed and pressed Enter at once: search first
                    self._timer.stop()
                    self._send()
                    return True
                item = self.list.currentItem()
                if item is not None:
                    self._choose(item)
                return True
        return super().eventFilter(watched, event)  # type: ignore[arg-type]

    def _choose(self, item: QListWidgetItem) -> None:
        path, line = item.data(Qt.ItemDataRole.UserRole)
        self.hide()
        self.symbolChosen.emit(path, line)


class IndexProgress(QWidget):
    """The code index's state in the status bar: a progress bar while indexing, then a short summary."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("indexProgress")
        self.label = QLabel()
        self.label.setObjectName("indexLabel")
        self.bar = QProgressBar()
        self.bar.setObjectName("indexBar")
        self.bar.setMaximumWidth(140)
        self.bar.setMaximumHeight(14)
        self.bar.setTextVisible(False)
        self.bar.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        self.status: IndexStatus | None = None

    def set_status(self, status: IndexStatus) -> None:
        self.status = status
        if status.state == "indexing":
            self.bar.setVisible(status.files_total > 0)
            self.bar.setRange(0, max(status.files_total, 1))
            self.bar.setValue(status.files_done)
            done = f"{status.files_done:,} / {status.files_total:,} files" if status.files_total else ""
            self.label.setText(f"Indexing {done}".strip() if done else "Indexing: scanning the workspace")
            self.label.setToolTip(status.message or "")
        elif status.state == "ready":
            self.bar.hide()
            of = f" of {status.scanned:,}" if status.scanned else ""
            files, symbols = status.files, status.symbols
            self.label.setText(
                f"Index: {files:,}{of} file{'' if (status.scanned or files) == 1 else 's'} · "
                f"{symbols:,} symbol{'' if symbols == 1 else 's'}"
            )
            counts = status.counts or f"{status.skipped:,} skipped · {status.failed:,} with errors"
            self.label.setToolTip(
                f"{counts}\n{status.references:,} references · last full pass {status.seconds:.1f} s\n"
                "Files: the workspace's files less .gitignore'd, workspace.exclude and workspace.secrets ones"
                + (f"\n{status.message}" if status.message else "")
            )
        else:
            self.show_failure(status.message or "the index could not be built")

    def show_failure(self, message: str) -> None:
        """Why there is no index: the start of ``message`` on the bar, all of it as the tooltip."""
        self.bar.hide()
        short = message if len(message) <= FAILURE_CHARS else message[: FAILURE_CHARS - 1] + "…"
        self.label.setText(f"Index failed: {short}")
        self.label.setToolTip(message)


class LocationPicker(QDialog):
    """A list of places (Shift+F12 references, or several definitions): Enter or double-click opens one.
    Interface: :meth:`show_locations`, :attr:`locationChosen`."""

    locationChosen = Signal(str, int, int)
    """(absolute path, 1-based line, 1-based column)."""

    def __init__(self, workspace: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("locationPicker")
        self.workspace = workspace
        self.title = QLabel()
        self.list = QListWidget()
        self.list.setObjectName("locationList")
        self.list.setUniformItemSizes(True)
        self.list.itemActivated.connect(self._choose)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.list, 1)
        self.resize(720, 360)

    def show_locations(self, title: str, locations: list[LspLocation], note: str = "") -> None:
        """Show ``locations`` (replacing what the list showed, its selected row kept where it can be)."""
        row = self.list.currentRow() if self.isVisible() else 0
        self.setWindowTitle(title)
        self.title.setText(f"{title}: {len(locations)}" + (f" — {note}" if note else ""))
        self.list.clear()
        for location in locations:
            try:
                where = Path(location.path).relative_to(self.workspace).as_posix()
            except ValueError:
                where = location.path
            item = QListWidgetItem(f"{where}:{location.line}:{location.column}    {location.text}")
            item.setData(Qt.ItemDataRole.UserRole, (location.path, location.line, location.column))
            self.list.addItem(item)
        if locations:
            self.list.setCurrentRow(min(max(row, 0), len(locations) - 1))
        self.show()
        self.raise_()
        self.list.setFocus()

    def _choose(self, item: QListWidgetItem) -> None:
        path, line, column = item.data(Qt.ItemDataRole.UserRole)
        self.hide()
        self.locationChosen.emit(path, line, column)
