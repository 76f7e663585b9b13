"""The Eval dock on a report with other agents (``arbor eval --agent``) beside Arbor's modes: agent rows and
bars named and coloured apart, tokens that were not counted said so (never 0), the task grid, and each
agent run's diff (drawn as the Review dock draws one) and transcript — with a report's paths that lead out
of its folder refused.

The agents' runs come from a real evaluation: the small CLI agent (tests/support/eval_agent.py) against
FakeOpenAI, once through Arbor's metering proxy and once given the server itself (not counted); Arbor's
ReAct and retry runs beside them are written from the protocol models, and the summary is the one
``arbor eval`` computes."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from ide.app.eval.chart import SOLVE_PANEL, TOKENS_PANEL
from ide.app.eval.details import ARBOR_RUN, CUT_NOTE, DIFF_TAB, TRANSCRIPT_TAB
from ide.app.eval.files import MAX_BYTES
from ide.app.eval.palette import AGENT_COLOUR, BAR_COLOUR, BASELINE_COLOUR
from ide.app.eval.panel import EvalPanel
from ide.app.eval.part import EvalDock
from ide.app.eval.table import RUN_COLUMNS
from ide.app.window import MainWindow
from ide.client.agentproc import AgentChoice
from ide.eval.report import summarize
from ide.protocol.eval import EvalAgent, EvalReport, EvalRun, load_report, save_report
from ide.protocol.tree import TreeEvent, TreeNode, write_jsonl
from tests.support.agent_eval import (
    EVAL_AGENT,
    FIX_FILE,
    FIX_TASK,
    QUESTION_TASK,
    WRONG_ANSWER,
    evaluate,
    fixed_text,
    whole_file_script,
)
from tests.support.fake_openai import FakeOpenAI
from tests.support.window import ECHO_AGENT, WindowFactory

pytestmark = pytest.mark.window

METERED, DIRECT = "agent:mini", "agent:mini-direct"
SUMMARY_NAMES = ["react", "mini (agent)", "mini-direct (agent)", "retry (baseline)"]


def _block(text: str) -> str:
    return f"FILE: {FIX_FILE}\n````\n{text}````\n"


def tree_events(run_id: str, architecture: str, task: str) -> list[TreeEvent]:
    """A run's tree: its root and an answer."""
    nodes = [
        TreeNode(id="n0", kind="root", label=task),
        TreeNode(id="n1", parent="n0", depth=1, kind="answer", label="Done", status="solution"),
    ]
    added = [
        TreeEvent(run_id=run_id, seq=i + 1, kind="node_added", node=node, architecture=architecture)
        for i, node in enumerate(nodes)
    ]
    return [*added, TreeEvent(run_id=run_id, seq=3, kind="finished", figures={"nodes": 2})]


def _arbor_runs(out: Path) -> list[EvalRun]:
    """ReAct and the retry baseline on both tasks, each with its tree file."""
    (out / "trees").mkdir(exist_ok=True)
    runs = []
    for mode, tokens in (("react", 2_000), ("retry", 3_000)):
        for task in (FIX_TASK, QUESTION_TASK):
            name = f"{task}.{mode}.0.arbor-tree.jsonl"
            write_jsonl(tree_events(f"{task}-{mode}", mode, task), out / "trees" / name)
            runs.append(
                EvalRun(
                    task=task, mode=mode, status="solved", input_tokens=tokens, output_tokens=200,
                    wall_s=4.0, model_calls=3, tree_nodes=2, tree_file=f"trees/{name}",
                )
            )  # fmt: skip
    return runs


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real evaluation of two agents (one not metered), with Arbor's runs added: the report's folder."""
    root = tmp_path_factory.mktemp("agent-eval")
    with pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            if name.startswith("ARBOR_") or name == "OLLAMA_HOST":
                env.delenv(name)
        env.setenv("ARBOR_CONFIG_DIR", str(root / "config"))
        env.setenv("ARBOR_DATA_DIR", str(root / "data"))
        fixed = fixed_text(root)
        with FakeOpenAI(side=whole_file_script(fixed, _block)) as server:
            agent = [sys.executable, str(EVAL_AGENT)]
            metered = AgentChoice("mini", [*agent, "{base_url}", "{model}", "{prompt}"], {}, protocol="cli")
            direct_url = server.url.replace("127.0.0.1", "localhost")  # nothing for Arbor to point at
            words = [*agent, direct_url, "{model}", "{prompt}"]
            direct = AgentChoice("mini-direct", words, {}, protocol="cli")
            report, _log = evaluate(root / "out", [metered, direct], server.url)
    # What the tests below read: each agent solved the fix and answered the question wrong.
    assert sorted((run.mode, run.task, run.status) for run in report.runs) == [
        (mode, task, status)
        for mode in (METERED, DIRECT)
        for task, status in ((FIX_TASK, "solved"), (QUESTION_TASK, "failed"))
    ], [run.reason for run in report.runs]
    out = root / "out"
    report.runs = _arbor_runs(out) + report.runs
    report.modes = ["react", *report.modes, "retry"]
    report.summary = summarize(report)
    save_report(report, out)
    return out


@pytest.fixture
def report_dir(evaluated: Path, tmp_path: Path) -> Path:
    """The evaluated report's own copy, for a test to change."""
    return Path(shutil.copytree(evaluated, tmp_path / "eval-out"))


@pytest.fixture
def window(make_window: WindowFactory, tmp_path: Path) -> MainWindow:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return make_window(workspace, command=ECHO_AGENT, start=False)


def _open(qtbot: Any, window: MainWindow, folder: Path) -> EvalReport:
    dock = window.part(EvalDock)
    with qtbot.waitSignal(dock.reportLoaded) as loaded:
        assert dock.open_report(folder)
    qtbot.waitUntil(lambda: dock.dock.isVisible())
    return loaded.args[0]


def test_agents_and_modes_side_by_side_in_the_summary_chart_and_grid(
    qtbot: Any, window: MainWindow, report_dir: Path
) -> None:
    report = _open(qtbot, window, report_dir)
    runs = {run.key: run for run in report.runs}
    assert runs[(FIX_TASK, METERED, 0)].solved and runs[(QUESTION_TASK, METERED, 0)].status == "failed"
    assert not runs[(FIX_TASK, DIRECT, 0)].metered  # the real evaluation could not count it
    panel = window.part(EvalDock).panel
    table = panel.summary
    assert [table.cell_text(row, 0) for row in range(4)] == SUMMARY_NAMES
    metered = next(row for row in report.summary if row.mode == METERED)
    assert table.cell_text(1, 1) == "2" and table.cell_text(1, 2) == "1"
    assert table.cell_text(1, 6) == f"{metered.tokens_per_solved:.0f}" != "0"
    assert table.cell_text(1, 7).endswith("×")
    # Another agent's command is its row's tooltip.
    assert str(EVAL_AGENT) in table.item(1, 0).toolTip() and "CLI agent" in table.item(1, 0).toolTip()
    # Not counted: said, never 0, with why; no cost against the baseline.
    assert [table.cell_text(2, c) for c in (4, 6, 7)] == ["not counted", "not counted", ""]
    assert "{base_url}" in table.item(2, 4).toolTip() and "not 0" in table.item(2, 4).toolTip()
    assert "not counted" in table.item(2, 7).toolTip()
    assert "(agent) rows are other agents" in panel.legend.text()

    chart = panel.chart
    panel.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: chart.isVisible() and chart.width() > 300)
    # A report just opened: its summary table at its whole width beside the chart.
    qtbot.waitUntil(lambda: table.width() >= table.sizeHint().width())
    bars = chart.bars()
    assert [b.mode for b in bars if b.panel == SOLVE_PANEL] == ["react", METERED, DIRECT, "retry"]
    tokens = {b.mode: b for b in bars if b.panel == TOKENS_PANEL}
    assert tokens[DIRECT].label == "not counted" and tokens[DIRECT].rect.width() == 0
    assert tokens[METERED].rect.width() > 0 and tokens[METERED].label != "0"
    image = chart.grab().toImage()
    colours = {"react": BAR_COLOUR, METERED: AGENT_COLOUR, DIRECT: AGENT_COLOUR, "retry": BASELINE_COLOUR}
    for bar in bars:
        if bar.rect.width() > 0:
            point = QPoint(int(bar.rect.left() + 3), int(bar.rect.top() + 3))
            assert QColor(image.pixel(point)) == colours[bar.mode], (bar.mode, bar.panel)
    assert len({BAR_COLOUR.name(), AGENT_COLOUR.name(), BASELINE_COLOUR.name()}) == 3
    tip = chart.tooltip_at(tokens[DIRECT].rect.center() + QPoint(40, 0))
    assert "mini-direct (agent)" in tip and str(EVAL_AGENT) in tip and "{base_url}" in tip
    assert "react:" in chart.tooltip_at(QPoint(2, 2))  # off the bars: every row

    # The grid: a row per task, a column per mode and agent.
    grid = panel.grid
    assert grid.rowCount() == 2 and grid.columnCount() == 4
    headers = [grid.horizontalHeaderItem(c).text() for c in range(4)]
    assert headers == ["react", "mini\n(agent)", "mini-direct\n(agent)", "retry\n(baseline)"]
    row = report.tasks.index(FIX_TASK)
    fix = runs[(FIX_TASK, METERED, 0)]
    assert grid.cell_text(row, 1) == f"✓ {fix.tokens}" and grid.cell_text(row, 2) == "✓ not counted"
    assert grid.cell_text(1 - row, 1) == f"✗ {runs[(QUESTION_TASK, METERED, 0)].tokens}"
    assert "{base_url}" in grid.item(row, 2).toolTip()


def test_an_agents_run_shows_its_diff_and_transcript(
    qtbot: Any, window: MainWindow, report_dir: Path
) -> None:
    report = _open(qtbot, window, report_dir)
    panel = window.part(EvalDock).panel
    grid, details = panel.grid, panel.details
    panel.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: grid.isVisible())
    row = report.tasks.index(FIX_TASK)
    cell = grid.visualRect(grid.model().index(row, 1)).center()
    qtbot.mouseClick(grid.viewport(), Qt.MouseButton.LeftButton, pos=cell)  # a double-click's first press
    qtbot.mouseDClick(grid.viewport(), Qt.MouseButton.LeftButton, pos=cell)
    qtbot.waitUntil(lambda: panel.runs.isVisible())
    assert panel.runs.selected_run() is not None
    assert panel.runs.selected_run().key == (FIX_TASK, METERED, 0)
    assert details.title.text() == f"{FIX_TASK} · mini (agent) · attempt 0 — ✓ solved"
    assert details.tabs.currentIndex() == DIFF_TAB
    assert not panel.tree_button.isEnabled()  # another agent records no tree: its details stand for it
    diff = details.diff_text()
    assert diff.splitlines()[0] == f"{FIX_FILE}  (modified, +1 −1)"
    assert "-    if abs_bytes <= base:" in diff and "+    if abs_bytes < base:" in diff
    kinds = {row.text: row.kind for row in details.diff.rows}
    assert kinds["+    if abs_bytes < base:"] == "add" and kinds["-    if abs_bytes <= base:"] == "del"
    assert any(row.intraline for row in details.diff.rows)  # the changed characters, as the review shows
    transcript = details.transcript_text()
    assert "Fixed the boundary." in transcript and "usage:" in transcript

    # The question: it changed nothing; what it said is its transcript, why it failed the Check tab.
    panel.set_filter(mode=METERED, task="q-")
    panel.runs.selectRow(0)
    assert details.run is not None and details.run.task == QUESTION_TASK
    assert details.tabs.currentIndex() == TRANSCRIPT_TAB
    assert details.diff_text() == "" and "changed no file" in details.diff_page.message.text()
    assert WRONG_ANSWER in details.transcript_text()
    assert "does not match" in details.check_text()

    # The unmetered agent's runs: not counted in the runs table, in the details too.
    panel.set_filter(mode=DIRECT)
    assert [panel.runs.cell_text(r, RUN_COLUMNS.index("tokens")) for r in range(2)] == ["not counted"] * 2
    assert {panel.runs.cell_text(r, 1) for r in range(2)} == {"mini-direct (agent)"}
    panel.runs.selectRow(0)
    assert details.outcome.text().startswith("tokens not counted · ")
    assert "its tokens are not counted" in details.transcript_text()

    # One of Arbor's runs: its tree, not a diff.
    panel.set_filter(mode="react")
    panel.runs.selectRow(0)
    assert details.diff_page.message.text() == ARBOR_RUN and details.diff_text() == ""
    assert panel.tree_button.isEnabled()


def test_run_files_outside_the_report_or_missing_are_refused(
    qtbot: Any, window: MainWindow, report_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET CONTENT\n")
    (report_dir / "agents" / "link.diff").symlink_to(secret)
    report = load_report(report_dir)
    cases = {
        (FIX_TASK, METERED): {"diff_file": "../secret.txt", "transcript_file": str(secret)},
        (FIX_TASK, DIRECT): {"diff_file": "agents/link.diff", "transcript_file": "agents/gone.txt"},
        (QUESTION_TASK, METERED): {"transcript_file": "../../../../../../../../etc/passwd"},
    }
    report.runs = [
        run.model_copy(update=cases.get((run.task, run.mode), {})) for run in report.runs
    ]  # fmt: skip
    save_report(report, report_dir)
    _open(qtbot, window, report_dir)
    panel = window.part(EvalDock).panel
    details = panel.details
    said: dict[tuple[str, str], tuple[str, str]] = {}
    for key in cases:
        panel.set_filter(mode=key[1], task=key[0])
        panel.runs.selectRow(0)
        assert details.run is not None and (details.run.task, details.run.mode) == key
        assert details.diff_text() == "" and details.transcript_text() == ""
        said[key] = (details.diff_page.message.text(), details.transcript_page.message.text())
        assert "SECRET" not in "".join(said[key]) and "root:" not in "".join(said[key])
    assert said[(FIX_TASK, METERED)] == (
        "Cannot show the diff: its diff file '../secret.txt' is outside the report's folder.",
        f"Cannot show the transcript: its transcript file {str(secret)!r} is not a path inside the report's "
        "folder.",
    )
    assert said[(FIX_TASK, DIRECT)] == (
        "Cannot show the diff: its diff file 'agents/link.diff' is outside the report's folder.",
        "Cannot show the transcript: its transcript file agents/gone.txt is missing.",
    )
    assert "is outside the report's folder" in said[(QUESTION_TASK, METERED)][1]
    assert panel.message.isHidden()  # said where the file would be shown, not as the report's error


def test_a_runaway_transcript_is_shown_cut(qtbot: Any, window: MainWindow, report_dir: Path) -> None:
    report = load_report(report_dir)
    run = report.run_of(QUESTION_TASK, METERED)
    assert run is not None and run.transcript_file is not None
    (report_dir / run.transcript_file).write_text("the agent said this again\n" * 40_000)  # ~1 MB
    _open(qtbot, window, report_dir)
    panel = window.part(EvalDock).panel
    panel.show_run(QUESTION_TASK, METERED)
    text = panel.details.transcript_text()
    assert text.startswith("the agent said this again\n") and text.endswith(CUT_NOTE)
    assert len(text) <= MAX_BYTES + len(CUT_NOTE)


def test_a_large_report_gives_the_summary_its_rows_and_the_grid_the_rest(
    qtbot: Any, qsettings_dir: Path, tmp_path: Path
) -> None:
    modes = ["react", "lats", "tot", "plan", "workflow", "agent:qwen", "agent:aider", "retry"]
    tasks = [f"task-{i:02d}" for i in range(36)]
    statuses = ("solved", "failed", "over_budget", "timeout", "error")
    report = EvalReport(
        model="m", modes=modes, tasks=tasks, budget_tokens=1, budget_s=1, finished_at=1.0,
        agents=[
            EvalAgent(mode="agent:qwen", name="qwen", command="qwen --acp"),
            EvalAgent(mode="agent:aider", name="aider", command="aider --message {prompt}", protocol="cli"),
        ],
        runs=[
            EvalRun(task=task, mode=mode, status=statuses[(i + j) % 5], input_tokens=1000 * (i + j + 1),
                    metered=mode != "agent:aider")
            for i, task in enumerate(tasks) for j, mode in enumerate(modes)
        ],
    )  # fmt: skip
    report.summary = summarize(report)
    panel = EvalPanel()
    qtbot.addWidget(panel)
    panel.resize(1280, 700)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_report(report, tmp_path / "report.json")
    table, grid = panel.summary, panel.grid
    last = len(modes) - 1
    qtbot.waitUntil(lambda: table.width() >= table.sizeHint().width())
    bottom = table.viewport().height
    qtbot.waitUntil(lambda: table.rowViewportPosition(last) + table.rowHeight(last) <= bottom())
    aider = [table.cell_text(6, c) for c in (0, 4, 6, 7)]
    assert aider == ["aider (agent)", "not counted", "not counted", ""]
    shown = grid.viewport().height() // grid.rowHeight(0)
    assert 12 <= shown < 36  # the grid has the rest of the height, and scrolls
    cells = [grid.cell_text(0, column) for column in (0, 1, 2, 3, 4, 6)]
    assert cells == ["✓ 1k", "✗ 2k", "⊘ 3k", "◷ 4k", "⚠ 5k", "✗ not counted"]

    # A short panel: the grid folds away under its handle, the summary keeps its rows; back when there is
    # room again, until the user moves a splitter.
    panel.resize(1280, 360)
    qtbot.waitUntil(lambda: panel.summary_split.sizes()[1] == 0)
    panel.resize(1280, 700)
    qtbot.waitUntil(lambda: grid.viewport().height() // grid.rowHeight(0) >= 12)
    panel.summary_split.splitterMoved.emit(200, 1)
    panel.resize(1280, 360)
    QApplication.processEvents()  # what a fit would have queued behind the resize
    QApplication.processEvents()
    assert panel.height() == 360 and panel.summary_split.sizes()[1] > 0
