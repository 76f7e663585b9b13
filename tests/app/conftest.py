"""Fixtures for window tests: offscreen Qt, a qasync loop on pytest-qt's QApplication, isolated QSettings.

How async is driven: :func:`qloop` installs a ``qasync.QEventLoop`` on the test's QApplication with
``already_running=True``. asyncio then sees it as the running loop, while its callbacks, timers and
pipe notifiers are ordinary Qt events, so they run inside the nested Qt loops of ``qtbot.waitSignal``
and ``qtbot.waitUntil``. Tests therefore never await: they act on the window and wait on its signals
or on a condition, with a timeout, and never sleep.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Always offscreen, even on a desktop with a display: tests never pop up windows or need a screen.
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import pytest
import qasync
from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication

from ide.app.background import pending_tasks
from ide.app.review import ReviewPane
from ide.app.theme import apply_theme
from ide.app.window import MainWindow
from ide.protocol.review import ChangeSetView
from tests.app.support import WindowFactory, close_window


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
        start: bool = True,
    ) -> MainWindow:
        window = MainWindow(workspace, backend_command=command, backend_env=env)
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


@pytest.fixture
def pane(qtbot: Any, review_changeset: ChangeSetView) -> ReviewPane:
    """A shown, interactive Review pane (1100×600) with the test module's ``review_changeset`` on it."""
    widget = ReviewPane()
    qtbot.addWidget(widget)
    widget.resize(1100, 600)
    widget.show()
    widget.set_session(review_changeset.session_id, review_changeset.cwd)
    widget.set_interactive(True)
    widget.set_changeset(review_changeset)
    return widget
