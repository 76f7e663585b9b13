"""F12, Shift+F12 and hover in the window, answered by jedi-language-server through the backend."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QToolTip

from ide.app.workspace.part_lsp import DEFINITION_GRACE_MS, HOVER_LINES, HOVER_WIDTH, hover_text
from ide.app.workspace.part_outline import OutlineDock
from ide.app.workspace.viewer import plain_hover
from ide.protocol.lsp import LSP_DEFINITION, LSP_HOVER, LSP_REFERENCES, PositionParams
from tests.support.lsp_shop import shop  # noqa: F401  (the fixture package)
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def answer_of(
    wanted: str, source: str = "server", at: tuple[int, int] | None = None
) -> Callable[[str, PositionParams, object], bool]:
    """Whether an ``lspAnswered`` is the ``source``'s answer ("server" or "index") to ``wanted`` (asked at
    the (line, column) ``at``, when given: an earlier question's late answer is not it)."""

    def check(method: str, params: PositionParams, result: object) -> bool:
        asked = at is None or (params.line, params.column) == at
        return method == wanted and params.source == source and asked

    return check


def rows(picker: Any) -> list[str]:
    return [picker.list.item(i).text() for i in range(picker.list.count())]


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
    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_REFERENCES, at=(4, 8))
    ):
        lsp.references_action.trigger()
    picker = lsp.picker
    assert picker.title.text() == "References (language server): 3"
    assert [row.split("    ")[0] for row in rows(picker)] == [
        "app.py:1:25",
        "app.py:3:8",
        "shop/models.py:4:7",
    ]
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        picker.list.itemActivated.emit(picker.list.item(1))
    assert shown.args == [str(shop / "app.py")]
    assert window.viewer.editor.position()[0] == 3

    # The hover's own answer: the references' index answer may come after the server's (a run saw it do).
    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_HOVER, at=(3, 9))
    ):
        window.viewer.editor.hoverRequested.emit(3, 9, QPoint(20, 20))
    assert "class Product" in QToolTip.text()
    QToolTip.hideText()

    # A name with a long docstring: the tooltip stays a few lines of bounded width, cut with "…".
    doc = "\n".join(f"    Line {i}: " + "a rather long explanation " * 8 for i in range(80))
    (shop / "verbose.py").write_text(f'def chatty():\n    """Says a lot.\n\n{doc}\n    """\n\n\nchatty()\n')
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "verbose.py")
    hovered = answer_of(LSP_HOVER, at=(87, 2))
    with qtbot.waitSignal(lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=hovered) as answered:
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
    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_DEFINITION, at=(1, 1))
    ):
        lsp.definition_action.trigger()
    assert status.currentMessage() == (
        "No definition found at 1:1 ('arbor doctor' shows the Python environment it sees)."
    )


def test_shift_f12_shows_the_index_answer_by_name_until_the_servers_replaces_it(
    qtbot: Any,
    make_window: WindowFactory,
    shop: Path,  # noqa: F811
    user_config: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    """jedi-language-server behind a gate that holds its references until the test has seen the index's
    answer on screen: the order is the one a slow server gives, with the real server's answer."""
    gate = tmp_path / "open-the-gate"
    proxy = Path(__file__).parents[2] / "support" / "gated_lsp.py"
    user_config(f"[lsp.servers.jedi]\ncommand = {json.dumps([sys.executable, str(proxy), str(gate)])}\n")
    window = make_window(shop)
    wait_ready(qtbot, window)
    qtbot.waitUntil(
        lambda: window.part(OutlineDock).progress.label.text().startswith("Index:"), timeout=TURN_TIMEOUT_MS
    )
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "app.py")
    window.viewer.editor.go_to(3, 9)  # item = Product("Blue Mug")
    lsp = window.docks["lsp"]
    picker = lsp.picker

    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_REFERENCES, "index")
    ):
        lsp.references_action.trigger()
    assert picker.isVisible()
    assert picker.title.text() == (
        "References by name (index): 2 — Product, asking the language server, whose answer replaces this"
    )
    assert [row.split("    ")[0] for row in rows(picker)] == ["app.py:3:8", "shop/models.py:4:7"]
    assert not gate.exists()  # the server has not answered: its request is held

    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_REFERENCES)
    ):
        gate.touch()
    assert picker.title.text() == "References (language server): 3"
    assert [row.split("    ")[0] for row in rows(picker)] == [
        "app.py:1:25",
        "app.py:3:8",
        "shop/models.py:4:7",
    ]


def test_f12_goes_to_the_index_answer_when_the_server_is_slow_and_says_the_server_failed(
    qtbot: Any,
    make_window: WindowFactory,
    shop: Path,  # noqa: F811
    user_config: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    script = Path(__file__).parents[2] / "support" / "slow_lsp.py"
    command = [sys.executable, str(script), str(tmp_path / "slow.log")]
    user_config(f"[lsp]\nrequest_timeout_s = 3\n[lsp.servers.jedi]\ncommand = {json.dumps(command)}\n")
    window = make_window(shop)
    wait_ready(qtbot, window)
    qtbot.waitUntil(
        lambda: window.part(OutlineDock).progress.label.text().startswith("Index:"), timeout=TURN_TIMEOUT_MS
    )
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shop / "app.py")
    window.viewer.editor.go_to(3, 9)
    lsp = window.docks["lsp"]
    status = window.statusBar()
    with qtbot.waitSignal(window.viewer.fileShown, timeout=DEFINITION_GRACE_MS + TURN_TIMEOUT_MS) as shown:
        lsp.definition_action.trigger()
    assert shown.args == [str(shop / "shop" / "models.py")]
    assert window.viewer.editor.position()[0] == 4
    assert status.currentMessage() == "Definition by name (index); asking the language server…"
    with qtbot.waitSignal(
        lsp.lspAnswered, timeout=TURN_TIMEOUT_MS, check_params_cb=answer_of(LSP_DEFINITION)
    ):
        pass
    assert "did not answer textDocument/definition within 3 s" in status.currentMessage()
    assert status.currentMessage().endswith("(the index's answer by name is shown)")
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        lsp.back_action.trigger()  # the jump by name is in the history like any other
    assert shown.args == [str(shop / "app.py")]
