"""Syntax highlighting: Pygments lexes a file off the UI thread, a QSyntaxHighlighter paints the spans."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextBlock, QTextCharFormat, QTextDocument

if TYPE_CHECKING:
    # Pygments is imported by the first file lexed (in a worker), never before the window's first frame.
    from pygments.lexer import Lexer
    from pygments.token import _TokenType

STYLE = "friendly"

HIGHLIGHT_MAX_CHARS = 400_000
"""Bigger files are shown plain: lexing and painting them would cost more than the colour is worth."""

Span = tuple[int, int, "_TokenType"]
"""(start, length) in UTF-16 code units within one line, and the Pygments token type."""


def lexer_for(filename: str) -> Lexer:
    """The Pygments lexer for a file name; plain text when Pygments does not know the extension."""
    from pygments.lexers import get_lexer_for_filename
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    try:
        # Keep every newline: spans are matched to the viewer's lines by index.
        return get_lexer_for_filename(filename, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def lex_lines(filename: str, text: str) -> list[list[Span]] | None:
    """Per-line token spans of ``text`` (None when the file is too big or has no grammar).

    The whole file is lexed at once so that multi-line strings and comments colour correctly, which a
    line-at-a-time highlighter cannot do. Offsets are UTF-16 units because QTextBlock counts in those.
    """
    from pygments.lexers.special import TextLexer
    from pygments.token import Token

    if len(text) > HIGHLIGHT_MAX_CHARS:
        return None
    lexer = lexer_for(filename)
    if isinstance(lexer, TextLexer):
        return None
    ascii_only = text.isascii()
    lines: list[list[Span]] = [[]]
    column = 0
    for token, value in lexer.get_tokens(text):
        pieces = value.split("\n")
        for index, piece in enumerate(pieces):
            if index:
                lines.append([])
                column = 0
            if not piece:
                continue
            width = len(piece) if ascii_only else len(piece.encode("utf-16-le")) // 2
            if token is not Token.Text and token is not Token.Text.Whitespace:
                lines[-1].append((column, width, token))
            column += width
    return lines


@cache
def format_for(token: _TokenType) -> QTextCharFormat:
    from pygments.styles import get_style_by_name

    style = get_style_by_name(STYLE)
    # A lexer's own token (YAML's Literal.Scalar.Plain) is styled as its nearest standard parent, as
    # Pygments' formatters do; style_for_token raises KeyError for it.
    while not style.styles_token(token) and token.parent is not None:
        token = token.parent
    spec = style.style_for_token(token)
    fmt = QTextCharFormat()
    if spec["color"]:
        fmt.setForeground(QColor("#" + spec["color"]))
    if spec["bold"]:
        fmt.setFontWeight(QFont.Weight.Bold)
    if spec["italic"]:
        fmt.setFontItalic(True)
    return fmt


BLOCKS_PER_STEP = 150
"""Blocks re-highlighted per event-loop turn: about 4 ms here, so typing and scrolling stay smooth."""


class PygmentsHighlighter(QSyntaxHighlighter):
    """Applies precomputed :func:`lex_lines` spans; painting a block is a lookup, never a re-lex.

    New spans are applied a slice of blocks per event-loop turn, starting at the first visible line,
    because a full ``rehighlight()`` of a few thousand lines holds the UI thread for tens of ms.
    """

    finished = Signal()
    """Every block has been painted with the current spans."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._lines: list[list[Span]] = []
        self._cursor: QTextBlock | None = None
        self._remaining = 0
        self._timer = QTimer(self)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._step)

    def set_spans(self, lines: list[list[Span]] | None, first_block: int = 0) -> None:
        """Replace the spans, re-highlighting from block ``first_block`` onwards.

        None forgets them without repainting: call it before replacing the document's text.
        """
        self._lines = lines or []
        if lines is None:
            self._timer.stop()
            self._cursor = None
            return
        document = self.document()
        self._cursor = document.findBlockByNumber(max(0, first_block))
        if not self._cursor.isValid():
            self._cursor = document.firstBlock()
        self._remaining = document.blockCount()
        self._timer.start()

    def _step(self) -> None:
        block = self._cursor
        document = self.document()
        for _ in range(BLOCKS_PER_STEP):
            if block is None or self._remaining <= 0:
                break
            self.rehighlightBlock(block)
            self._remaining -= 1
            block = block.next()
            if not block.isValid():
                block = document.firstBlock()
        self._cursor = block
        if self._remaining <= 0:
            self._timer.stop()
            self.finished.emit()

    def highlightBlock(self, text: str) -> None:
        number = self.currentBlock().blockNumber()
        if number >= len(self._lines):
            return
        for start, length, token in self._lines[number]:
            self.setFormat(start, length, format_for(token))
