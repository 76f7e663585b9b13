"""The Eval dock: an ``arbor eval`` report opened in the window — header, summary against the retry
baseline, the chart's bars, the runs sorted and filtered, a run's tree in the Search tree dock, a bad file
explained, the unfinished note, reloads while the evaluation writes, and the last report reopened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage

from ide.app.eval.chart import SOLVE_PANEL, TOKENS_PANEL, nice_step
from ide.app.eval.format import cost_vs_baseline, reason_line, seconds_text, tokens_text
from ide.app.eval.palette import BAR_COLOUR, BASELINE_COLOUR
from ide.app.eval.part import EvalDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.protocol.eval import (
    REPORT_FILE,
    EvalReport,
    EvalRun,
    ModeSummary,
    RoleCost,
    save_report,
)
from ide.protocol.tree import SearchTree, ToolAction, TreeEvent, TreeNode, write_jsonl
from tests.support.window import ECHO_AGENT, WindowFactory

pytestmark = pytest.mark.window

TASKS = ["bug-chunked", "bug-windowed", "question-flatten"]
MODES = ["react", "lats", "retry"]
STARTED = 1_795_000_000.0
# (status, input tokens, output tokens, wall seconds, reason) per task, per mode.
OUTCOMES: dict[str, list[tuple[str, int, int, float, str]]] = {
    "react": [
        ("solved", 4_000, 600, 21.0, ""),
        ("failed", 9_000, 1_100, 48.0, "FAILED tests/test_task.py::test_windowed_step - assert 3 == 2"),
        ("solved", 2_500, 300, 9.0, ""),
    ],
    "lats": [
        ("solved", 30_000, 5_000, 140.0, ""),
        ("solved", 52_000, 8_000, 260.0, ""),
        ("over_budget", 80_000, 9_000, 300.0, "over the token budget: 89000 of 80000"),
    ],
    "retry": [
        ("solved", 4_000, 600, 20.0, ""),
        ("solved", 19_000, 2_000, 95.0, ""),
        ("error", 1_000, 0, 2.0, "the backend stopped: exit code 1"),
    ],
}
SUMMARY = [
    ModeSummary(
        mode="react", runs=3, solved=2, solve_rate=2 / 3, ci_low=0.208, ci_high=0.939,
        median_tokens=4_600, median_wall_s=21.0, tokens_per_solved=8_750.0, cost_vs_retry=0.65,
    ),
    ModeSummary(
        mode="lats", runs=3, solved=2, solve_rate=2 / 3, ci_low=0.208, ci_high=0.939,
        median_tokens=60_000, median_wall_s=260.0, tokens_per_solved=92_000.0, over_budget=1,
        cost_vs_retry=6.92,
    ),
    ModeSummary(
        mode="retry", runs=3, solved=2, solve_rate=2 / 3, ci_low=0.208, ci_high=0.939,
        median_tokens=4_600, median_wall_s=20.0, tokens_per_solved=13_300.0, errors=1,
        cost_vs_retry=1.0,
    ),
]  # fmt: skip


def tree_events(run_id: str, architecture: str, task: str) -> list[TreeEvent]:
    """A small real search tree: root, a read, an edit, an answer on the best path, finished."""
    nodes = [
        TreeNode(id="n0", kind="root", label=task),
        TreeNode(id="n1", parent="n0", depth=1, kind="action", label="read_file more.py",
                 action=ToolAction(tool="read_file", args={"path": "more_itertools/more.py"})),
        TreeNode(id="n2", parent="n1", depth=2, kind="action", label="edit_file more.py",
                 action=ToolAction(tool="edit_file", args={"path": "more_itertools/more.py"})),
        TreeNode(id="n3", parent="n2", depth=3, kind="answer", label="Fixed the last chunk",
                 status="solution"),
    ]  # fmt: skip
    events = [
        TreeEvent(run_id=run_id, seq=i + 1, kind="node_added", node=node, architecture=architecture)
        for i, node in enumerate(nodes)
    ]
    events.append(TreeEvent(run_id=run_id, seq=5, kind="best_path", path=["n0", "n1", "n2", "n3"]))
    events.append(TreeEvent(run_id=run_id, seq=6, kind="finished", figures={"nodes": 4}))
    return events


def make_runs(out: Path, modes: list[str] = MODES, *, count: int | None = None) -> list[EvalRun]:
    """The runs of TASKS × ``modes`` (the first ``count``), each with its tree file under out/trees."""
    (out / "trees").mkdir(parents=True, exist_ok=True)
    runs = []
    for mode in modes:
        for task, (status, tokens_in, tokens_out, wall, reason) in zip(TASKS, OUTCOMES[mode], strict=True):
            name = f"{task}.{mode}.0.arbor-tree.jsonl"
            write_jsonl(tree_events(f"{task}-{mode}-0", mode, task), out / "trees" / name)
            runs.append(
                EvalRun(
                    task=task, mode=mode, status=status, reason=reason, input_tokens=tokens_in,
                    output_tokens=tokens_out, wall_s=wall, model_calls=7, tree_nodes=4,
                    tree_file=f"trees/{name}", tries=2 if mode == "retry" else 1,
                    usage={"agent": RoleCost(calls=5, input_tokens=tokens_in, output_tokens=tokens_out)},
                )
            )  # fmt: skip
    return runs[:count]


def make_report(out: Path, *, finished: bool = True, count: int | None = None) -> EvalReport:
    out.mkdir(parents=True, exist_ok=True)
    runs = make_runs(out, count=count)
    report = EvalReport(
        model="ollama:qwen2.5-coder:7b",
        modes=MODES,
        tasks=TASKS,
        budget_tokens=80_000,
        budget_s=300.0,
        arbor_version="0.9.0",
        started_at=STARTED,
        finished_at=STARTED + 3_725.0 if finished else None,
        runs=runs,
        summary=SUMMARY if finished else [],
    )
    save_report(report, out)
    return report


@pytest.fixture
def window(make_window: WindowFactory, tmp_path: Path) -> MainWindow:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return make_window(workspace, command=ECHO_AGENT, start=False)


def test_a_report_shows_its_header_summary_chart_and_runs(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    out = tmp_path / "eval-out"
    make_report(out)
    dock = window.docks["eval"]
    with qtbot.waitSignal(dock.reportLoaded):
        assert window.part(EvalDock).open_report(out)
    qtbot.waitUntil(lambda: window.part(EvalDock).dock.isVisible())
    panel = window.part(EvalDock).panel
    assert panel.path_label.text() == str((out / REPORT_FILE).resolve())
    header = panel.header.text()
    assert "Model ollama:qwen2.5-coder:7b" in header
    assert "3 tasks × 3 modes × 1 run" in header and "budget 80k tokens and 5 min 00 s per run" in header
    assert "(took 1 h 02 min)" in header and "Arbor 0.9.0" in header
    assert panel.unfinished.isHidden() and panel.message.isHidden()

    table = panel.summary
    assert table.rowCount() == 3
    assert [table.cell_text(r, 0) for r in range(3)] == ["react", "lats", "retry (baseline)"]
    assert [table.cell_text(0, c) for c in range(8)] == [
        "react", "3", "2", "67% (21–94%)", "4.6k", "21 s", "8.75k", "0.65×",
    ]  # fmt: skip
    assert table.cell_text(1, 6) == "92k" and table.cell_text(1, 7) == "6.92×"
    assert table.cell_text(2, 7) == "1.00×" and table.cell_text(1, 5) == "4 min 20 s"
    assert table.item(1, 2).toolTip() == "1 over budget"

    # The chart: one bar per mode in each panel, in the summary's order, drawn in its colour.
    chart = panel.chart
    panel.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: chart.isVisible() and chart.width() > 300)
    bars = chart.bars()
    assert [b.mode for b in bars if b.panel == SOLVE_PANEL] == MODES
    assert [b.mode for b in bars if b.panel == TOKENS_PANEL] == MODES
    lats_tokens = next(b for b in bars if b.panel == TOKENS_PANEL and b.mode == "lats")
    react_tokens = next(b for b in bars if b.panel == TOKENS_PANEL and b.mode == "react")
    assert lats_tokens.rect.width() > 10 * react_tokens.rect.width() > 0
    assert lats_tokens.label == "92k"
    solve = [b for b in bars if b.panel == SOLVE_PANEL]
    assert all(b.whisker is not None and b.whisker[0] < b.rect.right() < b.whisker[1] for b in solve)
    image = chart.grab().toImage()
    for bar in bars:
        colour = BASELINE_COLOUR if bar.mode == "retry" else BAR_COLOUR
        # Inside the bar, clear of the whisker across its middle.
        point = QPoint(int(bar.rect.left() + 3), int(bar.rect.top() + 3))
        assert QColor(image.pixel(point)) == colour, (bar.mode, bar.panel)

    # The runs: all nine, sortable by tokens (as numbers), filtered by mode, status and task.
    runs = panel.runs
    assert runs.filter.rowCount() == 9 and panel.shown.text() == "9 of 9 runs"
    runs.sortByColumn(4, Qt.SortOrder.AscendingOrder)
    tokens = [run.tokens for run in runs.shown_runs()]
    assert tokens == sorted(tokens) and tokens[0] == 1_000 and tokens[-1] == 89_000
    assert runs.cell_text(0, 3) == "error" and runs.cell_text(8, 3) == "over budget"
    panel.set_filter(mode="lats")
    assert {run.mode for run in runs.shown_runs()} == {"lats"} and panel.shown.text() == "3 of 9 runs"
    panel.set_filter(status="solved")
    assert len(runs.shown_runs()) == 6 and all(run.solved for run in runs.shown_runs())
    panel.set_filter(mode="react", status="failed")
    [failed] = runs.shown_runs()
    assert failed.task == "bug-windowed"
    assert runs.cell_text(0, 7) == "FAILED tests/test_task.py::test_windowed_step - assert 3 == 2"
    panel.set_filter(task="QUESTION")
    assert {run.task for run in runs.shown_runs()} == {"question-flatten"}


def test_double_clicking_a_run_opens_its_tree_in_the_search_tree_dock(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    out = tmp_path / "eval-out"
    report = make_report(out)
    # One run recorded no tree.
    report.runs[0] = report.runs[0].model_copy(update={"tree_file": None})
    save_report(report, out)
    assert window.part(EvalDock).open_report(out / REPORT_FILE)
    panel = window.part(EvalDock).panel
    panel.tabs.setCurrentWidget(panel.runs_page)
    panel.set_filter(mode="lats", task="windowed")
    runs = panel.runs
    assert [run.key for run in runs.shown_runs()] == [("bug-windowed", "lats", 0)]
    qtbot.waitUntil(lambda: runs.isVisible())
    cell = runs.visualRect(runs.model().index(0, 0)).center()
    qtbot.mouseClick(runs.viewport(), Qt.MouseButton.LeftButton, pos=cell)
    qtbot.mouseDClick(runs.viewport(), Qt.MouseButton.LeftButton, pos=cell)
    qtbot.waitUntil(lambda: window.part(TreeDock).dock.isVisible())
    view = window.part(TreeDock).view
    assert view.current == "bug-windowed.lats.0.arbor-tree.jsonl · bug-windowed-lats-0"
    view.flush()
    expected = SearchTree(tree_events("bug-windowed-lats-0", "lats", "bug-windowed"))
    assert view.runs[view.current] == expected and len(view.canvas.geometry) == 4

    # Open Tree does the same for the selected run; a run with no tree says so and opens nothing.
    panel.set_filter(mode="react", task="chunked")
    runs.selectRow(0)
    assert panel.tree_button.isEnabled()
    panel.tree_button.click()
    assert panel.message.text() == "bug-chunked · react · attempt 0 recorded no search tree."
    assert panel.message.isVisible() and view.current == expected_key("bug-windowed", "lats")
    panel.set_filter(mode="retry", task="chunked")
    runs.selectRow(0)
    panel.tree_button.click()
    assert view.current == expected_key("bug-chunked", "retry") and panel.message.isHidden()


def expected_key(task: str, mode: str) -> str:
    return f"{task}.{mode}.0.arbor-tree.jsonl · {task}-{mode}-0"


def test_a_tree_file_outside_the_report_folder_or_missing_is_refused(
    window: MainWindow, tmp_path: Path
) -> None:
    out = tmp_path / "eval-out"
    report = make_report(out)
    outside = tmp_path / "secret.arbor-tree.jsonl"
    write_jsonl(tree_events("secret", "react", "x"), outside)
    report.runs[0] = report.runs[0].model_copy(update={"tree_file": "../secret.arbor-tree.jsonl"})
    report.runs[1] = report.runs[1].model_copy(update={"tree_file": "trees/gone.arbor-tree.jsonl"})
    save_report(report, out)
    assert window.part(EvalDock).open_report(out)
    dock = window.docks["eval"]
    assert not dock.open_tree(report.runs[0])
    assert "is outside the report's folder" in window.part(EvalDock).panel.message.text()
    assert not dock.open_tree(report.runs[1])
    assert (
        window.part(EvalDock)
        .panel.message.text()
        .endswith("its tree file trees/gone.arbor-tree.jsonl is missing.")
    )
    assert window.part(TreeDock).view.current is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", ":1: not JSON"),
        (json.dumps({"version": 99}), "not an Arbor eval report of version 1 (found 99)"),
        (json.dumps({"version": 1, "model": "m", "modes": [], "tasks": []}), "budget_tokens: Field required"),
        (json.dumps([1, 2]), "(found 'list')"),
    ],
)
def test_a_bad_report_is_explained_in_the_dock(
    qtbot: Any, window: MainWindow, tmp_path: Path, content: str, expected: str
) -> None:
    good = tmp_path / "good"
    make_report(good)
    assert window.part(EvalDock).open_report(good)
    bad = tmp_path / "bad" / REPORT_FILE
    bad.parent.mkdir()
    bad.write_text(content)
    dock = window.docks["eval"]
    with qtbot.waitSignal(dock.reportFailed) as failed:
        assert not window.part(EvalDock).open_report(bad.parent)
    panel = window.part(EvalDock).panel
    assert panel.message.text() == f"Cannot open the report: {failed.args[0]}"
    assert str(bad) in panel.message.text() and expected in panel.message.text()
    assert panel.message.isVisible() and panel.tabs.isHidden() and panel.header.isHidden()
    assert panel.report is None and dock.source is None and not window.banner.isVisible()


def test_a_missing_report_is_explained(window: MainWindow, tmp_path: Path) -> None:
    assert not window.part(EvalDock).open_report(tmp_path / "nowhere")
    text = window.part(EvalDock).panel.message.text()
    assert (
        text == f"Cannot open the report: {tmp_path / 'nowhere'}: cannot be read (No such file or directory)"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not window.part(EvalDock).open_report(empty)
    text = window.part(EvalDock).panel.message.text()
    assert text.startswith(f"Cannot open the report: {empty / REPORT_FILE}: cannot be read")


def test_an_unfinished_report_says_so_and_reloads_as_the_evaluation_saves(
    qtbot: Any, window: MainWindow, tmp_path: Path
) -> None:
    out = tmp_path / "eval-out"
    report = make_report(out, finished=False, count=2)
    dock = window.docks["eval"]
    assert window.part(EvalDock).open_report(out)
    panel = window.part(EvalDock).panel
    assert panel.unfinished.isVisible()
    assert panel.unfinished.text() == (
        "unfinished: 2 of 9 runs — rerun arbor eval with the same --out to resume"
    )
    assert panel.runs.filter.rowCount() == 2
    assert panel.chart.bars() == [] and panel.summary.rowCount() == 0
    panel.set_filter(mode="react")
    panel.runs.selectRow(1)
    selected = panel.runs.selected_run()
    assert selected is not None

    # arbor eval saves after every run (atomically: a new file renamed over the old one).
    report.runs = make_runs(out, count=5)
    with qtbot.waitSignal(dock.reportLoaded, timeout=5000):
        save_report(report, out)
    assert panel.unfinished.text().startswith("unfinished: 5 of 9 runs")
    assert panel.shown.text() == "3 of 5 runs"  # the filter stays
    assert panel.runs.selected_run() == selected  # and so does the selected run

    # Saved again and again: the watcher follows the new file each time, until the report is finished.
    report.runs = make_runs(out)
    report.summary = SUMMARY
    report.finished_at = STARTED + 60
    with qtbot.waitSignal(dock.reportLoaded, timeout=5000):
        save_report(report, out)
    assert panel.unfinished.isHidden() and panel.summary.rowCount() == 3
    assert len(panel.chart.bars()) == 6

    # A save that breaks the file keeps the last good report on screen, with the reason.
    with qtbot.waitSignal(dock.reportFailed, timeout=5000):
        (out / REPORT_FILE).write_text("{")
    assert panel.summary.rowCount() == 3 and panel.tabs.isVisible()
    assert panel.message.text().startswith("Cannot reload the report (showing the last one read): ")
    # Saved whole again: the reason goes.
    save_report(report, out)
    qtbot.waitUntil(lambda: panel.message.isHidden(), timeout=5000)
    assert panel.summary.rowCount() == 3 and panel.unfinished.isHidden()


def test_the_last_report_opens_again_in_the_next_window_and_file_menu_has_open(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    out = tmp_path / "eval-out"
    make_report(out)
    first = make_window(workspace, command=ECHO_AGENT, start=False)
    files = [action.text() for action in first.ctx.menus["file"].actions()]
    assert "Open &Eval Report…" in files
    assert first.part(EvalDock).open_report(out)
    first.close()

    second = make_window(workspace, command=ECHO_AGENT)
    qtbot.waitUntil(lambda: second.part(EvalDock).panel.report is not None)
    assert second.docks["eval"].source == (out / REPORT_FILE).resolve()
    assert second.part(EvalDock).panel.summary.rowCount() == 3
    assert second.part(
        EvalDock
    ).dock.isVisible()  # open when the first window closed: the saved layout has it


def test_numbers_are_worded_for_the_tables() -> None:
    assert [tokens_text(n) for n in (0, 999, 1_000, 12_345, 123_456, 2_500_000, None)] == [
        "0", "999", "1k", "12.3k", "123k", "2.5M", "—",
    ]  # fmt: skip
    assert [seconds_text(s) for s in (0.42, 12.4, 65, 3_725, None)] == [
        "0.4 s", "12 s", "1 min 05 s", "1 h 02 min", "—",
    ]  # fmt: skip
    react, lats, retry = SUMMARY
    assert cost_vs_baseline(lats, retry) == (
        "6.92×",
        "lats spent 6.92× the tokens the retry baseline spent on the tasks both ran",
    )
    # the CLI's two decimals: a twentieth of the baseline's cost is not "0.0×"
    assert cost_vs_baseline(lats.model_copy(update={"cost_vs_retry": 0.05}), retry)[0] == "0.05×"
    unset = react.model_copy(update={"cost_vs_retry": None})
    assert cost_vs_baseline(unset, None) == (
        "—",
        "The report has no retry baseline (arbor eval --modes without retry)",
    )
    assert cost_vs_baseline(unset.model_copy(update={"runs": 0}), retry)[1] == "react has no finished run yet"
    assert [nice_step(top) for top in (0, 9, 92_000, 1_000_000)] == [1.0, 2.5, 25_000, 250_000]


def test_the_chart_reads_when_narrow(qtbot: Any, qsettings_dir: Path) -> None:
    from ide.app.eval.chart import EvalChart

    chart = EvalChart()
    qtbot.addWidget(chart)
    chart.set_summary(SUMMARY)
    chart.resize(300, 420)
    panels = chart.panels()
    assert panels[SOLVE_PANEL].bottom() < panels[TOKENS_PANEL].top()  # stacked
    image: QImage = chart.grab().toImage()
    assert not image.isNull() and image.width() == 300
    bars = chart.bars()
    assert all(panels[b.panel].contains(b.rect) for b in bars)


def test_report_strings_are_shown_as_written_never_as_markup(window: MainWindow, tmp_path: Path) -> None:
    out = tmp_path / "eval-out"
    report = make_report(out)
    report.model = "<b>ollama</b><img src='file:///etc/passwd'>"
    report.runs[0] = report.runs[0].model_copy(update={"reason": "<a href='https://x.test'>click</a>"})
    save_report(report, out)
    assert window.part(EvalDock).open_report(out)
    panel = window.part(EvalDock).panel
    assert panel.header.textFormat() == Qt.TextFormat.PlainText
    assert panel.header.text().startswith("Model <b>ollama</b><img src='file:///etc/passwd'> · ")
    panel.set_filter(mode="react", task="chunked")
    tip = panel.runs.filter.index(0, 7).data(Qt.ItemDataRole.ToolTipRole)
    assert "&lt;a href=&#x27;https://x.test&#x27;&gt;click&lt;/a&gt;" in tip and "<a " not in tip


def test_a_mode_without_runs_yet_is_listed_but_not_drawn(qtbot: Any, qsettings_dir: Path) -> None:
    from ide.app.eval.chart import EvalChart
    from ide.app.eval.table import SummaryTable

    waiting = ModeSummary(
        mode="tot", runs=0, solved=0, solve_rate=0.0, ci_low=0.0, ci_high=1.0, median_tokens=0.0,
        median_wall_s=0.0,
    )  # fmt: skip
    rows = [*SUMMARY[:2], waiting, SUMMARY[2]]
    chart = EvalChart()
    qtbot.addWidget(chart)
    chart.resize(700, 260)
    chart.set_summary(rows)
    tot = [bar for bar in chart.bars() if bar.mode == "tot"]
    assert [(bar.label, bar.whisker, bar.rect.width()) for bar in tot] == [
        ("no runs yet", None, 0.0), ("no runs yet", None, 0.0),
    ]  # fmt: skip
    assert not chart.grab().toImage().isNull()
    table = SummaryTable()
    qtbot.addWidget(table)
    table.set_summary(rows)
    assert [table.cell_text(2, c) for c in range(8)] == ["tot", "0", "0", "—", "—", "—", "—", "—"]


PYTEST_TAIL = """\
.F                                                                       [100%]
=================================== FAILURES ===================================
____________________________ test_lower_camel_case _____________________________

    def test_lower_camel_case():
>       assert inflection.camelize("device_type", False) == "deviceType"
E       TypeError: camelize() takes 1 positional argument but 2 were given

tests/test_task.py:9: TypeError
=========================== short test summary info ============================
FAILED tests/test_task.py::test_lower_camel_case - TypeError: camelize() take...
1 failed, 1 passed in 0.12s

exit 1
"""


def test_a_failing_check_is_summed_up_in_one_line_for_the_runs_table() -> None:
    assert reason_line(PYTEST_TAIL) == (
        "TypeError: camelize() takes 1 positional argument but 2 were given (1 failed, 1 passed in 0.12s)"
    )
    no_error_line = "\n".join(line for line in PYTEST_TAIL.splitlines() if not line.startswith("E "))
    assert reason_line(no_error_line) == (
        "FAILED tests/test_task.py::test_lower_camel_case - TypeError: camelize() take... "
        "(1 failed, 1 passed in 0.12s)"
    )
    assert reason_line("collected 0 items\n\nexit 5\n") == "collected 0 items"
    assert reason_line("the answer does not match 'x'") == "the answer does not match 'x'"
    assert reason_line("") == ""


def test_arbor_open_takes_a_report_or_a_tree(qtbot: Any, window: MainWindow, tmp_path: Path) -> None:
    """``arbor --open``: a report (its folder or report.json) opens in the Eval dock, a tree file in the tree
    dock."""
    from ide.app.main import open_at_start

    out = tmp_path / "eval-out"
    make_report(out)
    with qtbot.waitSignal(window.docks["eval"].reportLoaded):
        assert open_at_start(window, out)
    assert window.part(EvalDock).panel.path_label.text() == str((out / REPORT_FILE).resolve())
    assert open_at_start(window, out / REPORT_FILE)
    assert open_at_start(window, out / "trees" / f"{TASKS[0]}.react.0.arbor-tree.jsonl")
    qtbot.waitUntil(lambda: window.part(TreeDock).dock.isVisible())
    assert window.part(TreeDock).view.current == f"{TASKS[0]}.react.0.arbor-tree.jsonl · {TASKS[0]}-react-0"


def test_a_runs_tree_opens_marked_by_what_its_check_said(window: MainWindow, tmp_path: Path) -> None:
    out = tmp_path / "eval-out"
    report = make_report(out)
    assert window.part(EvalDock).open_report(out / REPORT_FILE)
    dock, view = window.part(EvalDock).panel, window.part(TreeDock).view
    runs = {run.key: run for run in report.runs}
    statuses = {dock.runs.cell_text(r, 3) for r in range(dock.runs.filter.rowCount())}
    assert statuses == {"✓ solved", "✗ failed", "over budget", "error"}  # ✓/✗: what the check said

    # The check failed: the answer the model called a solution is drawn refuted, and says why.
    assert window.docks["eval"].open_tree(runs[("bug-windowed", "react", 0)])
    view.flush()
    geometry = view.canvas.geometry
    assert geometry.status[geometry.index["n3"]] == "refuted"
    view.select_node("n3")
    assert (
        "✗ refuted: the eval check failed: FAILED tests/test_task.py::test_windowed_step - "
        "assert 3 == 2; its 'solution' status was the model's own score"
    ) in view.inspector.toPlainText()

    # The check passed: the same answer is verified by it.
    assert window.docks["eval"].open_tree(runs[("bug-chunked", "react", 0)])
    view.flush()
    geometry = view.canvas.geometry
    assert geometry.status[geometry.index["n3"]] == "verified"
    view.select_node("n3")
    assert "✓ verified: the eval check passed" in view.inspector.toPlainText()
