"""Render the real window driving a foreign ACP agent that advertises config options, and save it as a PNG.

    python scripts/options_screenshot.py [--output PATH.png] [--size 1280x800]

The agent is the test one (tests/support/options_agent.py: a grouped ``model`` select and a ``fast``
boolean); the window shows them as selectors beside the chat, picks another model through them (sent with
``session/set_config_option``; the agent's answer redraws them) and is grabbed. Everything but the output
lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/screenshot.py: the sample workspace

from screenshot import make_workspace, run_window

from ide.app.background import next_emission
from ide.app.chat.part import ChatDock
from ide.app.window import MainWindow

REPO = Path(__file__).resolve().parent.parent
AGENT = REPO / "tests" / "support" / "options_agent.py"
TIMEOUT_S = 60.0


async def capture(window: MainWindow, output: Path) -> None:
    bridge = window.bridge
    ready = asyncio.ensure_future(next_emission([bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready
    bar = window.part(ChatDock).panel.options
    changed = asyncio.ensure_future(next_emission([bridge.configOptionsChanged], TIMEOUT_S))
    model = bar.selectors["model"]
    model.setCurrentIndex(2)  # Remote: Cloud
    model.activated.emit(2)
    await changed
    await asyncio.sleep(0.3)  # the redraw's layout pass
    if list(bar.selectors) != ["model", "fast"] or bar.selectors["model"].currentData() != "cloud":
        raise RuntimeError("the selectors do not show the agent's options")
    output.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(output)):
        raise RuntimeError(f"could not write {output}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to options.png in a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="the screenshot (default: a temporary dir)")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-options-out-")) / "options.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arbor-options-") as temp:
        root = Path(temp)
        shoot = partial(capture, output=args.output)
        agent = [sys.executable, str(AGENT)]
        run_window(root, make_workspace(root), args.size, shoot, name="arbor-options-screenshot", agent=agent)
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
