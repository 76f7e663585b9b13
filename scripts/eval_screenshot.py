"""Run a small real ``arbor eval`` with Arbor's modes and two other agents side by side, open the report in
the real window's Eval dock and save it as a PNG.

    xvfb-run -a -s "-screen 0 1280x800x24" env QT_QPA_PLATFORM=xcb \\
        python scripts/eval_screenshot.py [--output PATH.png] [--size 1280x800] [--tab summary|runs]

The evaluation (about ten seconds) runs the two tasks of ``tests/support/agent_eval.py`` — a one-line fix
and a question — in ReAct and plan mode and the retry baseline, against FakeOllama answering as the eval
simulator (``tests/support/eval_model.py``: it solves both), and with two other agents: the small CLI agent
``tests/support/eval_agent.py`` pointed at FakeOpenAI through Arbor's metering proxy (``mini``: it fixes
the bug and answers the question wrong), and the same agent given the server's address itself
(``mini-direct``: its tokens are not counted). The window opens the report in its Eval dock, given most of
the window's height: ``--tab summary`` (the default) shows the summary table and chart, ``--tab runs`` the
runs with an agent's fix selected and its diff beside them. Everything but the output lives in a temporary
directory: the evaluation's and the window's data and config dirs, and the window's QSettings.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # screenshot.py, readme_pictures.py: their helpers

from PySide6.QtCore import Qt
from readme_pictures import save, settle
from screenshot import SCRIPT, make_workspace, run_scripted_window

from ide.app.background import next_emission
from ide.app.eval.part import EvalDock
from ide.app.window import MainWindow
from ide.client.agentproc import AgentChoice
from ide.eval.agents import agents_under_test
from ide.eval.runner import EvalOptions, Evaluation
from ide.eval.tasks import load_tasks
from ide.protocol.eval import EvalReport, is_agent_mode
from tests.support.agent_eval import EVAL_AGENT, FIX_FILE, FIX_TASK, TASKS, fixed_text, whole_file_script
from tests.support.eval_model import EvalModel
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI

MODEL = "ollama:qwen2.5-coder:7b"
MODES = ["react", "plan"]
TIMEOUT_S = 60.0
DOCK_HEIGHT = 420
"""The Eval dock's height in the picture: about half the window's."""


def _block(text: str) -> str:
    return f"FILE: {FIX_FILE}\n````\n{text}````\n"


def build_report(root: Path) -> Path:
    """Run the evaluation (Arbor's backend in a subprocess per run, the agents in shadows); its folder."""
    os.environ["ARBOR_CONFIG_DIR"] = str(root / "eval-config")
    os.environ["ARBOR_DATA_DIR"] = str(root / "eval-data")
    tasks = load_tasks(TASKS)
    fixed = fixed_text(root)
    out = root / "eval-out"
    with (
        FakeOllama(responder=EvalModel(tasks)) as ollama,
        FakeOpenAI(side=whole_file_script(fixed, _block)) as openai,
    ):
        os.environ["OLLAMA_HOST"] = ollama.url
        agent = [sys.executable, str(EVAL_AGENT)]
        metered = AgentChoice("mini", [*agent, "{base_url}", "{model}", "{prompt}"], {}, protocol="cli")
        # The server by another name: nothing for Arbor to point at its proxy, so nothing is counted.
        direct_url = openai.url.replace("127.0.0.1", "localhost")
        direct = AgentChoice("mini-direct", [*agent, direct_url, "{model}", "{prompt}"], {}, protocol="cli")
        options = EvalOptions(
            out=out,
            model=MODEL,
            modes=MODES,
            tasks=tasks,
            baseline=True,
            budget_tokens=60_000,
            budget_s=120.0,
            jobs=3,
            agents=agents_under_test([metered, direct]),
            model_server=openai.url,
            scratch_dir=root / "scratch",
        )
        (root / "scratch").mkdir()
        report = asyncio.run(Evaluation(options, log=io.StringIO()).run())
    check(report)
    return out


def check(report: EvalReport) -> None:
    """The report the picture is meant to show: every run there, both agents, one of them unmetered."""
    if len(report.runs) != len(report.tasks) * len(report.modes):
        raise RuntimeError(f"the evaluation finished {len(report.runs)} runs of {len(report.modes) * 2}")
    agents = [row for row in report.summary if is_agent_mode(row.mode)]
    if len(agents) != 2 or [row.metered for row in agents] != [True, False]:
        raise RuntimeError(f"expected a metered and an unmetered agent, found {agents}")


async def capture(window: MainWindow, report: Path, output: Path, tab: str, height: int) -> None:
    ready = asyncio.ensure_future(next_emission([window.bridge.sessionReady], TIMEOUT_S))
    window.start()  # the backend, on a scripted model that is never asked: the window as it is in use
    await ready
    part = window.part(EvalDock)
    if not part.open_report(report):
        raise RuntimeError(f"the Eval dock could not open {report}: {part.panel.message.text()}")
    await settle()
    part.dock.raise_()
    if height:
        window.resizeDocks([part.dock], [height], Qt.Orientation.Vertical)
    panel = part.panel
    if tab == "runs":
        panel.tabs.setCurrentWidget(panel.runs_page)
        panel.runs.sortByColumn(1, Qt.SortOrder.AscendingOrder)
        if not panel.runs.select_run((FIX_TASK, "agent:mini", 0)):
            raise RuntimeError("the agent's fix is not among the runs")
    await settle(0.6)
    save(window, output)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to eval-agents.png in a new temporary directory, never the
    checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="the screenshot (default: a temporary dir)")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    parser.add_argument("--tab", choices=("summary", "runs"), default="summary", help="the Eval dock's tab")
    parser.add_argument(
        "--dock-height", type=int, default=DOCK_HEIGHT, help=f"pixels (default {DOCK_HEIGHT}; 0: as laid out)"
    )
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-eval-shot-out-")) / "eval-agents.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arbor-eval-shot-") as temp:
        root = Path(temp)
        report = build_report(root)
        shoot = partial(capture, report=report, output=args.output, tab=args.tab, height=args.dock_height)
        workspace = make_workspace(root)
        run_scripted_window(root, workspace, SCRIPT, args.size, shoot, name="arbor-eval-screenshot")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
