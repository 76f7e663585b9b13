"""The window tests' shared helpers and fixtures: offscreen Qt, a qasync loop on pytest-qt's QApplication,
isolated QSettings, a window factory whose teardown reaps each backend, and the fake agents they drive.

The fixtures are collected through ``tests/app/conftest.py`` (and imported by the window tests outside
tests/app). How async is driven: :func:`qloop` installs a ``qasync.QEventLoop`` on the test's QApplication
with ``already_running=True``. asyncio then sees it as the running loop, while its callbacks, timers and
pipe notifiers are ordinary Qt events, so they run inside the nested Qt loops of ``qtbot.waitSignal``
and ``qtbot.waitUntil``. Tests therefore never await: they act on the window and wait on its signals
or on a condition, with a timeout, and never sleep.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Always offscreen, even on a desktop with a display: tests never pop up windows or need a screen.
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import pytest
import qasync
from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication

from ide.app.background import pending_tasks
from ide.app.theme import apply_theme
from ide.app.window import MainWindow
from ide.client.agentproc import AgentChoice

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


REVIEW_AGENT = [sys.executable, str(Path(__file__).with_name("review_agent.py"))]
"""The fake agent with Arbor's review extension; append ``--standard`` for one without it."""


def review_agent_env(log: Path, **extra: str) -> dict[str, str]:
    """Environment of the fake review agent: requests logged to ``log``. It imports Arbor as installed (the
    suite runs on its own editable install, as the backends the tests start do); no ``PYTHONPATH`` of its
    own, so the fork server can start it (tests/support/forkserver: ``HELPERS``)."""
    return {"REVIEW_AGENT_LOG": str(log), **extra}


@pytest.fixture(scope="session")
def session_qloop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """One qasync loop for the whole run, made current only inside window tests (see :func:`qloop`).

    One, not one per test: a loop dropped after its test can be deallocated on asyncio's child-watcher
    thread, and a QObject (qasync's timer) destroyed off the GUI thread leaves its Qt timers armed,
    which crashes the next test that spins the event loop.
    """
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.events._set_running_loop(None)
    yield loop
    # Not loop.stop(): for an already-running loop that calls QApplication.exit(), which leaves Qt's
    # quit flag set so that later nested event loops return at once.
    loop._QEventLoop__is_running = False  # type: ignore[attr-defined]
    loop.close()


@pytest.fixture
def qloop(session_qloop: asyncio.AbstractEventLoop, qtbot: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """The qasync loop as asyncio's running loop for this test, driven by whatever Qt loop is spinning."""
    asyncio.events._set_running_loop(session_qloop)
    try:
        yield session_qloop
    finally:
        for task in pending_tasks():
            task.cancel()
        # Cancelled tasks still need a few loop turns to run their cleanup.
        qtbot.waitUntil(lambda: not pending_tasks(), timeout=5000)
        # Other test suites in this run use asyncio.run(), which refuses to start inside a running loop.
        asyncio.events._set_running_loop(None)


@pytest.fixture
def qsettings_dir(qapp: QApplication, tmp_path: Path) -> Path:
    """QSettings in an INI file under tmp_path, never the developer's real window layout."""
    path = tmp_path / "qsettings"
    QCoreApplication.setOrganizationName("arbor-tests")
    QCoreApplication.setApplicationName("arbor")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(path))
    apply_theme(qapp)
    return path


@pytest.fixture
def make_window(qtbot: Any, qloop: asyncio.AbstractEventLoop, qsettings_dir: Path) -> Iterator[WindowFactory]:
    """Build shown MainWindows; teardown closes each and waits until its backend process is reaped."""
    windows: list[MainWindow] = []

    def make(
        workspace: Path,
        *,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
        agent: AgentChoice | None = None,
        start: bool = True,
    ) -> MainWindow:
        window = MainWindow(workspace, backend_command=command, backend_env=env, agent=agent)
        windows.append(window)
        window.show()
        if start:
            window.start()
        return window

    # No automatic cycle collection while windows live: twice a fresh-clone run died with SIGSEGV in a
    # collection that ran inside Qt's event loop while a closed window was being torn down
    # (test_chat's teardown). Garbage is collected once the windows are gone, outside the loop.
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield make
        for window in windows:
            close_window(qtbot, window)
    finally:
        if collecting:
            gc.enable()
