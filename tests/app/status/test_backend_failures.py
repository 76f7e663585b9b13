"""What the window does when the backend dies or a turn fails: the banner, Restart, and the replay."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.chat.panel import AssistantMessageView, UserMessageView
from ide.app.chat.part import ChatDock
from tests.support.net import closed_port
from tests.support.window import (
    BACKEND_START_TIMEOUT_MS,
    ECHO_AGENT,
    TURN_TIMEOUT_MS,
    WindowFactory,
    wait_ready,
)

pytestmark = pytest.mark.window

Script = Callable[[list[dict[str, Any]]], Path]


def test_killed_backend_shows_banner_and_restart_replays_the_conversation(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    script = write_script([{"content": "The answer is **42**."}])
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("What is the answer?")
    session_id = window.bridge.session_id
    old_pid = window.bridge.pid

    with qtbot.waitSignal(window.bridge.backendDied, timeout=5000) as died:
        window.bridge.process.kill()

    assert died.args[0] == -9
    banner = window.banner
    assert banner.isVisible()
    assert "stopped unexpectedly (killed by SIGKILL)" in banner.title.text()
    assert banner.restart_button.isVisible()
    assert window.bridge.state == "stopped"
    assert "stopped" in window.status.state.text()
    assert not window.part(ChatDock).panel.send_button.isEnabled()

    with qtbot.waitSignal(window.bridge.sessionReady, timeout=BACKEND_START_TIMEOUT_MS) as ready:
        qtbot.mouseClick(banner.restart_button, Qt.MouseButton.LeftButton)
    assert ready.args == [session_id, True]  # the same session, restored with session/load
    assert window.bridge.pid not in (None, old_pid)
    assert window.bridge.state == "ready"
    assert not banner.isVisible()

    # The chat was cleared when the replay began, so what it shows now came from the backend's history.
    views = window.part(ChatDock).panel.views()
    assert [type(view) for view in views] == [UserMessageView, AssistantMessageView]
    assert views[0].plain_text() == "What is the answer?"
    assert views[1].plain_text() == "The answer is 42."


def test_backend_killed_mid_turn_is_reported_at_once(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    slow = write_script([{"content": "never", "latency_ms": 30_000}])
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{slow}"})
    wait_ready(qtbot, window)
    window.send_prompt("slow question")
    assert window.bridge.state == "busy"

    with qtbot.waitSignal(window.bridge.backendDied, timeout=3000):
        window.bridge.process.kill()
    assert window.bridge.state == "stopped"
    assert window.banner.isVisible() and window.banner.restart_button.isVisible()
    assert not window.part(ChatDock).panel.stop_button.isVisible()


CRASH_AT_START = """
import sys
sys.stderr.write("arbor: loading settings\\n")
def load():
    import no_such_module_anywhere
load()
"""


def test_backend_that_exits_at_start_shows_exit_code_and_its_last_words(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    window = make_window(git_workspace, command=[sys.executable, "-c", CRASH_AT_START], start=False)
    with qtbot.waitSignal(window.bridge.backendDied, timeout=10_000) as died:
        window.start()
    assert died.args[0] == 1
    assert "Traceback (most recent call last)" in died.args[1]  # the full tail, for Copy log
    banner = window.banner
    assert "exit code 1" in banner.title.text()
    assert "Restart it to try again" in banner.fix.text()  # there was no conversation to restore
    details = banner.details.text()
    assert "arbor: loading settings" in details
    assert "ModuleNotFoundError: No module named 'no_such_module_anywhere'" in details
    assert "Traceback" not in details and 'File "' not in details  # no frames in the window
    assert banner.restart_button.isVisible() and banner.copy_button.isVisible()


def test_backend_that_cannot_be_spawned_says_how_to_fix_it(
    qtbot, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    window = make_window(git_workspace, command=[str(tmp_path / "no-such-arbor")], start=False)
    with qtbot.waitSignal(window.bridge.errorRaised, timeout=5000):
        window.start()
    qtbot.waitUntil(lambda: window.bridge.state == "stopped", timeout=5000)
    assert "Cannot start the backend" in window.banner.title.text()
    assert "ARBOR_BACKEND_COMMAND" in window.banner.fix.text()
    assert window.banner.restart_button.isVisible()


def test_restart_of_an_agent_without_session_load_keeps_the_transcript(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    window = make_window(git_workspace, command=ECHO_AGENT)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("remember me")
    old_session = window.bridge.session_id

    with qtbot.waitSignal(window.bridge.sessionReady, timeout=BACKEND_START_TIMEOUT_MS) as ready:
        window.restart_backend()
    assert ready.args[1] is False and ready.args[0] != old_session
    assert window.banner.kind == "notice"
    assert "could not be restored" in window.banner.title.text()
    assert "remember me" in window.part(ChatDock).panel.transcript()


def test_unreachable_model_shows_the_fix_in_the_banner(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    host = f"http://127.0.0.1:{closed_port()}"
    window = make_window(git_workspace, env={"ARBOR_MODEL": "ollama:x", "OLLAMA_HOST": host})
    wait_ready(qtbot, window)

    with qtbot.waitSignal(window.bridge.errorRaised, timeout=TURN_TIMEOUT_MS) as raised:
        window.send_prompt("hello?")
    info = raised.args[0]
    assert info.kind == "model_unreachable"
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=5000)
    banner = window.banner
    assert banner.isVisible()
    assert banner.kind == "model_unreachable"
    assert "ollama serve" in banner.fix.text()
    assert not banner.restart_button.isVisible()  # the backend is fine; the model server is not
    assert "Traceback" not in banner.title.text() + banner.fix.text() + banner.details.text()

    qtbot.mouseClick(banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()


def test_a_bad_setting_is_reported_with_file_and_key_not_a_traceback(
    qtbot, make_window: WindowFactory, git_workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text('[llm]\nnum_ctx = "lots"\n')
    monkeypatch.setenv("ARBOR_CONFIG_DIR", str(config))
    window = make_window(git_workspace)
    assert window.banner.kind == "settings"  # the window read the same file before the backend started

    with qtbot.waitSignal(window.bridge.errorRaised, timeout=BACKEND_START_TIMEOUT_MS) as raised:
        pass
    qtbot.waitUntil(lambda: window.bridge.state == "stopped", timeout=10_000)
    info = raised.args[0]
    assert "config.toml" in info.message and "num_ctx" in info.message
    assert window.banner.isVisible() and window.banner.restart_button.isVisible()
    assert "Traceback" not in window.banner.title.text()
