"""Another agent's life in the window (issue 46, items 6 and 8): when Arbor's review backend, which holds the
agent's shadow and review, is killed, the window says so at once with Restart (not at the next click, with
"backend ready" still in the status bar), and Restart starts the agent again in a new shadow; a
notification of the agent's own that nothing handles (Qwen Code sends one each turn) is no traceback."""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.foreign.part import ForeignAgent
from ide.app.window import MainWindow
from ide.client.agentproc import resolve_agent
from ide.client.events import PromptSent
from tests.support.git import hello_repo
from tests.support.window import BACKEND_START_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

STUBBORN_AGENT = Path(__file__).parents[2] / "support" / "stubborn_agent.py"
REVIEW_START_TIMEOUT_MS = 60_000
"""The agent's start waits for Arbor's own backend (the review's) and the shadow it makes."""
SAID_AT_ONCE_MS = 5_000


def agent_window(make_window: WindowFactory, tmp_path: Path) -> MainWindow:
    agent = resolve_agent(shlex.join([sys.executable, str(STUBBORN_AGENT), "60"]), {})
    assert agent.works_in_shadow
    window = make_window(hello_repo(tmp_path), agent=agent)
    return window


def test_a_killed_review_backend_is_said_at_once_with_restart_which_starts_the_agent_again(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window = agent_window(make_window, tmp_path)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=REVIEW_START_TIMEOUT_MS)
    review = window.part(ForeignAgent).review  # type: ignore[attr-defined]
    first_shadow, first_agent = review.shadow, window.bridge.pid
    assert first_shadow is not None and Path(first_shadow).is_dir()

    os.kill(review.process.pid, signal.SIGKILL)
    banner = window.banner
    qtbot.waitUntil(lambda: banner.isVisible() and banner.kind == "died", timeout=SAID_AT_ONCE_MS)
    qtbot.waitUntil(lambda: window.bridge.state == "stopped", timeout=SAID_AT_ONCE_MS)
    assert "review backend stopped unexpectedly (killed by SIGKILL)" in banner.title.text()
    assert "can no longer be reviewed" in banner.fix.text()
    assert banner.restart_button.isVisible()
    assert "ready" not in window.status.state.text()

    qtbot.mouseClick(banner.restart_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=REVIEW_START_TIMEOUT_MS)
    assert banner.kind != "died"  # at most a notice: this agent cannot restore its conversation
    assert window.bridge.pid not in (None, first_agent)
    assert review.shadow not in (None, first_shadow) and Path(review.shadow).is_dir()
    assert window.bridge.agent_dir == Path(review.shadow)


def test_an_agents_own_notification_is_ignored_without_a_traceback(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    window = agent_window(make_window, tmp_path)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=REVIEW_START_TIMEOUT_MS)
    chunks: list[Any] = []

    def take(event: Any) -> None:
        if not isinstance(event, PromptSent):  # what the agent sent, not the prompt
            chunks.append(event)

    window.bridge.sessionEvent.connect(take)
    with caplog.at_level(logging.DEBUG):
        window.send_prompt("go")
        # The notification comes first; a few chunks of the answer after it show it was handled.
        qtbot.waitUntil(lambda: len(chunks) >= 3, timeout=BACKEND_START_TIMEOUT_MS)
        window.bridge.cancel()
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=BACKEND_START_TIMEOUT_MS)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text
    assert "qwen/notify/session/prompt-suggestion" in caplog.text  # one debug line says it was ignored
    wait_ready(qtbot, window)
