"""What the window does before its first frame, seen from a real ``run_gui`` in a child process.

The window is an ACP client: LangChain and LangGraph belong to the backend's process and are never imported
here. The first frame waits for nothing it does not show (issue 32): the ACP SDK, the backend's process,
the workspace's listing (pathspec), the highlighter (Pygments) and the wire models' validators
(``ide.protocol``'s models build theirs at first use) all come after it, and the window still starts its
backend then on its own.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.window import ECHO_AGENT

pytestmark = pytest.mark.window

NEVER_IN_THE_WINDOW = ("langchain", "langchain_core", "langgraph", "langsmith")
"""The backend's agent framework: the window process never imports it, before or after its first frame."""
AFTER_THE_FIRST_FRAME = ("acp", "pathspec", "pygments")
"""Loaded once the window is on screen: the ACP SDK (the backend's start), the workspace listing's ignore
rules and the code viewer's highlighter."""

CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from PySide6.QtCore import QEvent, QObject, QSettings
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication(["arbor"])
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])
    seen = {}

    def built_wire_models():
        from pydantic import BaseModel
        found, todo = [], list(BaseModel.__subclasses__())
        while todo:
            cls = todo.pop()
            todo += cls.__subclasses__()
            if cls.__module__.startswith("ide.protocol") and cls.__pydantic_complete__:
                found.append(f"{cls.__module__}.{cls.__qualname__}")
        return sorted(set(found))

    def report(window, state):
        if state == "ready" and "ready" not in seen:
            seen["ready"] = sorted(sys.modules)
            print(json.dumps(seen), flush=True)
            window.close()

    class FirstPaint(QObject):
        # The bench's probe (bench/startup.py): the first paint of anything in the main window.
        def eventFilter(self, obj, event):
            if "paint" not in seen and event.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
                window = obj.window()
                if isinstance(window, QMainWindow):
                    seen["paint"] = sorted(sys.modules)
                    seen["built"] = built_wire_models()
                    seen["state"] = str(window.bridge.state)
                    seen["spawned"] = window.bridge.process is not None
                    window.bridge.stateChanged.connect(lambda state: report(window, state))
            return False

    from PySide6.QtWidgets import QWidget
    first_paint = FirstPaint()
    app.installEventFilter(first_paint)
    from ide.app.main import run_gui
    sys.exit(run_gui(Path(sys.argv[1])))
    """
)


def _tops(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted({module.split(".")[0] for module in modules} & set(names))


def test_the_first_frame_waits_for_nothing_it_does_not_show(git_workspace: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "ARBOR_BACKEND_COMMAND": shlex.join(ECHO_AGENT),
        "ARBOR_CONFIG_DIR": str(tmp_path / "config"),
        "ARBOR_DATA_DIR": str(tmp_path / "data"),
    }
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(git_workspace), str(tmp_path / "qsettings")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])

    assert _tops(seen["paint"], AFTER_THE_FIRST_FRAME) == []
    # Of ~70 wire models only the one the first frame shows is built: the Review pane's empty history.
    assert seen["built"] == ["ide.protocol.review.HistoryResult"]
    # The first frame shows the backend starting (what the window is about to do), but nothing is spawned.
    assert seen["state"] == "starting" and not seen["spawned"], "the backend started before the first frame"
    # …and then the window started its backend by itself, and loaded what the start needed.
    assert "acp" in _tops(seen["ready"], AFTER_THE_FIRST_FRAME)
    assert _tops(seen["paint"] + seen["ready"], NEVER_IN_THE_WINDOW) == []
