"""The Review pane's right side: one file's diff, unified or side by side, or a message, or a conflict's
merge. Only the file shown is rendered, into one text document per column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QStackedWidget, QWidget

from ide.app.review.diff_editor import DiffEditor, lex_rows
from ide.app.review.diffs import side_by_side_rows, unified_rows
from ide.app.workspace.viewer import CodeEditor

if TYPE_CHECKING:
    from ide.protocol.review import Decision, FileChangeView, HunkView


class DiffView(QStackedWidget):
    """The pages: the unified diff, the side-by-side pair (scrolled together), a message, a merge."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.side_by_side = False
        self.current_hunk = -1
        self.unified = DiffEditor("both")
        self.left = DiffEditor("old")
        self.right = DiffEditor("new")
        self.left.verticalScrollBar().valueChanged.connect(self.right.verticalScrollBar().setValue)
        self.right.verticalScrollBar().valueChanged.connect(self.left.verticalScrollBar().setValue)
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.left)
        self.split.addWidget(self.right)
        self.message = QLabel("Select a file to see its changes.")
        self.message.setObjectName("viewerMessage")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # paths and the backend's messages
        self.merged_view = CodeEditor()
        for page in (self.unified, self.split, self.message, self.merged_view):
            self.addWidget(page)
        self.setCurrentWidget(self.message)

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.setCurrentWidget(self.message)

    def show_merged(self, text: str) -> None:
        """A conflict's three-way merge, with its markers."""
        self.merged_view.setPlainText(text)
        self.setCurrentWidget(self.merged_view)

    def show_file(
        self,
        file: FileChangeView,
        header: Callable[[HunkView], str],
        decisions: list[Decision],
        current_hunk: int,
    ) -> None:
        """Render ``file`` (its hunks' headers from ``header``, coloured by ``decisions``) unified or side
        by side, keeping the scroll position unless hunk ``current_hunk`` would be off screen."""
        self.current_hunk = current_hunk
        rows = unified_rows(file, header)
        name = Path(file.path).name
        if self.side_by_side:
            left, right = side_by_side_rows(rows)
            keep = self.left.verticalScrollBar().value() if self.left.rows else 0
            for editor, column in ((self.left, left), (self.right, right)):
                editor.decisions = decisions
                editor.current_hunk = current_hunk
                editor.set_rows(column, lex_rows(name, column, prefixed=False), 0)
            self.setCurrentWidget(self.split)
            self._scroll_to_hunk(self.left, keep)
        else:
            keep = self.unified.verticalScrollBar().value()
            self.unified.decisions = decisions
            self.unified.current_hunk = current_hunk
            self.unified.set_rows(rows, lex_rows(name, rows, prefixed=True), 1)
            self.setCurrentWidget(self.unified)
            self._scroll_to_hunk(self.unified, keep)

    def mark(self, current_hunk: int) -> None:
        """Move the current-hunk bar to ``current_hunk`` of the file shown, scrolling to it if needed."""
        self.current_hunk = current_hunk
        for editor in (self.unified, self.left, self.right):
            editor.current_hunk = current_hunk
            editor.viewport().update()
        editor = self.left if self.side_by_side else self.unified
        self._scroll_to_hunk(editor, editor.verticalScrollBar().value())

    def _scroll_to_hunk(self, editor: DiffEditor, keep: int) -> None:
        first = editor.first_block_of(self.current_hunk)
        bar = editor.verticalScrollBar()
        last = first + sum(1 for row in editor.rows if row.hunk == self.current_hunk)
        visible = max(1, editor.viewport().height() // max(1, editor.fontMetrics().height()))
        # Keep the scroll position across re-renders unless the current hunk would be off screen.
        if keep <= first and last <= keep + visible:
            bar.setValue(keep)
        else:
            editor.scroll_to_block(first)
