"""``run_gui`` end to end in a child process: the real qasync loop, the exit code, no backend left behind."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.window import ECHO_AGENT

pytestmark = pytest.mark.window

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication(["arbor"])
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])

    def close_when_ready():
        window = next(w for w in app.topLevelWidgets() if w.objectName() == "mainWindow")
        def on_state(state):
            if state == "ready":
                print(window.bridge.pid, flush=True)
                window.close()
        window.bridge.stateChanged.connect(on_state)

    QTimer.singleShot(0, close_when_ready)
    from ide.app.main import run_gui
    sys.exit(run_gui(Path(sys.argv[1])))
    """
)


def test_run_gui_opens_reaches_ready_and_stops_its_backend(git_workspace: Path, tmp_path: Path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ARBOR_BACKEND_COMMAND": shlex.join(ECHO_AGENT)}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(git_workspace), str(tmp_path / "qsettings")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    backend_pid = int(result.stdout.split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(backend_pid, 0)  # stopped with the window, not orphaned
    assert list((tmp_path / "qsettings").rglob("*.ini")), "the layout was saved on close"


def test_smoke_test_mode_exits_0_with_the_real_backend_and_no_traceback(git_workspace: Path, tmp_path: Path):
    """What ``packaging/build.py`` runs against the bundle, from source: ``arbor`` with its own backend."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "ARBOR_SMOKE_TEST": "1",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),  # the window's QSettings, not the developer's
    }
    result = subprocess.run(
        [sys.executable, "-m", "ide", str(git_workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    assert "arbor smoke test: session ready" in result.stdout
    # Quitting right after the session opened used to log the ACP SDK's "Send loop failed" traceback.
    assert "Traceback" not in result.stderr, result.stderr
