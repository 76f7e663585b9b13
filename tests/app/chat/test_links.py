"""A hostile model's links and images in the chat (issue 27, item 4): an http(s) link opens only after the
user saw its whole address and confirmed it; ``file:``, ``javascript:``, ``data:`` and relative links never
open nor navigate the answer; no image is fetched from the network or read from disk for rendering, in an
answer or in a foreign agent's permission question.

Opens are caught with ``QDesktopServices.setUrlHandler``, so nothing really opens; the exfiltration target
is a real HTTP server on 127.0.0.1 that counts what reaches it.
"""

from __future__ import annotations

import http.server
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import text_block, update_agent_message
from acp.schema import PermissionOption, ToolCallUpdate
from PySide6.QtCore import QByteArray, QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication, QImage, QTextCursor, QTextDocument
from PySide6.QtWidgets import QMainWindow

from ide.app.background import spawn
from ide.app.chat.panel import AssistantMessageView, ChatPanel
from ide.app.chat.part import ChatDock
from ide.app.chat.permission import PermissionDialog
from ide.client.fold import SessionFold
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

SCHEMES = ("http", "https", "file", "data", "javascript", "mailto")
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000b49444154789c6360000200000500017a5eab3f0000000049454e44ae426082"
)
"""A valid 1x1 transparent PNG."""


class Opener(QObject):
    """Stands in for the desktop's browser: records each URL the window asks to open."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def record(self, url: QUrl) -> None:
        self.opened.append(url.toString(QUrl.ComponentFormattingOption.FullyEncoded))


@pytest.fixture
def opener(qapp: Any) -> Iterator[Opener]:
    recorder = Opener()
    for scheme in SCHEMES:
        QDesktopServices.setUrlHandler(scheme, recorder, "record")
    yield recorder
    for scheme in SCHEMES:
        QDesktopServices.unsetUrlHandler(scheme)


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1: its port and the paths requested from it."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], hits
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def panel(qtbot: Any, qapp: Any) -> Iterator[ChatPanel]:
    """A chat panel in a main window of its own (for the status bar), shown."""
    host = QMainWindow()
    chat = ChatPanel()
    host.setCentralWidget(chat)
    host.resize(900, 700)
    qtbot.addWidget(host)
    host.show()
    qtbot.waitExposed(host)
    yield chat
    dialog = getattr(chat, "link_dialog", None)
    if dialog is not None:
        dialog.reject()


def stream_answer(chat: ChatPanel, text: str, chunk: int = 7) -> AssistantMessageView:
    """Stream ``text`` into the chat as a model's answer, a few characters per update."""
    fold = SessionFold()
    for start in range(0, len(text), chunk):
        chat.apply_update(fold.apply(update_agent_message(text_block(text[start : start + chunk]))))
    chat.flush()
    (view,) = [v for v in chat.views() if isinstance(v, AssistantMessageView)]
    return view


def click_link(qtbot: Any, view: AssistantMessageView, href: str) -> None:
    """Click the middle of the link to ``href`` in ``view`` with the mouse."""
    document = view.document()
    block = document.firstBlock()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            if fragment.charFormat().anchorHref() == href:
                cursor = QTextCursor(document)
                cursor.setPosition(fragment.position() + fragment.length() // 2)
                point = view.cursorRect(cursor).center()
                qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)
                return
            iterator += 1
        block = block.next()
    raise AssertionError(f"no link to {href} in {view.toPlainText()!r}")


def status(chat: ChatPanel) -> str:
    window = chat.window()
    assert isinstance(window, QMainWindow)
    return window.statusBar().currentMessage()


def test_a_link_opens_only_after_the_user_saw_its_whole_address(
    qtbot: Any, panel: ChatPanel, opener: Opener, server: tuple[int, list[str]]
) -> None:
    port, hits = server
    href = f"http://127.0.0.1:{port}/link?d=hunter2&session=s3cr3t#k"
    view = stream_answer(panel, f"Done. For the details [click here]({href}).")

    click_link(qtbot, view, href)
    assert opener.opened == []  # one click opened nothing
    dialog = panel.link_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.host.text() == f"127.0.0.1:{port}"
    assert dialog.address.toPlainText() == href  # the whole address, query and fragment, not elided
    assert dialog.data.toPlainText() == "d = hunter2\nsession = s3cr3t\n# = k"
    assert "not encrypted" in dialog.notes.text()
    assert dialog.cancel_button.isDefault()

    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible() and opener.opened == []

    click_link(qtbot, view, href)
    assert dialog.isVisible()
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == href and opener.opened == []
    assert status(panel) == "Copied the link to 127.0.0.1"

    click_link(qtbot, view, href)
    assert dialog.isVisible()
    qtbot.mouseClick(dialog.open_button, Qt.MouseButton.LeftButton)
    assert opener.opened == [href]
    assert not dialog.isVisible()
    assert hits == []  # the recorder stood in for the browser: nothing reached the server


@pytest.mark.parametrize(
    "href",
    [
        "file:///etc/hostname",
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "notes.txt",
        "mailto:someone@example.com?body=hunter2",
    ],
)
def test_other_schemes_never_open_nor_replace_the_answer(
    qtbot: Any, panel: ChatPanel, opener: Opener, href: str
) -> None:
    answer = f"See [this]({href}) for more."
    view = stream_answer(panel, answer)
    shown = view.toPlainText()
    assert shown == "See this for more."

    click_link(qtbot, view, href)
    assert view.toPlainText() == shown  # the bubble still shows the answer, not the file or page
    assert view.source().isEmpty()
    assert opener.opened == []
    assert panel.link_dialog is None
    assert "never opens" in status(panel) or "only http and https" in status(panel)


def test_no_image_is_fetched_or_read_for_rendering(
    qtbot: Any, panel: ChatPanel, server: tuple[int, list[str]], tmp_path: Path
) -> None:
    port, hits = server
    local = tmp_path / "pixel.png"
    local.write_bytes(PNG)
    remote, html_remote = f"http://127.0.0.1:{port}/pixel.png", f"http://127.0.0.1:{port}/html.png"
    view = stream_answer(
        panel,
        f'Look: ![tracker]({remote}) and ![local]({local.as_uri()}) and <img src="{html_remote}"> '
        f'and <img src="{local}">.\n\n<table background="{local.as_uri()}"><tr><td>x</td></tr></table>',
    )
    view.grab()  # lay out and paint everything the answer shows

    document = view.document()
    for name in (remote, html_remote, local.as_uri(), str(local)):
        loaded = document.resource(QTextDocument.ResourceType.ImageResource, QUrl(name))
        # Nothing read from disk or the network: no image, no bytes.
        assert loaded is None or (isinstance(loaded, bytes | QByteArray) and not len(loaded)), (name, loaded)
    assert "[image: tracker]" in view.toPlainText() and "[image: local]" in view.toPlainText()
    # Bounded proof that no request reached the server: the first one it sees is this test's own.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/sentinel", timeout=5) as answer:
        answer.read()
    assert hits == ["/sentinel"]


def test_a_hover_shows_the_real_address_not_the_models_title(
    qtbot: Any, panel: ChatPanel, tmp_path: Path
) -> None:
    secret = tmp_path / "id_rsa.png"
    secret.write_bytes(PNG)
    title = f"<img src='{secret.as_uri()}'> https://github.com/"
    view = stream_answer(
        panel, f'[GitHub](http://evil.example/x "{title}") and <span title="<b>hi</b>">t</span>'
    )
    tips = []
    block = view.document().firstBlock()
    iterator = block.begin()
    while not iterator.atEnd():
        tips.append((iterator.fragment().text(), iterator.fragment().charFormat().toolTip()))
        iterator += 1
    assert ("GitHub", "<p>http://evil.example/x</p>") in tips
    assert all("<img" not in tip and "<b>" not in tip for _, tip in tips)


@pytest.mark.parametrize(
    ("href", "host", "user_info", "international"),
    [
        ("http://аpple.com/?q=ü", "xn--pple-43d.com", "", True),
        ("https://xn--80ak6aa92e.com/", "xn--80ak6aa92e.com", "", True),
        ("https://github.com@evil.example:8443/p", "evil.example", "github.com", False),
    ],
)
def test_the_host_is_shown_as_what_it_is(
    qtbot: Any, panel: ChatPanel, href: str, host: str, user_info: str, international: bool
) -> None:
    from ide.app.chat.links import web_link

    link = web_link(QUrl(href))
    assert not isinstance(link, str)
    assert (link.host, link.user_info, link.international) == (host, user_info, international)
    assert link.url.isascii()
    panel.open_link(QUrl(href))
    dialog = panel.link_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.host.text().startswith(host)
    assert dialog.address.toPlainText() == link.url
    assert ("non-ASCII" in dialog.notes.text()) == international
    assert (f"“{user_info}@” before the host is not where the link goes" in dialog.notes.text()) == bool(
        user_info
    )


Script = Callable[[list[dict[str, Any]]], Path]


def test_a_streamed_answer_from_the_backend_asks_before_its_link_opens(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, write_script: Script, opener: Opener
) -> None:
    href = "http://127.0.0.1:9/link?d=hunter2"
    script = write_script([{"content": f"All set. [Open the report]({href})"}])
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Summarize")
    window.part(ChatDock).panel.flush()
    (answer,) = [v for v in window.part(ChatDock).panel.views() if isinstance(v, AssistantMessageView)]

    click_link(qtbot, answer, href)
    assert opener.opened == []
    dialog = window.part(ChatDock).panel.link_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.address.toPlainText() == href
    qtbot.mouseClick(dialog.open_button, Qt.MouseButton.LeftButton)
    assert opener.opened == [href]
    assert window.statusBar().currentMessage() == "Opened 127.0.0.1"


def test_a_foreign_agents_permission_title_is_text_not_markup(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    tall = tmp_path / "tall.png"
    assert QImage(8, 400, QImage.Format.Format_ARGB32).save(str(tall))
    title = f"<img src='{tall}'> Edit notes.py"
    dialog = PermissionDialog()
    qtbot.addWidget(dialog)
    option = PermissionOption(option_id="no", name="Reject", kind="reject_once")
    answer = spawn(dialog.ask("s", ToolCallUpdate(tool_call_id="t", title=title), [option]), name="ask")
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert dialog.title.text().replace("\u200b", "") == title  # a long run given places to wrap, no more
    assert dialog.title.sizeHint().height() < 100  # the file was not read and drawn as an image
    dialog.reject()
    qtbot.waitUntil(answer.done, timeout=5000)
