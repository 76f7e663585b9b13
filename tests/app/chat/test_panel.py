"""Prompt turns against the real ``arbor acp`` backend with a scripted model: streaming, Stop, Markdown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.chat.panel import AssistantMessageView, ThoughtView, ToolCallView, UserMessageView
from ide.app.chat.part import ChatDock
from ide.app.window import MainWindow
from tests.support.window import ECHO_AGENT, TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

Script = Callable[[list[dict[str, Any]]], Path]

READ_THEN_ANSWER = [
    {
        "thinking": "The user asks about greet. I should read pkg/greet.py first.",
        "content": "",
        "tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}],
    },
    {"content": "`greet(name)` returns a **friendly greeting**:\n\n- takes a name\n- says hello"},
]


def scripted_window(make_window: WindowFactory, workspace: Path, script: Path) -> MainWindow:
    return make_window(workspace, env={"ARBOR_MODEL": f"scripted:{script}"})


def send(qtbot: Any, window: MainWindow, text: str) -> None:
    """Type ``text`` in the prompt box and press Enter, as a user would."""
    window.part(ChatDock).panel.prompt.setFocus()
    qtbot.keyClicks(window.part(ChatDock).panel.prompt, text)
    qtbot.keyClick(window.part(ChatDock).panel.prompt, Qt.Key.Key_Return)


def test_a_prompt_streams_thought_tool_call_and_markdown_answer(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    window = scripted_window(make_window, git_workspace, write_script(READ_THEN_ANSWER))
    wait_ready(qtbot, window)
    assert window.status.model.text().startswith("model: scripted:")
    assert "ready" in window.status.state.text()

    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS) as finished:
        send(qtbot, window, "What does greet do?")
        assert not window.part(ChatDock).panel.send_button.isEnabled()  # busy: one turn at a time
    assert finished.args[0] == "end_turn"
    window.part(ChatDock).panel.flush()

    views = window.part(ChatDock).panel.views()
    kinds = [type(view) for view in views]
    assert kinds == [UserMessageView, ThoughtView, ToolCallView, AssistantMessageView]
    user, thought, tool, answer = views
    assert user.plain_text() == "What does greet do?"
    assert "read pkg/greet.py first" in thought.plain_text()
    assert not thought.expanded  # thoughts start collapsed

    # Rendered as Markdown: the emphasis markers are gone, the list items are separate lines.
    rendered = answer.toPlainText()
    assert "friendly greeting" in rendered
    assert "**" not in rendered
    assert "takes a name" in rendered

    assert tool.block.status == "completed"
    assert "pkg/greet.py" in tool.block.title or "greet.py" in tool.input.text()
    tool.set_expanded(True)
    assert "greet.py" in tool.input.text()
    assert "Hello" in tool.output.text()
    assert "calls" in window.status.usage.text()
    assert window.bridge.state == "ready"
    assert window.part(ChatDock).panel.send_button.isEnabled() is False  # prompt box is empty again
    assert window.part(ChatDock).panel.prompt.toPlainText() == ""


def test_clicking_a_tool_location_opens_the_file(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    window = scripted_window(make_window, git_workspace, write_script(READ_THEN_ANSWER))
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("What does greet do?")
    window.part(ChatDock).panel.flush()
    tool = next(view for view in window.part(ChatDock).panel.views() if isinstance(view, ToolCallView))
    assert tool.block.locations, "the backend sends the file it read as a tool-call location"

    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000) as shown:
        tool.locations.linkActivated.emit("0")
    assert Path(shown.args[0]).name == "greet.py"
    assert window.viewer.editor.toPlainText().startswith("def greet")


def test_shift_enter_adds_a_line_and_enter_sends(qtbot, make_window: WindowFactory, git_workspace: Path):
    window = make_window(git_workspace, command=ECHO_AGENT)
    wait_ready(qtbot, window)
    qtbot.keyClicks(window.part(ChatDock).panel.prompt, "first")
    qtbot.keyClick(window.part(ChatDock).panel.prompt, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.part(ChatDock).panel.prompt, "second")
    assert window.part(ChatDock).panel.prompt.toPlainText() == "first\nsecond"

    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(window.part(ChatDock).panel.prompt, Qt.Key.Key_Return)
    window.part(ChatDock).panel.flush()
    user, answer = window.part(ChatDock).panel.views()
    assert user.plain_text() == "first\nsecond"
    assert answer.plain_text() == "echo: first second"  # Markdown: a single newline is a soft break


def test_stop_cancels_a_running_turn(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    slow = write_script([{"content": "far too late", "latency_ms": 20_000}])
    window = scripted_window(make_window, git_workspace, slow)
    wait_ready(qtbot, window)
    window.send_prompt("take your time")
    assert window.bridge.state == "busy"
    assert window.part(ChatDock).panel.stop_button.isEnabled()

    with qtbot.waitSignal(window.bridge.turnFinished, timeout=5000) as finished:
        qtbot.mouseClick(window.part(ChatDock).panel.stop_button, Qt.MouseButton.LeftButton)
    assert finished.args[0] == "cancelled"
    assert window.bridge.state == "ready"
    assert "far too late" not in window.part(ChatDock).panel.transcript()


def test_any_acp_agent_works_without_arbor_metadata(qtbot, make_window: WindowFactory, git_workspace: Path):
    window = make_window(git_workspace, command=ECHO_AGENT)
    wait_ready(qtbot, window)
    assert window.bridge.agent_meta is None
    assert window.status.model.text() == "agent: echo"
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("ping")
    window.part(ChatDock).panel.flush()
    assert window.part(ChatDock).panel.transcript() == "ping\n\necho: ping"
    assert window.status.usage.text() == ""
