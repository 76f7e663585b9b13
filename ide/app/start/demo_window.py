"""The scripted demo turn in a window of its own: the LATS sample's task on a throwaway git copy of its
workspace, its scripted model, data and config dirs of its own; removed when the window closes.

The same window carries out Continue from here on the recorded sample (:class:`SampleContinuation`): on
its copy of the sample's project, with the model of the window it was asked in, the recording opened in
its Search tree and the continuation forked from it (the recording's events sent with the request).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from ide.app.background import run_blocking, spawn
from ide.app.start.demo import DEMO_TASK, SAMPLE_TREE, demo_env, demo_workspace
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow

if TYPE_CHECKING:
    import asyncio

    from ide.protocol.tree import TreeEvent


@dataclass(frozen=True)
class SampleContinuation:
    """Continue from here on a node of the recorded sample, asked in another window."""

    events: list[TreeEvent]
    """The recording's events (its run's), sent with the fork."""
    node_id: str
    hint: str
    mode: str | None
    """The mode chosen (None: the run's own, LATS)."""
    env: dict[str, str] = field(default_factory=dict)
    """The model to continue with (``ARBOR_MODEL`` and its server's settings), from the asking window."""


class DemoRun(QObject):
    """One demo: :meth:`start` makes the workspace off the UI thread, opens the window and sends the task
    once its session is ready. :attr:`window` is the demo's window (None until it exists)."""

    opened = Signal(object)
    """The demo's MainWindow, shown and starting."""
    failed = Signal(str)
    """Why the demo could not start (the workspace could not be made)."""

    def __init__(
        self, samples: Path, parent: QObject | None = None, continuation: SampleContinuation | None = None
    ) -> None:
        super().__init__(parent)
        self.samples = samples
        self.continuation = continuation
        """Continue the recorded sample from a node instead of running the scripted task."""
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
        env = demo_env(self.samples, self.root)
        title = f"Demo: {workspace.name} — Arbor"
        if self.continuation is not None:  # the asking window's model, not the sample's script
            env.pop("ARBOR_MODEL")
            env.update(self.continuation.env)
            title = f"Demo: {workspace.name}, continued from {self.continuation.node_id} — Arbor"
        window = MainWindow(workspace, backend_env=env)
        window.setWindowTitle(title)
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
        if self.continuation is None:
            window.send_prompt(DEMO_TASK)
            return
        trees, asked = window.part(TreeDock), self.continuation
        if not asked.events or not trees.open_file(self.samples / SAMPLE_TREE):
            self.failed.emit(f"The recorded sample could not be opened in the demo window ({SAMPLE_TREE}).")
            return
        key = f"{SAMPLE_TREE} · {asked.events[0].run_id}"  # as the Search tree names a file's run
        trees.steering.fork(key, asked.node_id, asked.hint, asked.mode)

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
