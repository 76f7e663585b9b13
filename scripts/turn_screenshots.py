"""The real window after a first turn, after Apply and after Roll back, saved as three PNGs.

    python scripts/turn_screenshots.py [--output-dir DIR] [--size 1280x800]
    xvfb-run -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb python scripts/turn_screenshots.py

It builds a small git repository in a temporary directory, starts the real backend with a scripted model
whose turn edits ``hello.py`` and creates ``made_by_agent.py``, and grabs the window once the turn has
ended (``after-turn.png``), once Accept all and Apply have written both files (``after-apply.png``) and
once the batch is rolled back from the History tab (``after-rollback.png``). Each step prints one JSON
line with what the window shows (the Review dock's size, its status line, the status bar). Nothing
outside the temporary directory is touched except the pictures, written to ``--output-dir`` or by default
to a new temporary directory: the backend's data and config dirs and the window's QSettings all point into
the temporary directory. Offscreen unless ``QT_QPA_PLATFORM`` says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/screenshot.py: the window's harness

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QPushButton
from screenshot import shoot_scripted, shots_args

from ide.app.background import next_emission
from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.start.part import StartPart
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow

TIMEOUT_S = 60.0
QUESTION = "Greet the user by name, and add a module that says who made it."
FILES = {"hello.py": 'print("hello")\n', "README.md": "# hello\n\nSays hello.\n"}
GREETING = 'import sys\n\nname = sys.argv[1] if len(sys.argv) > 1 else "arbor"\nprint(f"hello, {name}")\n'
SCRIPT = [
    {
        "thinking": "hello.py prints a fixed greeting; I will read it first.",
        "tool_calls": [{"name": "read_file", "args": {"path": "hello.py"}}],
    },
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {
                    "path": "hello.py",
                    "old_text": 'print("hello")\n',
                    "new_text": GREETING,
                },
            },
            {
                "name": "create_file",
                "args": {"path": "made_by_agent.py", "content": 'MADE_BY = "the agent"\n'},
            },
        ]
    },
    {"content": "`hello.py` now greets by name and **made_by_agent.py** says who made it. Review them."},
]
IDENTITY = {
    "GIT_AUTHOR_NAME": "Arbor demo",
    "GIT_AUTHOR_EMAIL": "demo@arbor.invalid",
    "GIT_COMMITTER_NAME": "Arbor demo",
    "GIT_COMMITTER_EMAIL": "demo@arbor.invalid",
}


def make_workspace(root: Path) -> Path:
    workspace = root / "hello"
    workspace.mkdir()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    env = {**os.environ, **IDENTITY}
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "Say hello"]):
        subprocess.run(command, cwd=workspace, env=env, check=True)
    return workspace


def settle() -> None:
    """Deliver posted events (layout requests, deferred resizes) so a grab shows the settled window."""
    for _ in range(5):
        QCoreApplication.sendPostedEvents()
        QCoreApplication.processEvents()


async def shoot(window: MainWindow, path: Path, step: str) -> None:
    """Let the layout settle, grab the window to ``path`` and print what it shows."""
    await asyncio.sleep(0.5)  # the docks' deferred resizes and the last paints (a script, not a test)
    settle()
    pane, dock = window.part(ReviewDock).pane, window.part(ReviewDock).dock
    buttons = [button for button in pane.findChildren(QPushButton) if button.isVisible()]
    cut = [button.text() for button in buttons if button.width() < button.minimumSizeHint().width()]
    trees = list(window.part(TreeDock).view.runs.values())
    root = trees[-1].nodes[trees[-1].root] if trees and trees[-1].root else None
    if not window.grab().save(str(path)):
        raise RuntimeError(f"could not write {path}")
    print(
        json.dumps(
            {
                "step": step,
                "path": str(path),
                "maximised": window.maximised.objectName() if window.maximised else None,
                "review_dock": [dock.width(), dock.height()] if dock.isVisible() else None,
                "buttons_cut": cut,
                "review_status": pane.result_label.text() if pane.result_label.isVisible() else "",
                "backend": window.status.state.property("state"),
                "model_card": window.part(StartPart).page.verdict.text(),
                "tree_root": root.status if root is not None else None,
            }
        ),
        flush=True,
    )


async def run(window: MainWindow, out: Path) -> None:
    bridge, review, pane = window.bridge, window.part(ReviewDock).client, window.part(ReviewDock).pane
    ready = asyncio.ensure_future(next_emission([bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready

    changes = asyncio.ensure_future(next_emission([review.changesetReceived], TIMEOUT_S))
    finished = asyncio.ensure_future(next_emission([bridge.turnFinished], TIMEOUT_S))
    window.send_prompt(QUESTION)
    await finished
    await changes
    window.part(ChatDock).panel.flush()
    await shoot(window, out / "after-turn.png", "after a first turn")

    decided = asyncio.ensure_future(next_emission([review.changesetReceived], TIMEOUT_S))
    pane.accept_all_button.click()
    await decided
    applied = asyncio.ensure_future(next_emission([review.applied, review.failed], TIMEOUT_S))
    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    pane.apply_button.click()
    index, result, *_ = await applied
    if index == 1:
        raise RuntimeError(f"Apply failed: {result}")
    await history
    await shoot(window, out / "after-apply.png", "after Apply")

    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    pane.tabs.setCurrentIndex(pane.tabs.indexOf(pane.history_tree.parentWidget()))
    await history
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    rolled = asyncio.ensure_future(next_emission([review.rolledBack, review.failed], TIMEOUT_S))
    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    pane.rollback_button.click()  # asks first
    assert pane.rollback_confirm is not None
    next(b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back").click()
    index, result, *_ = await rolled
    if index == 1:
        raise RuntimeError(f"Roll back failed: {result}")
    await history
    pane.tabs.setCurrentIndex(0)  # back to Changes, where the status line is
    await shoot(window, out / "after-rollback.png", "after Roll back")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output_dir`` defaults to a new temporary directory, never the checkout."""
    return shots_args(argv, __doc__.splitlines()[0], "arbor-turn-shots")


def main(argv: list[str] | None = None) -> int:
    return shoot_scripted(parse_args(argv), "arbor-turn-shots", SCRIPT, make_workspace, run, IDENTITY)


if __name__ == "__main__":
    raise SystemExit(main())
