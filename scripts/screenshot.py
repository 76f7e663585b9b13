"""Render the real Arbor window offscreen after one scripted turn and save it as a PNG.

    python scripts/screenshot.py [--output PATH.png] [--size 1280x800]

It builds a small sample git repository in a temporary directory, starts the real backend with a
scripted model (no model server needed), asks one question, opens the file the agent read, and grabs
the window. Nothing outside the temporary directory is touched except the output file: the backend's
data and config dirs and the window's QSettings all point into the temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtCore import QCoreApplication, QSettings, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from ide.app.background import next_emission
from ide.app.chat.panel import ThoughtView, ToolCallView
from ide.app.chat.part import ChatDock
from ide.app.main import configure_application
from ide.app.window import MainWindow
from ide.app.workspace.part import WorkspaceDock
from ide.app.workspace.part_outline import OutlineDock

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60.0
QUESTION = "How does checkout apply the member discount?"

SAMPLE_FILES = {
    "README.md": "# shop\n\nA tiny store: a cart, prices and a checkout.\n",
    ".gitignore": "*.log\n.venv/\n",
    "shop/__init__.py": '"""A tiny store."""\n',
    "shop/cart.py": (
        '"""The shopping cart."""\n\nfrom dataclasses import dataclass, field\n\n\n@dataclass\n'
        "class Item:\n    sku: str\n    price_cents: int\n    quantity: int = 1\n\n\n@dataclass\n"
        "class Cart:\n    items: list[Item] = field(default_factory=list)\n\n"
        "    def subtotal(self) -> int:\n"
        "        return sum(item.price_cents * item.quantity for item in self.items)\n"
    ),
    "shop/checkout.py": (
        '"""Turning a cart into an order total."""\n\nfrom shop.cart import Cart\n\n'
        'MEMBER_DISCOUNT = 0.10\n"""Members save 10% on orders over the threshold."""\n'
        "DISCOUNT_THRESHOLD_CENTS = 5_000\n\n\n"
        "def total(cart: Cart, *, member: bool = False) -> int:\n"
        '    """Order total in cents, after the member discount."""\n'
        "    subtotal = cart.subtotal()\n"
        "    if member and subtotal >= DISCOUNT_THRESHOLD_CENTS:\n"
        "        # Round in the customer's favour.\n"
        "        return int(subtotal * (1 - MEMBER_DISCOUNT))\n"
        "    return subtotal\n"
    ),
    "tests/test_checkout.py": (
        "from shop.cart import Cart, Item\nfrom shop.checkout import total\n\n\n"
        "def test_member_discount_applies_over_threshold():\n"
        '    cart = Cart([Item("book", 6_000)])\n'
        "    assert total(cart, member=True) == 5_400\n"
    ),
    "server.log": "ignored by .gitignore, so not in the tree\n",
}

SCRIPT = [
    {
        "thinking": (
            "The question is about the member discount at checkout. The logic is probably in "
            "shop/checkout.py, so I will read that file before answering."
        ),
        "content": "",
        "tool_calls": [{"name": "read_file", "args": {"path": "shop/checkout.py"}}],
    },
    {
        "content": (
            "`total()` in **shop/checkout.py** applies the discount only when both hold:\n\n"
            "- the customer is a member (`member=True`), and\n"
            "- the cart subtotal is at least `DISCOUNT_THRESHOLD_CENTS` (50.00).\n\n"
            "It then takes 10% off and truncates to whole cents:\n\n"
            "```python\nreturn int(subtotal * (1 - MEMBER_DISCOUNT))\n```\n\n"
            "`tests/test_checkout.py` pins this: a 60.00 book costs a member 54.00."
        )
    },
]


def make_workspace(root: Path) -> Path:
    """A small git repository with one commit and one ignored file."""
    workspace = root / "shop"
    for name, text in SAMPLE_FILES.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Arbor",
        "GIT_AUTHOR_EMAIL": "arbor@example.com",
        "GIT_COMMITTER_NAME": "Arbor",
        "GIT_COMMITTER_EMAIL": "arbor@example.com",
    }
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "Sample shop"]):
        subprocess.run(command, cwd=workspace, env=env, check=True)
    return workspace


async def capture(window: MainWindow, output: Path) -> None:
    ready = asyncio.ensure_future(next_emission([window.bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready
    finished = asyncio.ensure_future(next_emission([window.bridge.turnFinished], TIMEOUT_S))
    window.send_prompt(QUESTION)
    await finished
    window.part(ChatDock).panel.flush()

    for view in window.part(ChatDock).panel.views():
        if isinstance(view, ThoughtView):
            view.set_expanded(True)
    tool = next(view for view in window.part(ChatDock).panel.views() if isinstance(view, ToolCallView))
    highlighted = asyncio.ensure_future(next_emission([window.viewer.highlighted], TIMEOUT_S))
    if tool.block.locations:
        tool.locations.linkActivated.emit("0")
    else:
        window.viewer.show_file(window.workspace / "shop" / "checkout.py")
    await highlighted
    window.part(WorkspaceDock).panel.select(window.workspace / "shop" / "checkout.py")
    window.viewer.editor.go_to_line(13)
    for _ in range(100):  # the Outline dock fills once the sample's index is ready (bounded: 5 s)
        if window.part(OutlineDock).panel.items():
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # let the chat's scroll-to-bottom and the last layout pass land

    output.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(output)):
        raise RuntimeError(f"could not write {output}")


def _quiet_offscreen(kind: QtMsgType, context: Any, message: str) -> None:
    # The offscreen platform warns about window size hints it cannot honour; nothing else is hidden.
    if "propagateSizeHints" not in message:
        sys.stderr.write(message + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to window.png in a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="the screenshot (default: a temporary dir)")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-screenshot-out-")) / "window.png"
    return args


def run_scripted_window(
    root: Path,
    workspace: Path,
    script: list[dict[str, Any]],
    size: str,
    body: Callable[[MainWindow], Awaitable[None]],
    *,
    name: str,
    env: dict[str, str] | None = None,
) -> None:
    """Open the real window on ``workspace`` with its backend's model playing ``script`` (see
    :func:`run_window`)."""
    model = root / "script.jsonl"
    model.write_text("".join(json.dumps(line) + "\n" for line in script))
    run_window(
        root, workspace, size, body, name=name, env={"ARBOR_MODEL": f"scripted:{model}", **(env or {})}
    )


def run_window(
    root: Path,
    workspace: Path,
    size: str,
    body: Callable[[MainWindow], Awaitable[None]],
    *,
    name: str,
    env: dict[str, str] | None = None,
    agent: list[str] | None = None,
) -> None:
    """Open the real window on ``workspace`` at ``size`` (WIDTHxHEIGHT), driving ``agent`` (a command line;
    None: Arbor's backend) with ``env``, and run ``body`` with it; the backend's data and config dirs and
    the window's QSettings (organisation ``name``) all in ``root``, the window closed and its backend
    stopped after."""
    width, height = (int(part) for part in size.lower().split("x"))
    backend_env = {
        "ARBOR_DATA_DIR": str(root / "data"),
        "ARBOR_CONFIG_DIR": str(root / "config"),
        **(env or {}),
    }
    qInstallMessageHandler(_quiet_offscreen)
    app = QApplication([sys.argv[0]])
    configure_application(app)
    QCoreApplication.setOrganizationName(name)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(root / "qsettings"))
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = MainWindow(workspace, backend_command=agent, backend_env=backend_env)
    window.resize(width, height)
    window.show()
    with loop:
        try:
            loop.run_until_complete(body(window))
        finally:
            window.close()
            loop.run_until_complete(window.bridge.aclose())


def shots_args(argv: list[str] | None, description: str, name: str) -> argparse.Namespace:
    """``--output-dir`` (default: a new temporary directory ``NAME-out-…``, never the checkout) and
    ``--size``, for a script that shoots a scripted window."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--output-dir", type=Path, default=None, help="default: a new temporary directory")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if args.output_dir is None:
        args.output_dir = Path(tempfile.mkdtemp(prefix=f"{name}-out-"))
    return args


def shoot_scripted(
    args: argparse.Namespace,
    name: str,
    script: list[dict[str, Any]],
    workspace: Callable[[Path], Path],
    run: Callable[..., Awaitable[None]],
    env: dict[str, str],
) -> int:
    """Run ``run(window, clone, out=OUTPUT_DIR)`` in a scripted window (:func:`run_scripted_window`) on the
    workspace ``workspace(root)`` makes in a temporary directory; 0 when it finished."""
    args.output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as temp:
        root = Path(temp)
        body = partial(run, out=args.output_dir)
        run_scripted_window(root, workspace(root), script, args.size, body, name=name, env=env)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arbor-screenshot-") as temp:
        root = Path(temp)
        shot = partial(capture, output=args.output)
        run_scripted_window(root, make_workspace(root), SCRIPT, args.size, shot, name="arbor-screenshot")
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
