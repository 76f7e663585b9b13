"""The agent's permission question fits the window it asks for (issue 46, item 5): a command of thousands of
characters wraps inside the dialog, and every option — the reject one too — is a button on screen in it."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import pytest
from acp.schema import RequestPermissionRequest
from PySide6.QtCore import QPoint, QRect

from ide.app.window import MainWindow
from tests.support.window import WindowFactory

pytestmark = pytest.mark.window

COMMAND = "printf '%s\\n' " + "x" * 1985 + " > made.txt"
OPTIONS = [
    {
        "optionId": "always",
        "name": f"Yes, and don't ask again for commands that start with `{COMMAND[:400]}`",
        "kind": "allow_always",
    },
    {"optionId": "once", "name": "Yes", "kind": "allow_once"},
    {"optionId": "no", "name": "No, and tell the agent what to do differently", "kind": "reject_once"},
]


def codex_like_request() -> RequestPermissionRequest:
    """A command as Codex asks it: the command line is the title too, and one option repeats it."""
    return RequestPermissionRequest.model_validate(
        {
            "sessionId": "s",
            "toolCall": {
                "toolCallId": "call_1",
                "title": COMMAND,
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": ["bash", "-lc", COMMAND], "cwd": "/w"},
            },
            "options": OPTIONS,
        }
    )


@pytest.mark.parametrize("size", [(1280, 800), (720, 560)])
def test_a_two_thousand_character_command_fits_the_window_with_every_option_on_screen(
    qtbot: Any,
    make_window: WindowFactory,
    git_workspace: Path,
    qloop: asyncio.AbstractEventLoop,
    size: tuple[int, int],
) -> None:
    assert len(COMMAND) >= 2000
    window: MainWindow = make_window(git_workspace, start=False)
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    request = codex_like_request()
    dialog = window.permission_dialog
    answer = asyncio.ensure_future(dialog.ask("s", request.tool_call, request.options))
    qtbot.waitUntil(dialog.isVisible)

    assert dialog.width() <= window.width() and dialog.height() <= window.height()
    inside = QRect(QPoint(0, 0), dialog.size())
    for option in OPTIONS:
        button = dialog.button_for(option["optionId"])
        assert button is not None and button.isVisible()
        corner = button.mapTo(dialog, QPoint(0, 0))
        assert inside.contains(QRect(corner, button.size())), (option["optionId"], corner, button.size())
        assert button.width() >= button.minimumSizeHint().width()  # its text as set, never cut further
        shown = button.text()
        assert shown == option["name"] or (shown.endswith("…") and button.toolTip() == option["name"])
    # The command is there whole, wrapped inside the dialog rather than widening it.
    assert shlex.join(["bash", "-lc", COMMAND]) in dialog.details.toPlainText()  # quoted as a shell reads it
    assert dialog.details.horizontalScrollBar().maximum() == 0

    dialog.button_for("no").click()  # type: ignore[union-attr]
    qtbot.waitUntil(answer.done)
    assert answer.result() == "no"
