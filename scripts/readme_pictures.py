"""Make the README's window and Search tree pictures from one real LATS run in the real window.

    xvfb-run -a python scripts/readme_pictures.py [--output-dir DIR] [--size 1280x800]

It copies the LATS sample's workspace (resources/samples/lats-bugfix) into a temporary git repository, opens
the real window on it with the real backend, runs the sample's task in LATS mode with the sample's scripted
model (no model server needed), allows the test command when the window asks, and grabs:

- ``start.png`` — the first window a new user sees, with no model server: the start page, the model's
  problem and fix in the status bar;
- ``sample.png`` — the start page's "Open the recorded sample tree": the tree given the whole window;
- ``window.png`` — the whole window after the turn in its default layout, the changed file open;
- ``tree.png`` — the Search tree dock on the run, the solution node selected.

(The Review dock's picture comes from ``scripts/review_demo.py``: a larger, multi-file review.)

Under Xvfb (``QT_QPA_PLATFORM=xcb``, the default there) the pictures come from a real X window; without a
display it falls back to Qt's offscreen platform. Nothing outside the temporary directory is touched except
the output files, in ``--output-dir`` or by default a new temporary directory (printed), never the checkout:
copy the pictures you checked into resources/screenshots yourself. Data dir, config dir and the window's
QSettings all point into the temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtCore import QCoreApplication, QSettings, Qt
from PySide6.QtWidgets import QApplication, QWidget

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ide.app.background import next_emission
from ide.app.chat.part import ChatDock
from ide.app.main import configure_application
from ide.app.review.part import ReviewDock
from ide.app.start.demo import demo_env
from ide.app.start.part import StartPart
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "resources" / "samples" / "lats-bugfix"
TASK = "mean() in stats.py returns the wrong value; fix it so check_stats.py passes"
TIMEOUT_S = 120.0
DOCK_PICTURE_HEIGHT = 470
GIT = ["git", "-c", "user.name=Arbor", "-c", "user.email=arbor@example.com"]
NO_SERVER_PORT = 9
"""The discard port: nothing listens there, so the start page shows what a machine without Ollama shows."""


def workspace_copy(root: Path) -> Path:
    """The sample workspace as a git repository with one commit."""
    target = root / "stats-project"
    shutil.copytree(SAMPLE / "workspace", target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "Sample project"]):
        subprocess.run([*GIT, *args], cwd=target, check=True)
    return target


async def settle(seconds: float = 0.4) -> None:
    """Let layout passes, coalesced repaints and the chat's scrolling land before a grab."""
    await asyncio.sleep(seconds)
    QApplication.processEvents()


def save(widget: QWidget, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not widget.grab().save(str(path)):
        raise RuntimeError(f"could not write {path}")
    print(path)


async def allow_tests(window: MainWindow) -> None:
    """Answer the window's permission question for the test command with its allow option."""
    dialog = window.permission_dialog
    for _ in range(int(TIMEOUT_S * 20)):  # bounded: the question comes within the turn
        if dialog.isVisible():
            button = dialog.button_for("allow")
            if button is not None:
                button.click()
                return
        await asyncio.sleep(0.05)


async def capture_start(
    workspace: Path, backend_env: dict[str, str], size: tuple[int, int], out: Path
) -> None:
    """The first window with no model server (Ollama's address answers nothing): the start page."""
    env = {
        **backend_env,
        "ARBOR_MODEL": "ollama:qwen3:8b",
        "OLLAMA_HOST": f"http://127.0.0.1:{NO_SERVER_PORT}",
    }
    env.pop("ARBOR_AGENT_ARCHITECTURE")
    window = MainWindow(workspace, backend_env=env)
    window.resize(*size)
    window.show()
    checked = asyncio.ensure_future(next_emission([window.docks["probe"].healthChanged], TIMEOUT_S))
    window.start()
    while (await checked)[1] is None:  # None: the backend is still starting
        checked = asyncio.ensure_future(next_emission([window.docks["probe"].healthChanged], TIMEOUT_S))
    await settle()
    save(window, out / "start.png")
    window.part(StartPart).page.sample_button.click()  # the recorded sample: the tree takes the window
    await settle()
    save(window, out / "sample.png")
    window.close()
    await window.bridge.aclose()


async def capture(window: MainWindow, output_dir: Path) -> None:
    ready = asyncio.ensure_future(next_emission([window.bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready
    finished = asyncio.ensure_future(next_emission([window.bridge.turnFinished], TIMEOUT_S))
    review = window.part(ReviewDock)
    changeset = asyncio.ensure_future(next_emission([review.client.changesetReceived], TIMEOUT_S))
    asker = asyncio.ensure_future(allow_tests(window))
    window.send_prompt(TASK)
    await finished
    await changeset
    asker.cancel()
    window.part(ChatDock).panel.flush()

    window.restore_layout()  # the run had the window; the picture shows the layout
    review.dock.raise_()
    pane = window.part(ReviewDock).pane
    decided = asyncio.ensure_future(next_emission([review.client.changesetReceived], TIMEOUT_S))
    pane.decide_hunk("accepted")
    await decided
    window.viewer.show_file(window.workspace / "stats.py")
    await settle()
    save(window, output_dir / "window.png")

    # The docks' own pictures at a height that shows a whole small tree without scrolling.
    tree_dock = window.docks["tree"]
    tree_dock.dock.raise_()
    window.resizeDocks([tree_dock.dock], [DOCK_PICTURE_HEIGHT], Qt.Orientation.Vertical)
    view = window.part(TreeDock).view
    run = next(iter(view.runs.values()))
    solution = next((n for n in run.best_path if run.nodes[n].kind == "answer"), run.best_path[-1])
    await settle()
    view.select_node(solution)
    await settle()
    save(tree_dock.dock, output_dir / "tree.png")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output_dir`` defaults to a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=None, help="default: a new temporary directory")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if args.output_dir is None:
        args.output_dir = Path(tempfile.mkdtemp(prefix="arbor-pictures-out-"))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    width, height = (int(part) for part in args.size.lower().split("x"))

    with tempfile.TemporaryDirectory(prefix="arbor-pictures-") as temp:
        root = Path(temp)
        workspace = workspace_copy(root)
        backend_env = demo_env(SAMPLE.parent, root)  # the start page's demo turn, as it runs it
        app = QApplication([sys.argv[0]])
        app.setQuitOnLastWindowClosed(False)  # the start picture's window closes before the run's opens
        configure_application(app)
        QCoreApplication.setOrganizationName("arbor-pictures")
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(root / "qsettings"))
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            loop.run_until_complete(capture_start(workspace, backend_env, (width, height), args.output_dir))
            window = MainWindow(workspace, backend_env=backend_env)
            window.resize(width, height)
            window.show()
            try:
                loop.run_until_complete(capture(window, args.output_dir))
            finally:
                window.close()
                loop.run_until_complete(window.bridge.aclose())
    return 0


if __name__ == "__main__":
    sys.exit(main())
