"""Steering from the Search tree (issue 48), saved as PNGs: a node's context menu, the Continue from here
dialog, and a session of two linked runs (the runs list open, then the origin node after Go to origin).

    python scripts/steer_screenshots.py [--output-dir DIR] [--size 1280x800]
    xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb python scripts/steer_screenshots.py

It builds a small git repository in a temporary directory and starts the real backend with a scripted
model: a LATS run makes greet() say Hi (n1 → n2 → n4), then the script continues from n2 in ReAct with a
hint. The menu and the dialog are separate windows, so the pictures are grabs of the whole screen (under
Xvfb; offscreen they show the main window only). Each step prints one JSON line with what the window
shows. Nothing outside the temporary directory is touched except the pictures, written to
``--output-dir`` or by default to a new temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/screenshot.py: the window's harness

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QContextMenuEvent, QGuiApplication
from PySide6.QtWidgets import QApplication
from screenshot import shoot_scripted, shots_args

from ide.app.background import next_emission
from ide.app.chat.part import ChatDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow

TIMEOUT_S = 60.0
TASK = "Make greet say Hi"
HINT = "Keep Hi, and say it in the README too."
FILES = {
    "pkg/__init__.py": "",
    "pkg/greet.py": 'def greet(name):\n    return f"Hello, {name}!"\n',
    "README.md": "# demo\n\nSays hello.\n",
}


def expand(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "lats.expansion",
        "content": f"I call {name}.",
        "tool_calls": [{"name": name, "args": args}],
    }


def evaluate(score: float, *, solution: bool = False) -> dict[str, Any]:
    verdict = {"score": score, "reflection": "ok", "is_solution": solution}
    return {"role": "lats.evaluation", "content": json.dumps(verdict)}


SCRIPT = [
    expand("edit_file", {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}),
    expand("read_file", {"path": "pkg/greet.py"}),
    evaluate(6),
    evaluate(3),
    {"role": "lats.expansion", "content": "Changed the greeting to Hi."},
    {"role": "lats.expansion", "content": "Greeting now says Hi."},
    evaluate(9, solution=True),
    evaluate(8, solution=True),
    # the continuation from n2, in ReAct, with the hint
    {
        "thinking": "The greeting says Hi on this branch; the README still says hello.",
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {"path": "README.md", "old_text": "Says hello.", "new_text": "Says hi."},
            }
        ],
    },
    {"content": "greet() says Hi and the README says so too."},
]
ENV = {
    "ARBOR_AGENT_ARCHITECTURE": "lats",
    "ARBOR_LATS_EXPANSION_WIDTH": "2",
    "ARBOR_LATS_BEAM_WIDTH": "1",
    "GIT_AUTHOR_NAME": "Arbor demo",
    "GIT_AUTHOR_EMAIL": "demo@arbor.invalid",
    "GIT_COMMITTER_NAME": "Arbor demo",
    "GIT_COMMITTER_EMAIL": "demo@arbor.invalid",
}


def make_workspace(root: Path) -> Path:
    workspace = root / "greeter"
    for name, text in FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    env = {**os.environ, **ENV}
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "Say hello"]):
        subprocess.run(command, cwd=workspace, env=env, check=True)
    return workspace


def settle() -> None:
    for _ in range(5):
        QCoreApplication.sendPostedEvents()
        QCoreApplication.processEvents()


async def shoot(window: MainWindow, path: Path, step: str, **facts: Any) -> None:
    """Let the layout settle, grab the screen (popups and dialogs included) to ``path``, print facts."""
    await asyncio.sleep(0.6)  # the last paints and a popup's show (a script, not a test)
    settle()
    screen = window.screen() or QGuiApplication.primaryScreen()
    picture = screen.grabWindow(0)
    if picture.isNull() or QGuiApplication.platformName() == "offscreen":
        picture = window.grab()  # no screen to grab offscreen: the main window alone
    if not picture.save(str(path)):
        raise RuntimeError(f"could not write {path}")
    print(json.dumps({"step": step, "path": str(path), **facts}, ensure_ascii=False), flush=True)


async def run(window: MainWindow, out: Path) -> None:
    bridge = window.bridge
    window.move(0, 0)
    ready = asyncio.ensure_future(next_emission([bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready
    dock, chat = window.part(TreeDock), window.part(ChatDock)
    view = dock.view
    finished = asyncio.ensure_future(next_emission([bridge.turnFinished], TIMEOUT_S))
    window.send_prompt(TASK)
    await finished
    await asyncio.sleep(0.3)
    (origin,) = view.runs
    window.maximise(dock.dock, (chat.dock,))
    await asyncio.sleep(0.5)  # the docks take their new sizes before a node's place is read
    settle()

    # 1. The context menu of n2 (the edit), opened by a right-click on it.
    view.select_run(origin)
    view.flush()
    viewport = view.graphics.viewport()
    pos = view.graphics.mapFromScene(view.scene_pos("n2"))
    QApplication.sendEvent(
        viewport, QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, viewport.mapToGlobal(pos))
    )
    menu = view.node_actions.menu
    if menu is None:
        raise RuntimeError("no context menu on n2")
    menu.setActiveAction(view.node_actions.actions["continue"])
    items = [
        {"text": a.text(), "key": a.shortcut().toString(), "enabled": a.isEnabled(), "tip": a.toolTip()}
        for a in menu.actions()
        if not a.isSeparator()
    ]
    await shoot(window, out / "context-menu.png", "context menu on n2", menu=items)
    menu.close()

    # 2. Continue from here…: the hint and the mode.
    view.node_actions.actions["continue"].trigger()
    dialog = dock.steering.dialog
    if dialog is None:
        raise RuntimeError("no Continue dialog")
    dialog.hint_box.setPlainText(HINT)
    dialog.mode_box.setCurrentIndex(dialog.mode_box.findData("react"))
    modes = [dialog.mode_box.itemText(i) for i in range(dialog.mode_box.count())]
    await shoot(
        window, out / "hint-dialog.png", "the hint dialog", node=dialog.node_label.text(), modes=modes
    )

    # 3. The continued run: drawn with its origin, listed under it.
    said: list[str] = []
    dock.steering.said.connect(said.append)
    forked = asyncio.ensure_future(next_emission([dock.steering.forked], TIMEOUT_S))
    finished = asyncio.ensure_future(next_emission([bridge.turnFinished], TIMEOUT_S))
    dialog.continue_button.click()
    try:
        await forked
    except Exception as exc:
        raise RuntimeError(f"Continue from here did not go: {said}") from exc
    await finished
    await asyncio.sleep(0.3)
    chat.panel.flush()
    continued = next(key for key in view.runs if key != origin)
    window.maximise(dock.dock, (chat.dock,))
    dock.show()  # the turn's end raised the Review (it left changes): the tree on top again
    await asyncio.sleep(0.5)
    settle()
    view.select_run(continued)
    view.flush()
    combo = view.run_combo
    listed = [combo.itemText(i) for i in range(combo.count())]
    combo.showPopup()
    await shoot(
        window,
        out / "linked-runs.png",
        "two linked runs",
        runs=listed,
        origin=view.node_actions.origin_bar.text(),
        transcript_has_hint=HINT in chat.panel.transcript(),
    )
    combo.hidePopup()

    # 4. Go to origin: the first run, n2 selected.
    view.node_actions.go_to_origin()
    await shoot(
        window, out / "origin.png", "after Go to origin", shown=view.current, selected=view.selected_id
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output_dir`` defaults to a new temporary directory, never the checkout."""
    return shots_args(argv, __doc__.splitlines()[0], "arbor-steer-shots")


def main(argv: list[str] | None = None) -> int:
    return shoot_scripted(parse_args(argv), "arbor-steer-shots", SCRIPT, make_workspace, run, ENV)


if __name__ == "__main__":
    raise SystemExit(main())
