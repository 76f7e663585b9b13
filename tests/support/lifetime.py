"""Processes started as a user starts them, to see what is left after their end (issue 51): the window's
process (``run_gui``, offscreen) driven from its command line, any command with its output piped, and the
check that a signal to one leaves none of the processes below it (recorded from /proc just before) and
which shadows and scratch directories are left in a temporary directory."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from tests.support.procs import command_line, descendants, left_after

GONE_WITHIN_S = 5.0
START_TIMEOUT_S = 120
"""How long a start may take (a window, its backend, an agent) on a loaded machine."""

WINDOW = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from ide.client.agentproc import resolve_agent

    workspace, settings, task, agent = sys.argv[1:5]
    app = QApplication(["arbor"])
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, settings)

    def when_ready():
        window = next(w for w in app.topLevelWidgets() if w.objectName() == "mainWindow")

        def ready(*_):
            if task:
                window.send_prompt(task)
                print("prompted", flush=True)
            else:
                window.close()

        window.bridge.sessionReady.connect(ready)

    QTimer.singleShot(0, when_ready)
    from ide.app.main import run_gui
    sys.exit(run_gui(Path(workspace), agent=resolve_agent(agent, {}) if agent else None))
    """
)
"""The window's process as ``arbor`` runs it (``run_gui``): once its session is ready it sends the task, or
closes when there is none; ``agent`` is an ``--agent`` command line ('' for Arbor's own)."""


def leftovers(temp: Path) -> list[str]:
    """Shadows and scratch directories in ``temp`` (not git's shared empty hooks folder, made once)."""
    return sorted(p.name for p in temp.iterdir() if p.name.startswith("arbor-") and "no-hooks" not in p.name)


def start(argv: list[str], **kw: Any) -> subprocess.Popen[str]:
    """``argv`` started with its output piped (text)."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def read_until(process: subprocess.Popen[str], marker: str) -> None:
    """Read the process's stdout up to a line holding ``marker`` (pytest's timeout bounds it)."""
    assert process.stdout is not None
    for line in process.stdout:
        if marker in line:
            return
    _, err = process.communicate(timeout=30)
    raise AssertionError(f"{marker!r} never came; exit {process.returncode}: {err[-3000:]}")


def signal_and_check(process: subprocess.Popen[str], sig: signal.Signals, *programs: str) -> None:
    """Record every process below ``process`` once each of ``programs`` is among them (the children
    mid-work: a shell's ``sleep … &`` may not have started its program yet), send ``sig``, and find none
    of them, nor ``process``, left after 5 s."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        recorded = descendants(process.pid)
        lines = [command_line(pid) for pid in recorded]
        missing = [program for program in programs if not any(program in line for line in lines)]
        if not missing:
            break
        assert time.monotonic() < deadline, f"no {missing} below the parent: {lines}"
        time.sleep(0.05)  # a bounded poll: nothing tells when another process has started its program
    process.send_signal(sig)
    try:
        process.communicate(timeout=GONE_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"the parent did not end within {GONE_WITHIN_S:g} s of {sig.name}") from None
    left = left_after(recorded, GONE_WITHIN_S)
    for line in left:  # never leave them to the next test
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not left, f"left {GONE_WITHIN_S:g} s after {sig.name} to the parent: {left}"


def window(workspace: Path, tmp_path: Path, task: str, agent: str = "") -> subprocess.Popen[str]:
    """The window's process on ``workspace`` (offscreen, its layout under ``tmp_path``), driving ``agent``
    (an ``--agent`` command line; '' for Arbor's): it sends ``task`` once ready, or closes without one."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    argv = [sys.executable, "-c", WINDOW, str(workspace), str(tmp_path / "qsettings"), task, agent]
    return start(argv, env=env)
