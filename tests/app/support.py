"""Helpers shared by the window tests (the fixtures that use them live in conftest.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ide.app.window import MainWindow

BACKEND_START_TIMEOUT_MS = 30_000
"""The real backend imports LangGraph and friends before it answers initialize."""
TURN_TIMEOUT_MS = 20_000
ECHO_AGENT = [sys.executable, str(Path(__file__).with_name("echo_agent.py"))]

WindowFactory = Callable[..., MainWindow]


def close_window(qtbot: Any, window: MainWindow) -> None:
    """Close ``window`` and wait until its backend is gone (SIGKILL if it lingers)."""
    if window.isVisible():
        window.close()
    bridge = window.bridge

    def reaped() -> bool:
        process = bridge.process
        return process is None or process.returncode is not None

    try:
        qtbot.waitUntil(reaped, timeout=10_000)
    except AssertionError:
        bridge.kill()
        qtbot.waitUntil(reaped, timeout=5_000)
    window.deleteLater()


def wait_ready(qtbot: Any, window: MainWindow) -> None:
    """Wait until the window's backend has a session and is ready for a prompt."""
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=BACKEND_START_TIMEOUT_MS)


REPO = Path(__file__).resolve().parents[2]
REVIEW_AGENT = [sys.executable, str(Path(__file__).with_name("review_agent.py"))]
"""The fake agent with Arbor's review extension; append ``--standard`` for one without it."""


def review_agent_env(log: Path, **extra: str) -> dict[str, str]:
    """Environment of the fake review agent: this checkout importable, requests logged to ``log``."""
    return {"PYTHONPATH": str(REPO), "REVIEW_AGENT_LOG": str(log), **extra}
