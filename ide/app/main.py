"""Entry point of the window: a QApplication driven by a qasync event loop, one MainWindow, an exit code."""

from __future__ import annotations

from ide.gcpolicy import quiet_imports, settle_heap, settle_run

# What the window imports lives as long as it does: the cycle collector need not walk it before the first
# frame (ide.gcpolicy; settle_heap looks at it once the first session is ready).
with quiet_imports():
    # PySide6's import hook looks at every module imported after shiboken6: installed first, it looks
    # cheaply (ide.app.pyside_hook).
    import shiboken6  # noqa: F401 (loads the hook install() changes)

    from ide.app import pyside_hook

    pyside_hook.install()

    import contextlib
    import logging
    import os
    import signal
    import sys
    from collections.abc import Coroutine
    from pathlib import Path
    from typing import TYPE_CHECKING, Any

    from PySide6.QtCore import QCoreApplication, QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from shiboken6 import isValid

    from ide.app.theme import apply_theme
    from ide.app.window import FIRST_FRAME_WAIT_MS, MainWindow
    from ide.client.agentproc import AgentChoice
    from ide.logs import setup_logging

if TYPE_CHECKING:
    import qasync

APP_NAME = "arbor"
ORGANIZATION = "arbor"

log = logging.getLogger(__name__)


def configure_application(app: QApplication, *, stylesheet: bool = True) -> None:
    """Names (so QSettings lands under ``arbor``), Fusion style and the stylesheet (``stylesheet=False``:
    not yet, :func:`run_gui` sets it once the window is built). The version is set after the first frame
    (:func:`run_gui`): reading it imports importlib.metadata and scans site-packages."""
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APP_NAME)
    # INI everywhere: one readable file per user instead of the registry or a binary plist.
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    apply_theme(app, stylesheet=stylesheet)


def _version() -> str:
    from ide.client.agentproc import client_version

    return client_version()


SMOKE_ENV = "ARBOR_SMOKE_TEST"
"""Set: the window quits with 0 once its backend session is ready, 3 after 60 s without (packaging)."""


def _smoke_test(window: MainWindow, app: QApplication) -> dict[str, int]:
    outcome = {"code": 3}

    def ready(*_args: object) -> None:
        meta = window.bridge.agent_meta
        sys.stdout.write(f"arbor smoke test: session ready (backend {meta.version if meta else '?'})\n")
        sys.stdout.flush()
        outcome["code"] = 0
        QTimer.singleShot(0, app.quit)

    def too_slow() -> None:
        sys.stderr.write("arbor smoke test: no session within 60 s\n")
        app.quit()

    window.bridge.sessionReady.connect(ready)
    QTimer.singleShot(60_000, too_slow)
    return outcome


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _close_once(loop: qasync.QEventLoop, app: QApplication) -> None:
    for ending in ENDING_SIGNALS:
        loop.remove_signal_handler(ending)
    app.closeAllWindows()


def _run_to_end(loop: qasync.QEventLoop, step: Coroutine[Any, Any, None]) -> None:
    """Run ``step`` on ``loop`` and return when it ends, with no event processed after it."""
    task = loop.create_task(step)
    task.add_done_callback(lambda _: loop.stop())
    loop.run_forever()
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.warning("stopping the backend failed: %s", task.exception())


async def _close(window: MainWindow) -> None:
    """Stop the agent, then (a foreign agent's) its shadow and Arbor's review backend; and the backends of
    the demo windows the start page opened."""
    import asyncio

    from ide.app.foreign.part import ForeignAgent
    from ide.app.start.part import StartPart

    demos = window.part(StartPart).demos
    stops = [
        demo.window.bridge.aclose() for demo in demos if demo.window is not None and isValid(demo.window)
    ]
    await asyncio.gather(window.part(ForeignAgent).stop(), *stops)
    for demo in demos:
        demo.remove()


def open_at_start(window: MainWindow, path: Path) -> bool:
    """Show ``path`` (``arbor --open``): an ``arbor eval`` report — its ``report.json`` or the folder
    holding it — in the Eval dock, anything else as a ``.arbor-tree.jsonl`` in the Search tree dock.
    False when it could not be opened (the dock says why)."""
    from ide.app.eval.part import EvalDock
    from ide.app.tree.part import TreeDock

    if path.is_dir() or path.suffix == ".json":
        return bool(window.part(EvalDock).open_report(path))
    return bool(window.part(TreeDock).open_file(path))


def build_window(
    workspace: Path, open_tree: Path | None = None, agent: AgentChoice | None = None
) -> MainWindow:
    """The window ``run_gui`` shows: on the start page, unless it opens a recording or a report."""
    window = MainWindow(workspace, agent=agent)
    if open_tree is not None:
        from ide.app.start.part import StartPart

        window.part(StartPart).leave()
    return window


def _event_loop(app: QApplication) -> qasync.QEventLoop:
    """qasync's loop over ``app``, the current event loop. Ctrl+C in the terminal closes the window like the
    Quit action (the loop wakes for signals); so do SIGTERM (a supervisor, `kill`) and SIGHUP (the terminal
    closed), once: the agents stop and their shadows go. A second one ends the process at once, and what it
    started ends with it (ide.lifetime)."""
    import asyncio

    import qasync

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, app.closeAllWindows)
        for ending in ENDING_SIGNALS:
            loop.add_signal_handler(ending, _close_once, loop, app)
    return loop


def run_gui(workspace: Path, open_tree: Path | None = None, agent: AgentChoice | None = None) -> int:
    """Open the window on ``workspace`` and run until it closes; returns the process exit code.

    ``open_tree`` is a ``.arbor-tree.jsonl`` file shown in the search-tree dock at start, or an ``arbor
    eval`` report shown in the Eval dock; ``agent`` the ACP agent the window drives (default: Arbor's
    backend).
    """
    setup_logging(logging.WARNING)
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "arbor"])
    assert isinstance(app, QApplication)
    configure_application(app, stylesheet=False)
    # The parts' modules (the registry imports them) and the widgets live as long as the window: no
    # collection walks them before the first frame either (ide.gcpolicy).
    with quiet_imports():
        window = build_window(workspace, open_tree, agent)
    # The stylesheet once the window is built, before it is shown: each widget is restyled once, where a
    # stylesheet already set restyled a subtree each time it was put into a parent (ide.app.theme).
    apply_theme(app)
    # The first frame shows the backend starting, as it is once that frame is on screen (unless the
    # workspace's settings need trust first: the start then shows it stopped while trust asks).
    window.bridge.announce_start()
    window.show()
    # Qt's own loop paints the first frame; asyncio and qasync (~18 ms of CPU) load once it is on screen,
    # and everything the window does after that frame (firstPainted and what waits for it) runs on the
    # qasync loop made then.
    if open_tree is not None:  # in the first frame, as Qt runs a zero timer before it (docs/traps.md)
        QTimer.singleShot(0, lambda: open_at_start(window, open_tree))
    painted = window.wait_for_first_paint()
    loop = _event_loop(app)
    smoke = _smoke_test(window, app) if os.environ.get(SMOKE_ENV) else None
    # Once the first session is ready everything start-up made (Qt wrappers, the ACP SDK's models) is
    # alive for good: freeze it, so the collector never walks it again during a live run.
    window.bridge.sessionReady.connect(lambda *_: settle_heap())
    from ide.app.tree.part import TreeDock

    window.part(TreeDock).runFinished.connect(lambda *_: settle_run())
    # Started from inside the loop (the first tasks need it running), once the first frame is on screen:
    # the backend's process, the workspace's listing and the parts' requests wait for it (docs/traps.md).
    window.start_after_first_frame(wait_ms=0 if not painted else FIRST_FRAME_WAIT_MS)
    window.firstPainted.connect(lambda: QCoreApplication.setApplicationVersion(_version()))
    with loop:
        # Until the application quits (last window closed, Quit, Ctrl+C, the smoke test). Not
        # run_until_complete: qasync 0.28 processes leftover events after it has unset the running
        # loop, and an ACP task resumed there fails ("Queue … is bound to a different event loop").
        loop.run_forever()
        # The window is gone but the backend may still be finishing: give it its graceful stop.
        _run_to_end(loop, _close(window))
    return smoke["code"] if smoke is not None else 0
