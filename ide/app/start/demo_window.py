"""The scripted demo turn in a window of its own: the LATS sample's task on a throwaway git copy of its
workspace, its scripted model, data and config dirs of its own; removed when the window closes."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ide.app.background import run_blocking, spawn
from ide.app.start.demo import DEMO_TASK, demo_env, demo_workspace
from ide.app.window import MainWindow


class DemoRun(QObject):
    """One demo: :meth:`start` makes the workspace off the UI thread, opens the window and sends the task
    once its session is ready. :attr:`window` is the demo's window (None until it exists)."""

    opened = Signal(object)
    """The demo's MainWindow, shown and starting."""
    failed = Signal(str)
    """Why the demo could not start (the workspace could not be made)."""

    def __init__(self, samples: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.samples = samples
        self.window: MainWindow | None = None
        self.root = Path(tempfile.mkdtemp(prefix="arbor-demo-"))

    def start(self) -> None:
        spawn(self._start(), name="scripted demo")

    async def _start(self) -> None:
        try:
            workspace = await run_blocking(demo_workspace, self.samples, self.root)
        except (OSError, subprocess.SubprocessError) as exc:
            self.failed.emit(f"The demo's workspace could not be made in {self.root}: {exc}")
            self.remove()
            return
        window = MainWindow(workspace, backend_env=demo_env(self.samples, self.root))
        window.setWindowTitle(f"Demo: {workspace.name} — Arbor")
        self.window = window
        window.bridge.sessionReady.connect(self._ready)
        window.closed.connect(self._closed)
        window.show()
        window.start()
        self.opened.emit(window)

    def _ready(self, _session_id: str, replayed: bool) -> None:
        window = self.window
        if window is None or replayed:
            return
        window.bridge.sessionReady.disconnect(self._ready)  # one task per demo
        window.send_prompt(DEMO_TASK)

    def _closed(self) -> None:
        process = self.window.bridge.process if self.window is not None else None
        if process is None or process.returncode is not None:
            self.remove()
        else:  # the backend may still write to its data dir until it is gone
            # Waited on here, not through the bridge's ``stopped``: the closed window (and its bridge) may
            # be deleted before the bridge has said so, and the copy would be left behind.
            spawn(self._remove_once_gone(process), name="remove the demo")

    async def _remove_once_gone(self, process: asyncio.subprocess.Process) -> None:
        await process.wait()
        self.remove()

    def remove(self) -> None:
        """Delete the demo's directory (workspace, data, config)."""
        shutil.rmtree(self.root, ignore_errors=True)
