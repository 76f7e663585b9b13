"""How a turn ends in the window: a failed turn's tree closed with the reason and said in the chat, the
model's health up front (the status bar's element with the fix; the banner only once a turn failed),
Stopped after Stop, the chat at the answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractSlider

from ide.app.chat.panel import NoticeView
from ide.app.chat.part import ChatDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.protocol.tree import SearchTree
from tests.support.net import closed_port
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

Script = Callable[[list[dict[str, Any]]], Path]


def live_runs(window: MainWindow) -> list[SearchTree]:
    view = window.part(TreeDock).view
    return [tree for key, tree in view.runs.items() if key not in view.file_runs]


def assert_run_failed(window: MainWindow, reason: str) -> None:
    [tree] = live_runs(window)
    assert tree.finished and tree.figures["stop_reason"] == "error"
    assert reason in tree.figures["error"]
    statuses = [node.status for node in tree.nodes.values()]
    assert "active" not in statuses and "failed" in statuses


def fail_a_turn(qtbot: Any, window: MainWindow) -> None:
    with qtbot.waitSignal(window.bridge.errorRaised, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("hello?")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=5000)


def test_a_model_error_fails_the_tree_and_says_why_in_the_chat(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    script = write_script([{"content": "x", "tool_calls": [{"name": "no_such_tool", "args": {}}]}])
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: window.status.health.property("level") == "ok", timeout=TURN_TIMEOUT_MS)
    assert not window.banner.isVisible()

    fail_a_turn(qtbot, window)
    assert_run_failed(window, 'calls tool "no_such_tool"')
    notice = window.part(ChatDock).panel.views()[-1]
    assert isinstance(notice, NoticeView) and notice.block.kind == "error"
    assert "The turn failed: scripted model" in notice.plain_text()
    assert "remove its tool_calls" in notice.plain_text()  # the fix, in the chat too
    assert window.status.health.property("level") == "error"  # the model's dot turned red
    assert not window.part(ChatDock).panel.turn_running


def test_no_model_server_is_red_at_once_and_a_turn_fails_with_the_reason(
    qtbot, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    host = f"http://127.0.0.1:{closed_port()}"
    window = make_window(git_workspace, env={"ARBOR_MODEL": "ollama:x", "OLLAMA_HOST": host})
    wait_ready(qtbot, window)
    # Before any prompt: the model's element is red with the reason and the fix, and nothing covers the work.
    status, banner = window.status, window.banner
    qtbot.waitUntil(lambda: status.health.property("level") == "error", timeout=TURN_TIMEOUT_MS)
    assert f"Ollama is not reachable at {host}" in status.health.toolTip()
    assert "ollama serve" in status.health.toolTip()
    assert f"Ollama is not reachable at {host} — Start it with" in status.health.text()
    assert not banner.wanted and not banner.isVisible()

    # A turn that fails says so across the window's top, above the docks and the centre.
    fail_a_turn(qtbot, window)
    assert_run_failed(window, f"Ollama is not reachable at {host}")
    assert banner.isVisible() and banner.kind == "model_unreachable"
    qtbot.waitUntil(lambda: banner.width() == window.width(), timeout=5000)
    chat_dock = window.part(ChatDock).dock
    assert (
        banner.mapTo(window, banner.rect().bottomLeft()).y()
        < chat_dock.mapTo(window, chat_dock.rect().topLeft()).y()
    )
    tree_dock = window.part(TreeDock).dock  # the run had the window
    assert (
        tree_dock.mapTo(window, tree_dock.rect().topLeft()).y()
        > banner.mapTo(window, banner.rect().bottomLeft()).y()
    )
    notice = window.part(ChatDock).panel.views()[-1]
    assert isinstance(notice, NoticeView)
    assert f"The turn failed: Ollama is not reachable at {host}" in notice.plain_text()

    qtbot.mouseClick(banner.dismiss_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and not banner.bar.isVisible()  # no empty strip left


def test_the_window_closes_a_run_the_backend_could_not(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    script = write_script(
        [{"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]}, {"latency_ms": 60000, "content": "x"}]
    )
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    window.send_prompt("list")
    qtbot.waitUntil(lambda: any(len(t.nodes) >= 3 for t in live_runs(window)), timeout=TURN_TIMEOUT_MS)
    with qtbot.waitSignal(window.bridge.backendDied, timeout=5000):
        window.bridge.process.kill()
    assert_run_failed(window, "the backend stopped during the turn")
    assert "The turn failed: the backend stopped" in window.part(ChatDock).panel.views()[-1].plain_text()


def test_stop_leaves_a_stopped_line(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    script = write_script([{"latency_ms": 60000, "content": "late"}])
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    window.send_prompt("slow")
    qtbot.waitUntil(lambda: bool(live_runs(window)), timeout=TURN_TIMEOUT_MS)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS) as finished:
        window.part(ChatDock).panel.stop_button.click()
    assert finished.args[0] == "cancelled"
    notice = window.part(ChatDock).panel.views()[-1]
    assert isinstance(notice, NoticeView) and notice.block.kind == "stopped"
    assert notice.plain_text().startswith("■ Stopped")
    [tree] = live_runs(window)
    assert tree.finished and "active" not in [node.status for node in tree.nodes.values()]


def test_the_chat_shows_the_answer_when_a_turn_ends(
    qtbot, make_window: WindowFactory, git_workspace: Path, write_script: Script
):
    long_answer = "\n\n".join(f"Paragraph {n}: the greeting is built in pkg/greet.py." for n in range(80))
    script = write_script(
        [{"content": "Short answer."}, {"content": "Short again."}, {"content": long_answer}]
    )
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    chat = window.part(ChatDock).panel
    bar = chat.scroll.verticalScrollBar()
    for prompt in ("one", "two"):
        with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
            window.send_prompt(prompt)
    qtbot.waitUntil(lambda: bar.maximum() == 0 or bar.value() == bar.maximum(), timeout=5000)

    bar.setValue(0)  # the user scrolled up while the turn ran
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("three")
    answer = chat.views()[-1]
    assert answer.height() > chat.scroll.viewport().height()

    def top() -> int:
        return answer.mapTo(chat.scroll.viewport(), answer.rect().topLeft()).y()

    # The start of the tall answer at the top of the view, not its end, once its layout has settled (on a
    # busy machine the last layout passes come late: the view follows them).
    qtbot.waitUntil(lambda: 0 < bar.value() < bar.maximum() and 0 <= top() <= 10, timeout=5000)

    # Once the user scrolls, the view stays where they put it when the layout changes again.
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    assert bar.value() == 0
    column = chat.scroll.widget()
    with qtbot.waitSignal(bar.rangeChanged, timeout=5000):
        column.setMinimumHeight(column.height() + 300)
    assert bar.value() == 0
