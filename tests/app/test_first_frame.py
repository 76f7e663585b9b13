"""What the window does before its first frame, seen from a real ``run_gui`` in a child process.

The window is an ACP client: LangChain and LangGraph belong to the backend's process and are never imported
here. The first frame waits for nothing it does not show (issue 32): the ACP SDK, the backend's process,
the workspace's listing (pathspec), the highlighter (Pygments), the workspace's settings and pydantic with
the wire models (``ide.protocol``, imported by the requests and handlers that use them) all come after it,
and the window still starts its backend then on its own.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QWidget

from ide.app.chat.part import ChatDock
from ide.app.eval.part import EvalDock
from ide.app.memory.part import MemoryDock
from ide.app.parts import Dock
from ide.app.sessions.part import SessionsDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from tests.support.window import ECHO_AGENT, WindowFactory, close_window

pytestmark = pytest.mark.window

NEVER_IN_THE_WINDOW = ("langchain", "langchain_core", "langgraph", "langsmith")
"""The backend's agent framework: the window process never imports it, before or after its first frame."""
AFTER_THE_FIRST_FRAME = ("acp", "pathspec", "pygments", "pydantic")
"""Loaded once the window is on screen: the ACP SDK (the backend's start), the workspace listing's ignore
rules, the code viewer's highlighter, and pydantic with the wire models (the parts subscribe to
notifications when the window starts, and build requests and read answers after it)."""
DEFERRED = ("eval", "memory", "sessions", "tree")
"""The docks a fresh window's first frame hides (Eval until it has a report, Memory and Sessions behind the
chat's tab, the Search tree behind the review's): their panels are built once that frame is on screen, or
when they are shown or read."""
DEFERRED_MODULES = ("ide.app.eval.panel", "ide.app.tree.view")
"""What only those panels import (the Eval panel's chart and tables, the tree's scene and inspector)."""

DIALOG_MODULES = ("ide.app.chat.permission", "ide.app.trust.dialog")
"""What only the permission and trust dialogs import."""
WIRE_LATER = ("ide.protocol.eval", "ide.protocol.memory", "ide.protocol.workflow")
"""Wire models only requests and panels after the first frame use (eval reports, memory, workflows)."""
CLIENT_LATER = ("ide.client.events", "ide.client.fold", "ide.client.auth", "tomllib", "uuid")
"""The session's events and their fold (with the first update or prompt), an agent's sign-in (with the first
agent that asks), uuid (with the first plain-ACP search tree): ~10 ms of the first frame's CPU before."""

LOOP_LATER = ("asyncio", "qasync", "concurrent", "ssl", "socket")
"""The event loop: Qt's own paints the first frame, qasync's (with asyncio, its sockets and thread pools:
~18 ms of CPU) is made once that frame is on screen, and what waits for the frame runs on it."""

STDLIB_LATER = ("html", "difflib", "hashlib", "datetime")
"""Imported by the functions that use them (rich text escaped, a hunk's diff and id, a session's or a
memory's time; json too, which the child here imports itself): ~5 ms of the first frame's CPU before."""

CHILD = textwrap.dedent(
    """
    import gc, json, sys
    from pathlib import Path
    from PySide6.QtCore import QEvent, QObject, QSettings
    from PySide6.QtWidgets import QApplication, QMainWindow

    full_passes = []  # the collector's full passes, counted from the start

    def count(phase, info):
        if phase == "start" and info["generation"] == 2:
            full_passes.append(1)

    gc.callbacks.append(count)

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

    def deferred(window):
        return {name: part.built for name, part in window.docks.items() if getattr(part, "deferred", False)}

    def report(window, state):
        if state == "ready" and "ready" not in seen:
            seen["ready"] = sorted(sys.modules)
            seen["built_later"] = deferred(window)
            print(json.dumps(seen), flush=True)
            window.close()

    class FirstPaint(QObject):
        # The first paint of anything in the main window (the window itself paints first: bench/startup.py).
        def eventFilter(self, obj, event):
            if "paint" not in seen and event.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
                window = obj.window()
                if isinstance(window, QMainWindow):
                    seen["paint"] = sorted(sys.modules)
                    seen["full_passes"] = len(full_passes)
                    seen["dialogs"] = sorted(type(d).__name__ for d in window.findChildren(QDialog))
                    seen["built"] = built_wire_models()
                    seen["state"] = str(window.bridge.state)
                    seen["spawned"] = window.bridge.process is not None
                    seen["built_at_paint"] = deferred(window)
                    window.bridge.stateChanged.connect(lambda state: report(window, state))
            return False

    from PySide6.QtWidgets import QDialog, QWidget
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
    assert _tops(seen["paint"], LOOP_LATER) == []
    assert _tops(seen["paint"], STDLIB_LATER) == []
    assert {"asyncio", "qasync"} <= set(_tops(seen["ready"], LOOP_LATER))
    # The window's modules import with the collector off and are frozen after (ide.gcpolicy.quiet_imports):
    # no full collection walks them before the first frame (one did, at ~45 ms of collections in all).
    assert seen["full_passes"] == 0
    # No dialog is made for it (permission, trust, symbol search, the locations picker): each is made
    # when first asked for, and their own modules load then.
    assert seen["dialogs"] == []
    assert set(DIALOG_MODULES).isdisjoint(seen["paint"])
    assert set(WIRE_LATER).isdisjoint(seen["paint"])
    assert set(CLIENT_LATER).isdisjoint(seen["paint"])
    # The workspace's settings are read after it (building their validators took ~0.1 s of CPU), in time
    # for the backend's start.
    assert "ide.settings" not in seen["paint"] and "ide.settings" in seen["ready"]
    # The hidden docks are there (their tabs, their View-menu entries) but their panels are not built yet…
    assert seen["built_at_paint"] == dict.fromkeys(DEFERRED, False)
    assert set(DEFERRED_MODULES).isdisjoint(seen["paint"])  # they load with their panels
    # …and they are once the frame is on screen, without being asked for.
    assert seen["built_later"] == dict.fromkeys(DEFERRED, True)
    assert set(DEFERRED_MODULES) <= set(seen["ready"])
    assert "ide.protocol.memory" in seen["ready"]  # with the Memory panel
    # Of ~70 wire models none is built (the Review pane's empty history is constructed, not validated).
    assert seen["built"] == []
    # The first frame shows the backend starting (what the window is about to do), but nothing is spawned.
    assert seen["state"] == "starting" and not seen["spawned"], "the backend started before the first frame"
    # …and then the window started its backend by itself, and loaded what the start needed.
    assert {"acp", "pydantic"} <= set(_tops(seen["ready"], AFTER_THE_FIRST_FRAME))
    assert _tops(seen["paint"] + seen["ready"], NEVER_IN_THE_WINDOW) == []


def _deferred(window: MainWindow) -> dict[str, bool]:
    docks = [(name, part) for name, part in window.docks.items() if isinstance(part, Dock)]
    return {name: part.built for name, part in docks if part.deferred}


def test_the_hidden_docks_are_built_once_the_first_frame_is_on_screen(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, start=False)
    assert _deferred(window) == dict.fromkeys(DEFERRED, False)  # shown, not painted yet
    with qtbot.waitSignal(window.firstPainted):
        pass
    qtbot.waitUntil(lambda: all(_deferred(window).values()))
    for name in DEFERRED:
        part = window.docks[name]
        content = getattr(part, "view" if name == "tree" else "panel")
        assert isinstance(part, Dock) and part.dock.widget() is part.widget is content


def _on_screen(widget: QWidget) -> bool:
    """Painted where the user sees it (a dock in a tab behind another is "visible" to Qt, but not this)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def test_a_deferred_dock_opens_from_its_menu_action_with_its_content(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, start=False)
    window.firstPainted.disconnect(window.build_deferred)  # only what opens them here builds them
    assert _deferred(window) == dict.fromkeys(DEFERRED, False)
    eval_dock, memory, sessions, tree = (window.docks[name] for name in DEFERRED)
    assert all(isinstance(part, Dock) for part in (eval_dock, memory, sessions, tree))
    # View → Eval (no report yet) adds its tab, and the tab raised shows the real panel, which says how
    # to get a report.
    view = {action.text(): action for action in window.ctx.menus["view"].actions()}
    view["Eval"].trigger()
    qtbot.waitUntil(lambda: not window.part(EvalDock).dock.isHidden())
    window.part(EvalDock).dock.raise_()
    # Built as it comes into sight, before any paint: never the empty placeholder.
    assert isinstance(eval_dock, Dock) and eval_dock.built
    qtbot.waitUntil(lambda: _on_screen(window.part(EvalDock).panel))
    assert window.part(EvalDock).dock.widget() is window.part(EvalDock).panel
    assert window.part(EvalDock).panel.message.text().startswith("No report open.")
    # File → Open Session… (Ctrl+Shift+O): the Sessions tab comes up with its list, built on the way.
    assert isinstance(sessions, Dock) and not sessions.built
    assert sessions.list_action.shortcut() == QKeySequence("Ctrl+Shift+O")  # type: ignore[attr-defined]
    sessions.list_action.trigger()  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: _on_screen(window.part(SessionsDock).panel.list))
    assert window.part(SessionsDock).dock.widget() is window.part(SessionsDock).panel
    # The Memory tab raised in front of the chat: built before it paints, its search box there.
    assert isinstance(memory, Dock) and not memory.built
    window.part(MemoryDock).dock.raise_()
    assert memory.built
    qtbot.waitUntil(lambda: _on_screen(window.part(MemoryDock).panel.query))
    assert window.part(MemoryDock).dock.widget() is window.part(MemoryDock).panel
    # View → Maximise Search Tree (Ctrl+Shift+T): the tree takes the window, its view built on the way.
    assert isinstance(tree, Dock) and not tree.built
    window.maximise_action.trigger()
    assert tree.built
    qtbot.waitUntil(lambda: _on_screen(window.part(TreeDock).view))
    assert window.part(TreeDock).dock.widget() is window.part(TreeDock).view


def test_a_restored_layout_shows_a_deferred_dock_built_in_the_first_frame(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    first = make_window(git_workspace, start=False)
    first.firstPainted.disconnect(first.build_deferred)
    first.part(MemoryDock).dock.raise_()
    first.docks["eval"].show()  # type: ignore[attr-defined]
    qtbot.waitUntil(
        lambda: _on_screen(first.part(EvalDock).panel) and _on_screen(first.part(MemoryDock).panel)
    )
    close_window(qtbot, first)

    second = make_window(git_workspace, start=False)
    second.firstPainted.disconnect(second.build_deferred)
    # Shown (not yet painted): what the restored layout shows is built, what it hides is not.
    assert _deferred(second) == {"eval": True, "memory": True, "sessions": False, "tree": False}
    qtbot.waitUntil(
        lambda: _on_screen(second.part(EvalDock).panel) and _on_screen(second.part(MemoryDock).panel.query)
    )
    assert not _on_screen(second.part(ChatDock).panel)  # the Memory tab is the one raised, as it was left
    assert second.part(EvalDock).dock.widget() is second.part(EvalDock).panel
