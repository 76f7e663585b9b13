"""Links in an agent's answer: which ones Arbor opens, and the dialog that shows where one goes and what its
address carries before anything opens.

A model's answer can be steered by text it read (a file, a web page, a tool's output), and a link it writes
can send data out in its address the moment it is clicked. So only http and https links open, and only
after the user has seen the whole address, its host in ASCII (punycode for international names); every
other scheme (``file:``, ``javascript:``, ``data:``, relative paths) never opens.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, QUrl, QUrlQuery, Signal
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

WEB_SCHEMES = frozenset({"http", "https"})
SHOWN_HREF_CHARS = 80
"""A refused link's address in the status message is cut to this many characters (the dialog never cuts)."""
ADDRESS_MAX_LINES = 8
DATA_MAX_LINES = 8
"""Taller text scrolls in its box."""
Encoded = QUrl.ComponentFormattingOption.FullyEncoded
Decoded = QUrl.ComponentFormattingOption.FullyDecoded


@dataclass(frozen=True)
class WebLink:
    """An http(s) link as Arbor would open it."""

    url: str
    """The whole address, fully encoded ASCII: what Open opens and Copy copies, exactly as shown."""
    scheme: str
    host: str
    """In ASCII: an international name in its punycode form."""
    port: int | None
    user_info: str
    """Text before an ``@`` in the address: it looks like a host but is not where the link goes."""
    data: list[tuple[str, str]]
    """The query's fields, decoded, then the fragment (``#``) if there is one."""
    international: bool
    """The host was written with non-ASCII letters, which can imitate another name."""


def web_link(url: QUrl) -> WebLink | str:
    """``url`` as a link Arbor may open after confirmation, or why it never opens."""
    href = url.toString(Encoded)
    shown = href if len(href) <= SHOWN_HREF_CHARS else href[: SHOWN_HREF_CHARS - 1] + "…"
    scheme = url.scheme().lower()
    if scheme in ("", "file"):
        return f"Arbor never opens local files or relative links from an agent's answer: {shown}"
    if scheme not in WEB_SCHEMES:
        return (
            f"Arbor opens only http and https links from an agent's answer, not {scheme or 'this'}: {shown}"
        )
    host = url.host(Encoded)
    if not url.isValid() or not host:
        return f"Not opened: the link has no valid host: {shown}"
    data = [
        (key, value) for key, value in QUrlQuery(url).queryItems(QUrl.ComponentFormattingOption.FullyDecoded)
    ]
    if url.hasFragment():
        data.append(("#", url.fragment(QUrl.ComponentFormattingOption.FullyDecoded)))
    port = url.port()
    return WebLink(
        url=href,
        scheme=scheme,
        host=host,
        port=port if port >= 0 else None,
        user_info=url.userInfo(),
        data=data,
        international=host != url.host(Decoded) or "xn--" in host,
    )


class LinkDialog(QDialog):
    """Asks before a link from an answer opens: its host set apart, the whole address wrapped (never
    elided), the data it carries one field a line; Open, Copy link, Cancel (the default)."""

    said = Signal(str)
    """What became of the link, for the status bar."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("linkDialog")
        self.setWindowTitle("Open a link from the answer?")
        self.setModal(True)
        self.setMinimumWidth(520)
        self.link: WebLink | None = None
        self.intro = QLabel("The agent's answer links to:")
        self.host = QLabel()
        self.host.setObjectName("linkHost")
        self.host.setTextFormat(Qt.TextFormat.PlainText)
        self.host.setWordWrap(True)
        self.host.setStyleSheet(
            "QLabel#linkHost { font-size: 13pt; font-weight: 600; color: #1d2b4a; background: #fff4d6;"
            " border: 1px solid #f0d49c; border-radius: 4px; padding: 4px 8px; }"
        )
        self.notes = QLabel()
        self.notes.setObjectName("linkNotes")
        self.notes.setWordWrap(True)
        self.address = self._text_box("linkAddress")
        self.data_caption = QLabel("Data in the address:")
        self.data = self._text_box("linkData")
        warning = QLabel(
            "Text the model read (a file, a web page, a tool's output) can make it write links that send "
            "data from this conversation to someone else in their address. Open it only if you expected "
            "this host and the data above."
        )
        warning.setObjectName("mutedLabel")
        warning.setWordWrap(True)
        self.buttons = QDialogButtonBox()
        self.open_button = self._button("Open", QDialogButtonBox.ButtonRole.AcceptRole, self.open_link)
        self.copy_button = self._button("Copy link", QDialogButtonBox.ButtonRole.ActionRole, self.copy_link)
        self.cancel_button = self._button("Cancel", QDialogButtonBox.ButtonRole.RejectRole, self.reject)
        self.cancel_button.setDefault(True)
        layout = QVBoxLayout(self)
        for widget in (
            self.intro,
            self.host,
            self.notes,
            QLabel("Full address:"),
            self.address,
            self.data_caption,
            self.data,
            warning,
            self.buttons,
        ):
            layout.addWidget(widget)

    def ask(self, link: WebLink) -> None:
        """Show ``link`` and wait (without blocking) for the user's choice."""
        self.link = link
        port = f":{link.port}" if link.port is not None else ""
        self.host.setText(f"{link.host}{port}")
        notes = [
            "https: the connection is encrypted."
            if link.scheme == "https"
            else "http: the connection is not encrypted."
        ]
        if link.international:
            notes.append(
                "The host name has non-ASCII letters and is shown in its ASCII form: it may imitate a "
                "name you know."
            )
        if link.user_info:
            notes.append(f"“{link.user_info}@” before the host is not where the link goes.")
        self.notes.setText("\n".join(notes))
        self.address.setPlainText(link.url)
        self.data.setPlainText("\n".join(f"{key} = {value}" for key, value in link.data))
        self.data_caption.setVisible(bool(link.data))
        self.data.setVisible(bool(link.data))
        self.cancel_button.setFocus()
        self.open()
        # Wrapped at the shown width: each box as tall as its text, up to its cap (then it scrolls).
        for box, lines in ((self.address, ADDRESS_MAX_LINES), (self.data, DATA_MAX_LINES)):
            _fit(box, lines)
        self.adjustSize()

    def open_link(self) -> None:
        link = self.link
        self.accept()
        if link is None:
            return
        if QDesktopServices.openUrl(QUrl.fromEncoded(link.url.encode("ascii"))):
            self.said.emit(f"Opened {link.host}")
        else:
            self.said.emit(f"No program on this system opens {link.scheme} links; use Copy link instead")

    def copy_link(self) -> None:
        if self.link is not None:
            QGuiApplication.clipboard().setText(self.link.url)
            self.said.emit(f"Copied the link to {self.link.host}")
        self.accept()

    def _button(self, text: str, role: QDialogButtonBox.ButtonRole, slot: object) -> QPushButton:
        button = self.buttons.addButton(text, role)
        button.setAutoDefault(False)
        button.clicked.connect(slot)
        return button

    @staticmethod
    def _text_box(name: str) -> QPlainTextEdit:
        # Wrapped anywhere and scrollable: a long address is shown whole, never elided in its middle.
        box = QPlainTextEdit()
        box.setObjectName(name)
        box.setReadOnly(True)
        box.setWordWrapMode(QTextOption.WrapMode.WrapAnywhere)
        box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        box.setStyleSheet(f"QPlainTextEdit#{name} {{ border: 1px solid #dfe3ea; background: #fbfcfd; }}")
        return box


def _fit(box: QPlainTextEdit, max_lines: int) -> None:
    layout = box.document().documentLayout()
    height, block = 0.0, box.document().firstBlock()
    while block.isValid():
        height += layout.blockBoundingRect(block).height()
        block = block.next()
    cap = box.fontMetrics().lineSpacing() * max_lines
    margins = 2 * (box.frameWidth() + box.document().documentMargin())
    box.setFixedHeight(int(min(height, cap) + margins + 1))
