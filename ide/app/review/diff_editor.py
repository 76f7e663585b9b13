"""One read-only column of a diff: row colours, line numbers, syntax and changed-word highlighting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QRectF,
    Qt,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QPainter,
    QPaintEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QWidget,
)

from ide.app.review.diffs import Row, code_of
from ide.app.workspace.highlight import Span, format_for, lex_lines
from ide.app.workspace.viewer import CodeEditor

if TYPE_CHECKING:
    from ide.protocol.review import Decision

LEX_MAX_CHARS = 60_000
"""A file's diff longer than this is shown without syntax colours: lexing it would hold the UI thread."""

ROW_COLOURS: dict[str, QColor] = {
    "hunk": QColor("#eef2fb"),
    "del": QColor("#fdecec"),
    "add": QColor("#e9f7ee"),
    "pad": QColor("#f3f4f6"),
    "note": QColor("#fafafa"),
}
HEADER_COLOURS: dict[str, QColor] = {
    "pending": QColor("#eef2fb"),
    "accepted": QColor("#d9f2e1"),
    "rejected": QColor("#ececec"),
}
REJECTED_ROW = QColor("#f5f5f5")
INTRALINE_COLOURS = {"del": QColor("#f6bdbd"), "add": QColor("#a9e4bd")}
CURRENT_HUNK_BAR = QColor("#3b6fd4")


class DiffHighlighter(QSyntaxHighlighter):
    """Colours one diff document: syntax spans per row, changed words on paired lines, bold headers."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.rows: list[Row] = []
        self.spans: list[list[Span]] = []
        self.shift = 0
        self._header = QTextCharFormat()
        self._header.setForeground(QColor("#3c4a6b"))
        self._header.setFontWeight(QFont.Weight.DemiBold)

    def highlightBlock(self, text: str) -> None:
        number = self.currentBlock().blockNumber()
        if number >= len(self.rows):
            return
        row = self.rows[number]
        if row.kind == "hunk":
            self.setFormat(0, len(text), self._header)
            return
        if number < len(self.spans):
            for start, length, token in self.spans[number]:
                self.setFormat(start + self.shift, length, format_for(token))
        colour = INTRALINE_COLOURS.get(row.kind)
        if colour is None or not row.intraline:
            return
        for start, length in _utf16_spans(row.text, row.intraline):
            for position in range(start, start + length):
                fmt = self.format(position)
                fmt.setBackground(colour)
                self.setFormat(position, 1, fmt)


def _utf16_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if text.isascii():
        return spans

    def units(end: int) -> int:
        return len(text[:end].encode("utf-16-le")) // 2

    return [(units(start), units(start + length) - units(start)) for start, length in spans]


class DiffEditor(CodeEditor):
    """A read-only diff column: row backgrounds and line numbers painted for visible rows only."""

    def __init__(self, numbers: str = "both", parent: QWidget | None = None) -> None:
        self.rows: list[Row] = []
        self.decisions: list[Decision] = []
        self.current_hunk = -1
        self._numbers = numbers
        super().__init__(parent)
        self.setUndoRedoEnabled(False)
        self.highlighter = DiffHighlighter(self.document())

    def set_rows(self, rows: list[Row], spans: list[list[Span]] | None, shift: int) -> None:
        """Show ``rows`` (the highlighter paints each block as the document takes the text)."""
        self.rows = rows
        self.highlighter.rows = rows
        self.highlighter.spans = spans or []
        self.highlighter.shift = shift
        self.setPlainText("\n".join(row.text for row in rows))
        self._update_margins()

    def first_block_of(self, hunk: int) -> int:
        for number, row in enumerate(self.rows):
            if row.hunk == hunk:
                return number
        return 0

    def line_number_width(self) -> int:
        digits = max(3, len(str(max((row.new_no or row.old_no or 0 for row in self.rows), default=0))))
        columns = 2 if self._numbers == "both" else 1
        return 10 + columns * (self.fontMetrics().horizontalAdvance("9") * digits + 6)

    def paint_line_numbers(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.alternateBase())
        painter.setPen(palette.placeholderText().color())
        width = self._gutter.width() - 6
        half = width // 2
        height = self.fontMetrics().height()
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            number = block.blockNumber()
            if number < len(self.rows) and bottom >= event.rect().top():
                row = self.rows[number]
                right = Qt.AlignmentFlag.AlignRight
                if self._numbers == "both":
                    if row.old_no is not None:
                        painter.drawText(0, top, half, height, right, str(row.old_no))
                    if row.new_no is not None:
                        painter.drawText(half, top, width - half, height, right, str(row.new_no))
                else:
                    line = row.old_no if self._numbers == "old" else row.new_no
                    if line is not None:
                        painter.drawText(0, top, width, height, right, str(line))
            block = block.next()
            top = bottom
        painter.end()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        offset = self.contentOffset()
        width = self.viewport().width()
        block = self.firstVisibleBlock()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > event.rect().bottom():
                break
            number = block.blockNumber()
            if number < len(self.rows):
                row = self.rows[number]
                decision = self.decisions[row.hunk] if 0 <= row.hunk < len(self.decisions) else "pending"
                colour = self._colour(row, decision)
                if colour is not None:
                    painter.fillRect(QRectF(0, geometry.top(), width, geometry.height()), colour)
                if row.hunk == self.current_hunk:
                    painter.fillRect(QRectF(0, geometry.top(), 3, geometry.height()), CURRENT_HUNK_BAR)
            block = block.next()
        painter.end()
        super().paintEvent(event)

    @staticmethod
    def _colour(row: Row, decision: Decision) -> QColor | None:
        if row.kind == "hunk":
            return HEADER_COLOURS[decision]
        if decision == "rejected" and row.kind in ("del", "add"):
            return REJECTED_ROW
        return ROW_COLOURS.get(row.kind)

    def scroll_to_block(self, number: int) -> None:
        block = self.document().findBlockByNumber(number)
        self.setTextCursor(QTextCursor(block))
        # Without wrapping, the scroll bar counts blocks: keep two rows of context above the header.
        self.verticalScrollBar().setValue(max(0, number - 2))


def lex_rows(filename: str, rows: list[Row], *, prefixed: bool) -> list[list[Span]] | None:
    """Syntax spans of the rows' code (None past :data:`LEX_MAX_CHARS`: lexing would hold the UI thread)."""
    code = code_of(rows, prefixed)
    if len(code) > LEX_MAX_CHARS:
        return None
    return lex_lines(filename, code)
