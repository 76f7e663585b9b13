"""The permission dialog shows what a tool call would do, and closing it rejects instead of cancelling."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.schema import PermissionOption, RequestPermissionRequest

from ide.app.chat.permission import PermissionDialog, tool_call_details

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "never", "name": "Never", "kind": "reject_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def request(tool_call: dict[str, Any], options: list[dict[str, Any]] = OPTIONS) -> RequestPermissionRequest:
    """A permission request as the SDK reads it off the wire."""
    return RequestPermissionRequest.model_validate(
        {"sessionId": "s", "toolCall": tool_call, "options": options}
    )


EDIT = {
    "toolCallId": "w1",
    "title": "Edit hello.py",
    "kind": "edit",
    "content": [{"type": "diff", "path": "/w/hello.py", "oldText": "a\nb\n", "newText": "a\nc\n"}],
    "rawInput": {"path": "/w/hello.py"},
}


def test_details_show_diff_command_and_arguments() -> None:
    text = tool_call_details(request(EDIT).tool_call, Path("/w"))
    assert "--- a/hello.py\n+++ b/hello.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c" in text
    outside = tool_call_details(request(EDIT).tool_call, Path("/elsewhere"))
    assert "--- a/w/hello.py\n+++ b/w/hello.py" in outside
    assert text.endswith('Arguments:\n{\n  "path": "/w/hello.py"\n}')
    new_file = {**EDIT, "content": [{"type": "diff", "path": "/w/new.py", "newText": "x\n"}]}
    assert "+x" in tool_call_details(request(new_file).tool_call)
    run = {
        "toolCallId": "t",
        "title": "Run tests",
        "kind": "execute",
        "rawInput": {"command": ["pytest", "-q"]},
    }
    shown = tool_call_details(request(run).tool_call)
    assert shown.startswith("$ pytest -q\n\nArguments:")
    shell = {**run, "rawInput": {"command": ["bash", "-lc", "rm -rf build && make"]}}
    assert tool_call_details(request(shell).tool_call).startswith("$ bash -lc 'rm -rf build && make'\n")
    said = {"toolCallId": "t", "content": [{"type": "content", "content": {"type": "text", "text": "why"}}]}
    assert tool_call_details(request(said).tool_call) == "why"


def ask(dialog: PermissionDialog, req: RequestPermissionRequest) -> asyncio.Task[str | None]:
    return asyncio.ensure_future(dialog.ask("s", req.tool_call, req.options))


def test_closing_rejects_and_only_a_cancelled_turn_cancels(
    qtbot: Any, qloop: asyncio.AbstractEventLoop
) -> None:
    dialog = PermissionDialog()
    qtbot.addWidget(dialog)

    answer = ask(dialog, request(EDIT))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert "+c" in dialog.details.toPlainText() and dialog.button_for("allow") is not None
    dialog.close()  # the window's close button, like Esc, is QDialog.reject
    qtbot.waitUntil(answer.done, timeout=5000)
    assert answer.result() == "no" and not dialog.isVisible()

    answer = ask(dialog, request(EDIT))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    dialog.reject()
    qtbot.waitUntil(answer.done, timeout=5000)
    assert answer.result() == "no"

    answer = ask(dialog, request(EDIT))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    dialog.cancel_turn()
    qtbot.waitUntil(answer.done, timeout=5000)
    assert answer.result() is None  # answered "cancelled": the turn really was

    only_allow = [PermissionOption.model_validate(OPTIONS[0]).model_dump(by_alias=True)]
    answer = ask(dialog, request(EDIT, only_allow))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    dialog.reject()
    qtbot.waitUntil(answer.done, timeout=5000)
    assert answer.result() is None  # nothing to reject with: refusing is all that is left

    answer = ask(dialog, request(EDIT))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    clicked = dialog.button_for("allow")
    assert clicked is not None
    clicked.click()
    qtbot.waitUntil(answer.done, timeout=5000)
    assert answer.result() == "allow"


def test_a_question_from_an_agent_in_a_shadow_says_it_runs_there(
    qtbot: Any, qloop: asyncio.AbstractEventLoop
) -> None:
    shadow: list[Path | None] = [Path("/tmp/arbor-shadow-x")]
    dialog = PermissionDialog(root=Path("/w"), shadow=lambda: shadow[0])
    qtbot.addWidget(dialog)
    diff = {"type": "diff", "path": "/tmp/arbor-shadow-x/hello.py", "newText": "x\n"}
    in_shadow = {**EDIT, "content": [diff]}
    answer = ask(dialog, request(in_shadow))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert dialog.where.isVisibleTo(dialog)
    assert dialog.where.text().startswith("It runs in a shadow of the workspace (/tmp/arbor-shadow-x)")
    assert "+++ b/hello.py" in dialog.details.toPlainText()  # paths as in the workspace
    dialog.reject()
    qtbot.waitUntil(answer.done, timeout=5000)

    shadow[0] = None  # an agent in the workspace itself: nothing said
    answer = ask(dialog, request(EDIT))
    qtbot.waitUntil(dialog.isVisible, timeout=5000)
    assert not dialog.where.isVisibleTo(dialog) and "+++ b/hello.py" in dialog.details.toPlainText()
    dialog.reject()
    qtbot.waitUntil(answer.done, timeout=5000)
