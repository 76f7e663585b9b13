"""Render the real window driving a foreign ACP agent that asks to sign in, with its sign-in dialog over it,
and save it as a PNG.

    python scripts/auth_screenshot.py [--output PATH.png] [--size 1280x800]

The agent is the test one (tests/support/auth_agent.py: an env-var, an agent and a terminal method;
``session/new`` refused until one worked), configured as an ``[agents]`` entry in a temporary config.toml,
so the dialog offers Save and retry. Retry of the terminal method is clicked before its command ran (the
dialog says the agent still asks) and a key is typed (shown as dots); the window with the dialog drawn
over it is saved. Everything but the output lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/screenshot.py: the sample workspace

from PySide6.QtGui import QPainter
from screenshot import make_workspace, run_window

from ide.app.background import next_emission
from ide.app.sessions.part_auth import AgentAuth
from ide.app.window import MainWindow

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "tests" / "support" / "auth_agent.py"
TIMEOUT_S = 60.0


async def capture(window: MainWindow, output: Path) -> None:
    bridge = window.bridge
    asked = asyncio.ensure_future(next_emission([bridge.authRequired], TIMEOUT_S))
    window.start()
    await asked
    await asyncio.sleep(0.2)  # the dialog is shown in the same pass; let it lay out
    dialog = window.part(AgentAuth).dialog
    if dialog is None or not dialog.isVisible():
        raise RuntimeError("the sign-in dialog did not open")
    again = asyncio.ensure_future(next_emission([bridge.authRequired], TIMEOUT_S))
    dialog.buttons["retry:login"].click()
    await again
    dialog.fields["api-key"]["AUTH_AGENT_KEY"].setText("sk-example-not-a-real-key")
    await asyncio.sleep(0.3)  # the redraw's layout pass
    if "still asks" not in dialog.status.text():
        raise RuntimeError(f"the dialog says {dialog.status.text()!r}")
    picture = window.grab()
    painter = QPainter(picture)
    at = dialog.geometry().translated(-window.geometry().topLeft())
    painter.drawPixmap(at.topLeft(), dialog.grab())
    painter.setPen(dialog.palette().mid().color())  # its edge (no window manager draws a frame here)
    painter.drawRect(at.adjusted(-1, -1, 0, 0))
    painter.end()
    output.parent.mkdir(parents=True, exist_ok=True)
    if not picture.save(str(output)):
        raise RuntimeError(f"could not write {output}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to auth.png in a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="the screenshot (default: a temporary dir)")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-auth-out-")) / "auth.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arbor-auth-") as temp:
        root = Path(temp)
        state = root / "agent-state"
        state.mkdir()
        agent = [sys.executable, str(AGENT), str(state)]
        # The window reads its settings from here: the agent is an [agents] entry, so its key can be stored.
        os.environ["ARBOR_CONFIG_DIR"] = str(root / "config")
        (root / "config").mkdir()
        entry = f"[agents.auth_agent]\ncommand = {json.dumps(agent[0])}\nargs = {json.dumps(agent[1:])}\n"
        (root / "config" / "config.toml").write_text(entry)
        shoot = partial(capture, output=args.output)
        run_window(root, make_workspace(root), args.size, shoot, name="arbor-auth-screenshot", agent=agent)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
