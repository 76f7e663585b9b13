"""The read-only code viewer: line numbers, Pygments colours, a plain message for files it will not show."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QStackedWidget, QTextEdit, QWidget

from ide.app.background import run_blocking, spawn
from ide.app.widgets.controls import edge_to_edge
from ide.app.workspace.files import FileContent, read_for_viewer
from ide.app.workspace.highlight import PygmentsHighlighter, lex_lines

if TYPE_CHECKING:
    import asyncio

CURRENT_LINE_COLOUR = QColor("#fff6d5")


class _LineNumberArea(QWidget):
    def __init__(self, editor: CodeEditor) -> None:
        super().__init__(editor)
        self._editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self._editor.line_number_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self._editor.paint_line_numbers(event)


RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
"""A Markdown horizontal rule (``---``, ``***``, ``___``): language servers put one between a hover's
signature and its documentation."""
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def plain_hover(markdown: str) -> str:
    """A language server's Markdown hover as the plain text a tooltip shows: code fences dropped (their
    code kept), a horizontal rule as a blank line, backslash escapes undone."""
    lines: list[str] = []
    for line in markdown.splitlines():
        if FENCE.match(line):
            continue
        if RULE.match(line):
            if lines and lines[-1]:
                lines.append("")
            continue
        lines.append(ESCAPED.sub(r"\1", line))
    return "\n".join(lines).strip()


HOVER_PAUSE_MS = 450
"""The mouse rests this long over a word before its type is asked for."""


class CodeEditor(QPlainTextEdit):
    """A read-only monospace text view with a line-number gutter."""

    hoverRequested = Signal(int, int, QPoint)
    """(1-based line, 1-based column, global position) where the mouse rested over text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.viewport().setMouseTracking(True)
        self._hover_at = QPoint()
        self._hover_timer = QTimer(self)
        self._hover_timer.setSingleShot(True)
        self._hover_timer.setInterval(HOVER_PAUSE_MS)
        self._hover_timer.timeout.connect(self._hover)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.0))
        self.setFont(font)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self._gutter = _LineNumberArea(self)
        self.blockCountChanged.connect(self._update_margins)
        self.updateRequest.connect(self._scroll_gutter)
        self._update_margins()

    def line_number_width(self) -> int:
        digits = max(3, len(str(self.blockCount())))
        return 12 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margins(self) -> None:
        self.setViewportMargins(self.line_number_width(), 0, 0, 0)

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        rect = self.contentsRect()
        self._gutter.setGeometry(QRect(rect.left(), rect.top(), self.line_number_width(), rect.height()))

    def paint_line_numbers(self, event: QPaintEvent) -> None:
        """Paint only the numbers of the blocks inside the exposed rectangle."""
        painter = QPainter(self._gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.alternateBase())
        painter.setPen(palette.placeholderText().color())
        block = self.firstVisibleBlock()
        number = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        width = self._gutter.width() - 6
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                painter.drawText(0, top, width, height, Qt.AlignmentFlag.AlignRight, str(number + 1))
            block = block.next()
            top = bottom
            number += 1
        painter.end()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        super().mouseMoveEvent(event)
        self._hover_at = event.position().toPoint()
        self._hover_timer.start()

    def leaveEvent(self, event: QEvent) -> None:
        self._hover_timer.stop()
        super().leaveEvent(event)

    def _hover(self) -> None:
        cursor = self.cursorForPosition(self._hover_at)
        text = cursor.block().text()
        column = cursor.positionInBlock()
        if column < len(text) and (text[column].isalnum() or text[column] == "_"):
            global_pos = self.viewport().mapToGlobal(self._hover_at)
            self.hoverRequested.emit(cursor.blockNumber() + 1, column + 1, global_pos)

    def position(self) -> tuple[int, int]:
        """(1-based line, 1-based column) of the text cursor."""
        cursor = self.textCursor()
        return cursor.blockNumber() + 1, cursor.positionInBlock() + 1

    def go_to(self, line: int, column: int) -> None:
        """Move the cursor to ``line``:``column`` (1-based), scrolled into view and marked."""
        self.go_to_line(line)
        cursor = self.textCursor()
        cursor.movePosition(
            QTextCursor.MoveOperation.Right, QTextCursor.MoveMode.MoveAnchor, max(column - 1, 0)
        )
        self.setTextCursor(cursor)

    def go_to_line(self, line: int) -> None:
        """Scroll ``line`` (1-based) into the middle of the view and mark it."""
        block = self.document().findBlockByNumber(max(0, line - 1))
        cursor = QTextCursor(block)
        self.setTextCursor(cursor)
        self.centerCursor()
        selection = QTextEdit.ExtraSelection()
        selection.format.setBackground(CURRENT_LINE_COLOUR)
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        selection.cursor = cursor
        self.setExtraSelections([selection])


class CodeViewer(QWidget):
    """Shows one workspace file at a time. Interface: :meth:`show_file`, :attr:`fileShown`."""

    fileShown = Signal(str)
    """Emitted with the absolute path once a file's text (or its message) is on screen."""
    highlighted = Signal(str)
    """Emitted with the absolute path once the file's colours are applied (or it turned out to have none)."""

    def __init__(self, max_file_bytes: Callable[[], int], parent: QWidget | None = None) -> None:
        """``max_file_bytes`` gives ``workspace.max_file_bytes`` at each file shown (the window reads its
        settings after the first frame)."""
        super().__init__(parent)
        self.setObjectName("codeViewer")
        self._max_file_bytes = max_file_bytes
        self._workspace: Path | None = None
        self._load: asyncio.Task[None] | None = None
        self._path: Path | None = None

        self._title = QLabel("No file open")
        self._title.setObjectName("viewerTitle")
        self._title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.editor = CodeEditor()
        self._highlighter = PygmentsHighlighter(self.editor.document())
        self._highlighter.finished.connect(self._on_highlighted)
        self._message = QLabel("Select a file in the Workspace panel to view it.")
        self._message.setObjectName("viewerMessage")
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        self._pages = QStackedWidget()
        self._pages.addWidget(self.editor)
        self._pages.addWidget(self._message)
        self._pages.setCurrentWidget(self._message)

        layout = edge_to_edge(self)
        layout.addWidget(self._title)
        layout.addWidget(self._pages, 1)

    def set_workspace(self, root: Path) -> None:
        """Paths in the title are shown relative to ``root``."""
        self._workspace = root

    @property
    def current_path(self) -> Path | None:
        """The file on screen, if any."""
        return self._path

    @property
    def message(self) -> str | None:
        """The message shown instead of text, or None when text is shown."""
        return self._message.text() if self._pages.currentWidget() is self._message else None

    def show_file(self, path: Path, line: int | None = None) -> None:
        """Load ``path`` off the UI thread and show it, scrolled to ``line`` (1-based) if given."""
        if self._load is not None and not self._load.done():
            self._load.cancel()
        self._load = spawn(self._show(path, line), name=f"view {path.name}")

    async def _show(self, path: Path, line: int | None) -> None:
        content = await run_blocking(read_for_viewer, path, self._max_file_bytes())
        # The window may have closed (and its widgets been deleted) while the worker ran.
        if not shiboken6.isValid(self.editor):
            return
        self._path = path
        self._title.setText(self._display_name(path))
        self._title.setToolTip(str(path))
        if content.text is None:
            self._show_message(content)
            return
        self._highlighter.set_spans(None)
        self.editor.setPlainText(content.text)
        self._pages.setCurrentWidget(self.editor)
        if line:
            self.editor.go_to_line(line)
        else:
            self.editor.setExtraSelections([])
        self.fileShown.emit(str(path))
        spans = await run_blocking(lex_lines, path.name, content.text)
        if not shiboken6.isValid(self.editor) or self._path != path:
            return
        if spans is None:
            self.highlighted.emit(str(path))
        else:
            self._highlighter.set_spans(spans, self.editor.firstVisibleBlock().blockNumber())

    def _on_highlighted(self) -> None:
        if self._path is not None:
            self.highlighted.emit(str(self._path))

    def _show_message(self, content: FileContent) -> None:
        self._highlighter.set_spans(None)
        self.editor.clear()
        self._message.setText(content.message or "")
        self._pages.setCurrentWidget(self._message)
        self.fileShown.emit(str(content.path))

    def _display_name(self, path: Path) -> str:
        if self._workspace is not None:
            with contextlib.suppress(ValueError):
                return path.relative_to(self._workspace).as_posix()
        return str(path)
