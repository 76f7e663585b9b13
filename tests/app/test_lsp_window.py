"""F12, Shift+F12 and hover in the window, answered by jedi-language-server through the backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QToolTip

from ide.app.docks.lsp import HOVER_LINES, HOVER_WIDTH, hover_text
from ide.app.viewer import plain_hover
from tests.support.lsp_shop import shop  # noqa: F401  (the fixture package)
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def test_f12_jumps_to_the_definition_shift_f12_lists_references_and_hover_shows_the_type(
    qtbot: Any,
    make_window: WindowFactory,
    shop: Path,  # noqa: F811
) -> None:
    window = make_window(shop)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "app.py")
    window.viewer.editor.go_to(3, 9)  # item = Product("Blue Mug")
    assert window.viewer.editor.position() == (3, 9)

    lsp = window.docks["lsp"]
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        lsp.definition_action.trigger()
    assert shown.args == [str(shop / "shop" / "models.py")]
    assert window.viewer.editor.position()[0] == 4  # class Product:

    window.viewer.editor.go_to(4, 8)
    with qtbot.waitSignal(lsp.lspAnswered, timeout=TURN_TIMEOUT_MS):
        lsp.references_action.trigger()
    picker = lsp.picker
    rows = [picker.list.item(i).text() for i in range(picker.list.count())]
    assert [row.split("    ")[0] for row in rows] == ["app.py:1:25", "app.py:3:8", "shop/models.py:4:7"]
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        picker.list.itemActivated.emit(picker.list.item(1))
    assert shown.args == [str(shop / "app.py")]
    assert window.viewer.editor.position()[0] == 3

    with qtbot.waitSignal(lsp.lspAnswered, timeout=TURN_TIMEOUT_MS):
        window.viewer.editor.hoverRequested.emit(3, 9, QPoint(20, 20))
    assert "class Product" in QToolTip.text()
    QToolTip.hideText()

    # A name with a long docstring: the tooltip stays a few lines of bounded width, cut with "…".
    doc = "\n".join(f"    Line {i}: " + "a rather long explanation " * 8 for i in range(80))
    (shop / "verbose.py").write_text(f'def chatty():\n    """Says a lot.\n\n{doc}\n    """\n\n\nchatty()\n')
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "verbose.py")
    with qtbot.waitSignal(lsp.lspAnswered, timeout=TURN_TIMEOUT_MS) as answered:
        window.viewer.editor.hoverRequested.emit(87, 2, QPoint(20, 20))
    assert len(answered.args[2].text.splitlines()) > 80  # what the server said
    shown = QToolTip.text().splitlines()
    assert "---" in answered.args[2].text  # the server's Markdown rule between signature and docstring
    assert "chatty" in QToolTip.text() and len(shown) <= HOVER_LINES and shown[-1] == "…"
    assert shown[0] == "def chatty()" and "---" not in QToolTip.text() and "```" not in QToolTip.text()
    assert max(len(line) for line in shown) <= HOVER_WIDTH


def test_a_markdown_hover_reads_as_plain_text() -> None:
    hover = "```python\ndef greet(name: str) -> str\n```\n---\nSay hello to \\_name\\_.\n\n***\nMore."
    assert plain_hover(hover) == "def greet(name: str) -> str\n\nSay hello to _name_.\n\nMore."
    assert plain_hover("a --- b\n- item") == "a --- b\n- item"  # not rules


def test_hover_text_wraps_and_cuts() -> None:
    assert hover_text("short") == "short"
    assert hover_text("x" * 200, lines=12, width=90).splitlines() == ["x" * 90, "x" * 90, "x" * 20]
    cut = hover_text("\n".join(map(str, range(40))), lines=5).splitlines()
    assert cut == ["0", "1", "2", "3", "…"]


def test_alt_left_goes_back_after_f12_and_alt_right_forward_and_a_miss_is_said(
    qtbot: Any,
    make_window: WindowFactory,
    shop: Path,  # noqa: F811
) -> None:
    window = make_window(shop)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "app.py")
    window.viewer.editor.go_to(3, 9)  # item = Product("Blue Mug")
    lsp = window.docks["lsp"]
    status = window.statusBar()

    lsp.back_action.trigger()
    assert status.currentMessage().startswith("Nothing to go back to")
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        lsp.definition_action.trigger()
    assert shown.args == [str(shop / "shop" / "models.py")]
    assert lsp.back_action.shortcut().toString() == "Alt+Left"
    assert lsp.forward_action.shortcut().toString() == "Alt+Right"

    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        lsp.back_action.trigger()
    assert shown.args == [str(shop / "app.py")]
    assert window.viewer.editor.position()[0] == 3
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        lsp.forward_action.trigger()
    assert shown.args == [str(shop / "shop" / "models.py")]
    assert window.viewer.editor.position()[0] == 4
    lsp.forward_action.trigger()
    assert status.currentMessage() == "Nothing to go forward to."

    # F12 where there is nothing to find is said in the status bar, with where to look next.
    (shop / "shop" / "models.py").write_text("\n" + (shop / "shop" / "models.py").read_text())
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "shop" / "models.py")
    window.viewer.editor.go_to(1, 1)
    with qtbot.waitSignal(lsp.lspAnswered, timeout=TURN_TIMEOUT_MS):
        lsp.definition_action.trigger()
    assert status.currentMessage() == (
        "No definition found at 1:1 ('arbor doctor' shows the Python environment it sees)."
    )
