"""The chat's blocks as widgets: Markdown answers, user bubbles, collapsible thoughts and tool calls, plans.

Each view renders one :mod:`ide.app.chat.conversation` block; ``refresh()`` redraws it from the block and
``plain_text()`` gives what a transcript shows of it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QSize, Qt, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QMouseEvent,
    QResizeEvent,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextOption,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ide.app.chat.conversation import NoticeBlock, PlanBlock, TextBlock, ToolBlock
from ide.app.widgets.controls import plain_label

STATUS_GLYPHS = {
    "pending": ("○", "#8a8f98", "pending"),
    "in_progress": ("◐", "#b7791f", "running"),
    "completed": ("✓", "#2f855a", "done"),
    "failed": ("✗", "#c53030", "failed"),
}
PLAN_GLYPHS = {"pending": "○", "in_progress": "◐", "completed": "✓", "failed": "✗"}
PLAN_FAILED = " — failed"
"""ACP plans have no failed status: Arbor's backend sends a failed entry as completed with this suffix."""
CODE_BACKGROUND = QColor("#f1f3f6")
ALT_TEXT = QTextFormat.Property.ImageAltText
PARAGRAPH_SPACING = 10
LIST_ITEM_SPACING = 3


class MarkdownView(QTextBrowser):
    """Read-only Markdown that is exactly as tall as its text, for stacking in a scrolling column.

    The text is a model's: a click on a link only emits ``anchorClicked`` (the chat decides, see
    :mod:`ide.app.chat.links`), never navigates the view, and nothing it names is loaded — no image, style
    sheet
    or background from the network, a ``file:`` URL, a relative path or a ``data:`` URL. Images show as
    their alt text.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("markdownView")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().setDocumentMargin(2)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)

    def set_markdown(self, text: str) -> None:
        self.setMarkdown(text)
        _defuse(self.document())
        _style_markdown(self.document())
        self._fit()

    def loadResource(self, type: int, name: QUrl) -> Any:
        # Not None: for a null answer QTextDocument reads a local file itself (relative names too).
        return QByteArray()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit()

    def _fit(self, *_: Any) -> None:
        document = self.document()
        document.setTextWidth(self.viewport().width())
        height = int(document.size().height() + 0.5) + 2 * self.frameWidth()
        if height != self.height():
            self.setFixedHeight(max(height, self.fontMetrics().height()))

    def wheelEvent(self, event: QWheelEvent) -> None:
        # The view never scrolls itself; hand the wheel to the chat's scroll area.
        event.ignore()


def _block_kind(block: QTextBlock) -> str:
    block_format = block.blockFormat()
    if block_format.hasProperty(QTextFormat.Property.BlockCodeFence) or block_format.hasProperty(
        QTextFormat.Property.BlockCodeLanguage
    ):
        return "code"
    return "list" if block.textList() is not None else "text"


def _style_markdown(document: QTextDocument) -> None:
    """Shade code and space blocks by kind: Qt's Markdown import gives every block the same 6 px."""
    cursor = QTextCursor(document)
    block = document.firstBlock()
    kind = _block_kind(block)
    while block.isValid():
        following = block.next()
        next_kind = _block_kind(following) if following.isValid() else None
        style = QTextBlockFormat()
        style.setTopMargin(0)
        if next_kind is not None and (kind == "text" or kind != next_kind):
            style.setBottomMargin(PARAGRAPH_SPACING)
        else:
            style.setBottomMargin(LIST_ITEM_SPACING if kind == "list" else 0)
        if kind == "code":
            style.setBackground(CODE_BACKGROUND)
        cursor.setPosition(block.position())
        cursor.mergeBlockFormat(style)
        if kind != "code":
            _shade_inline_code(cursor, block)
        block, kind = following, next_kind


def _defuse(document: QTextDocument) -> None:
    """Make a model's Markdown inert: each image becomes its alt text, greyed (never fetched nor read), and
    a hover shows a link's real address, not a title the model wrote (a tooltip is rich text, whose
    ``<img>`` would be read from disk)."""
    import html

    spans: list[tuple[int, int, QTextCharFormat]] = []
    images: list[tuple[int, str, QTextCharFormat]] = []
    block = document.firstBlock()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            source = fragment.charFormat()
            href = source.anchorHref() if source.isAnchor() else ""
            if fragment.isValid() and (source.isImageFormat() or href or source.toolTip()):
                shown = QTextCharFormat()
                shown.setToolTip(f"<p>{html.escape(href)}</p>" if href else "")
                if source.isImageFormat():
                    alt = str(source.property(ALT_TEXT) or "")
                    shown.setForeground(QColor("#7a808a"))
                    if href:
                        shown.setAnchor(True)
                        shown.setAnchorHref(href)
                    images += [(fragment.position() + i, alt, shown) for i in range(fragment.length())]
                else:
                    spans.append((fragment.position(), fragment.position() + fragment.length(), shown))
            iterator += 1
        block = block.next()
    cursor = QTextCursor(document)
    for start, end, shown in spans:
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(shown)
    for position, alt, shown in reversed(images):  # from the end: earlier positions stay valid
        cursor.setPosition(position)
        cursor.setPosition(position + 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(f"[image: {alt}]" if alt else "[image]", shown)


def _shade_inline_code(cursor: QTextCursor, block: QTextBlock) -> None:
    iterator = block.begin()
    while not iterator.atEnd():
        fragment = iterator.fragment()
        if fragment.isValid() and fragment.charFormat().fontFixedPitch():
            inline = QTextCharFormat()
            inline.setBackground(CODE_BACKGROUND)
            cursor.setPosition(fragment.position())
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(inline)
        iterator += 1


class Collapsible(QFrame):
    """A header that toggles a body. The header is rich text; the body is built by the owner."""

    toggled = Signal(bool)

    def __init__(self, body: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._arrow = QToolButton()
        self._arrow.setObjectName("collapseArrow")
        self._arrow.setArrowType(Qt.ArrowType.RightArrow)
        self._arrow.setAutoRaise(True)
        self._arrow.setIconSize(QSize(10, 10))
        self._arrow.clicked.connect(self.toggle)
        self.header = QLabel()
        self.header.setObjectName("collapseHeader")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.header.installEventFilter(self)
        self.body = body
        self.body.setVisible(False)

        top = QHBoxLayout()
        top.setContentsMargins(2, 0, 4, 0)
        top.setSpacing(2)
        top.addWidget(self._arrow)
        top.addWidget(self.header, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.body)

    @property
    def expanded(self) -> bool:
        return not self.body.isHidden()

    def set_expanded(self, expanded: bool) -> None:
        self.body.setVisible(expanded)
        self._arrow.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.toggled.emit(expanded)

    def toggle(self) -> None:
        self.set_expanded(not self.expanded)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.header and event.type() == QEvent.Type.MouseButtonRelease:
            assert isinstance(event, QMouseEvent)
            if event.button() == Qt.MouseButton.LeftButton:
                self.toggle()
                return True
        return super().eventFilter(watched, event)


def _wrapping_label(name: str, *, mono: bool = False) -> QLabel:
    """A selectable plain-text label that wraps to the chat's width instead of widening it."""
    label = plain_label(name, mono=mono)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


class UserMessageView(QFrame):
    """A prompt the user sent, as a tinted bubble of plain text."""

    def __init__(self, block: TextBlock) -> None:
        super().__init__()
        self.setObjectName("userMessage")
        self.block = block
        self.label = _wrapping_label("userText")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addWidget(self.label)

    def refresh(self) -> None:
        self.label.setText(self.block.text.strip())

    def plain_text(self) -> str:
        return self.label.text()


class AssistantMessageView(MarkdownView):
    """The agent's answer, rendered as Markdown."""

    def __init__(self, block: TextBlock) -> None:
        super().__init__()
        self.setObjectName("assistantMessage")
        self.block = block

    def refresh(self) -> None:
        self.set_markdown(self.block.text)

    def plain_text(self) -> str:
        return self.toPlainText()


class ThoughtView(Collapsible):
    """The agent's reasoning: collapsed to its first line until opened."""

    def __init__(self, block: TextBlock) -> None:
        self.text = _wrapping_label("thoughtText")
        super().__init__(self.text)
        self.setObjectName("thought")
        self.block = block
        self.toggled.connect(self._update_header)

    def refresh(self) -> None:
        self.text.setText(self.block.text.strip())
        self._update_header()

    def _update_header(self, *_: Any) -> None:
        # The first line previews a collapsed thought; expanded, the body says it all.
        import html

        first = "" if self.expanded else (self.block.text.strip().splitlines() or [""])[0]
        preview = html.escape(first[:120])
        self.header.setText(f"<b>Thought</b> <span style='color:#8a8f98'>{preview}</span>")

    def plain_text(self) -> str:
        return self.text.text()


class ToolCallView(Collapsible):
    """One tool call: status, title and kind; opened, its locations (links), input and output."""

    locationActivated = Signal(str, int)

    def __init__(self, block: ToolBlock, workspace: Path | None = None) -> None:
        body = QWidget()
        body.setObjectName("toolBody")
        self.locations = QLabel()
        self.locations.setObjectName("toolLocations")
        self.locations.setTextFormat(Qt.TextFormat.RichText)
        self.locations.setWordWrap(True)
        self.locations.linkActivated.connect(self._open_location)
        self.input_caption = QLabel("Input")
        self.input_caption.setObjectName("caption")
        self.input = _wrapping_label("preText", mono=True)
        self.output_caption = QLabel("Output")
        self.output_caption.setObjectName("caption")
        self.output = _wrapping_label("preText", mono=True)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(24, 0, 6, 6)
        layout.setSpacing(3)
        for widget in (self.locations, self.input_caption, self.input, self.output_caption, self.output):
            layout.addWidget(widget)
        super().__init__(body)
        self.setObjectName("toolCall")
        self.block = block
        self._workspace = workspace

    def refresh(self) -> None:
        import html

        block = self.block
        glyph, colour, word = STATUS_GLYPHS.get(block.status, ("•", "#8a8f98", block.status))
        self.header.setText(
            f"<span style='color:{colour}'>{glyph}</span> <b>{html.escape(block.title)}</b>"
            f" <span style='color:#8a8f98'>· {html.escape(block.kind)} · {word}</span>"
        )
        self.header.setToolTip(f"{block.title}\n{block.kind}, {word}")
        links = [
            f"<a href='{index}'>{html.escape(self._short(loc.path))}{f':{loc.line}' if loc.line else ''}</a>"
            for index, loc in enumerate(block.locations)
        ]
        self.locations.setText(" · ".join(links))
        self.locations.setVisible(bool(links))
        input_text, output_text = block.input_text, block.output_text
        self.input.setText(input_text)
        self.input_caption.setVisible(bool(input_text))
        self.input.setVisible(bool(input_text))
        self.output.setText(output_text)
        self.output_caption.setVisible(bool(output_text))
        self.output.setVisible(bool(output_text))

    def plain_text(self) -> str:
        return f"{self.block.title} [{self.block.status}]"

    def _short(self, path: str) -> str:
        """Workspace files by their relative path; anything else as sent."""
        if self._workspace is not None:
            with contextlib.suppress(ValueError):
                return Path(path).relative_to(self._workspace).as_posix()
        return path

    def _open_location(self, href: str) -> None:
        location = self.block.locations[int(href)]
        self.locationActivated.emit(location.path, location.line or 0)


class PlanView(QFrame):
    """The agent's current plan with a status mark per entry."""

    def __init__(self, block: PlanBlock) -> None:
        super().__init__()
        self.setObjectName("plan")
        self.block = block
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addWidget(self.label)

    def refresh(self) -> None:
        import html

        rows = "".join(
            f"<div>{PLAN_GLYPHS.get(plan_status(item.status, item.content), '•')} "
            f"{html.escape(item.content)}</div>"
            for item in self.block.items
        )
        self.label.setText(f"<b>Plan</b>{rows}")

    def plain_text(self) -> str:
        return self.label.text()


def plan_status(status: str, content: str) -> str:
    """The status a plan entry is shown with: ``failed`` for a completed entry Arbor marked failed."""
    return "failed" if status == "completed" and content.endswith(PLAN_FAILED) else status


BlockView = UserMessageView | AssistantMessageView | ThoughtView | ToolCallView | PlanView


NOTICE_STYLES = {
    "error": "QFrame#chatNotice { background: #fdecec; border: 1px solid #f3c1c1; border-radius: 6px; }",
    "stopped": "QFrame#chatNotice { border-top: 1px solid #d5d8de; }",
    "review": "QFrame#chatNotice { background: #eef4fb; border: 1px solid #c9dbef; border-radius: 6px; }",
}
TITLE_STYLES = {"error": "color: #9b2c2c; font-weight: 600;", "review": "color: #24507f; font-weight: 600;"}


class NoticeView(QFrame):
    """A turn's end said in the chat: the error and its fix in a red box, or a muted "Stopped" rule; or
    a note of the review's on what a foreign agent's shadow holds, in a blue box."""

    def __init__(self, block: NoticeBlock) -> None:
        super().__init__()
        self.setObjectName("chatNotice")
        self.setProperty("kind", block.kind)
        self.setStyleSheet(NOTICE_STYLES.get(block.kind, ""))
        self.block = block
        self.title = _wrapping_label("noticeTitle")
        self.detail = _wrapping_label("noticeDetail")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.detail)
        if block.kind == "stopped":
            self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.title.setStyleSheet("color: #7a808a;")

    def refresh(self) -> None:
        mark = {"error": "✗ ", "review": "◆ "}.get(self.block.kind, "■ ")
        self.title.setText(mark + self.block.title)
        if self.block.kind in TITLE_STYLES:
            self.title.setStyleSheet(TITLE_STYLES[self.block.kind])
        self.detail.setText(self.block.detail)
        self.detail.setVisible(bool(self.block.detail))

    def plain_text(self) -> str:
        text = self.title.text()
        return f"{text}\n{self.detail.text()}" if self.block.detail else text
