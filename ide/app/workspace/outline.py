"""The Outline dock: the definitions of the file in the viewer, from the backend's code index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from ide.protocol.index import OutlineResult


KIND_MARKS = {
    "class": "C",
    "interface": "I",
    "struct": "S",
    "trait": "T",
    "enum": "E",
    "union": "U",
    "function": "ƒ",
    "method": "m",
    "constant": "K",
    "type": "τ",
    "namespace": "N",
    "module": "M",
}


class OutlinePanel(QWidget):
    """A tree of one file's definitions. Interface: :meth:`set_outline`, :meth:`show_message`,
    :attr:`lineActivated`."""

    lineActivated = Signal(str, int)
    """(absolute path, 1-based line) of the definition the user clicked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("outlinePanel")
        self.path: str | None = None
        self.tree = QTreeWidget()
        self.tree.setObjectName("outlineTree")
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.itemActivated.connect(self._activate)
        self.tree.itemClicked.connect(self._activate)
        self.message = QLabel("Open a file to see its outline.")
        self.message.setObjectName("outlineMessage")
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.message)
        layout.addWidget(self.tree, 1)

    def show_message(self, text: str) -> None:
        """Say why there is no outline (indexing, not indexed, no index), keeping the last path."""
        self.tree.clear()
        self.message.setText(text)
        self.message.show()

    def set_outline(self, result: OutlineResult) -> None:
        """Show ``result``; nesting follows each symbol's depth."""
        self.path = result.path
        self.tree.clear()
        parents: list[QTreeWidgetItem] = []
        for symbol in result.symbols:
            del parents[symbol.depth :]
            item = QTreeWidgetItem([f"{KIND_MARKS.get(symbol.kind, '·')}  {symbol.name}"])
            item.setData(0, Qt.ItemDataRole.UserRole, symbol.line)
            item.setToolTip(
                0, "\n".join(t for t in (symbol.signature, symbol.doc, f"line {symbol.line}") if t)
            )
            if parents:
                parents[-1].addChild(item)
            else:
                self.tree.addTopLevelItem(item)
            parents.append(item)
        self.tree.expandAll()
        if result.symbols:
            self.message.hide()
        else:
            self.show_message(result.message or "No definitions in this file.")

    def items(self) -> list[QTreeWidgetItem]:
        """Every row, depth first (for tests and keyboard navigation)."""
        found: list[QTreeWidgetItem] = []

        def walk(item: QTreeWidgetItem) -> None:
            found.append(item)
            for index in range(item.childCount()):
                walk(item.child(index))

        for index in range(self.tree.topLevelItemCount()):
            walk(self.tree.topLevelItem(index))
        return found

    def _activate(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        line = item.data(0, Qt.ItemDataRole.UserRole)
        if self.path is not None and isinstance(line, int):
            self.lineActivated.emit(self.path, line)
