"""``arbor eval`` end to end: the real backend in a subprocess per run, the shipped tasks built in scratch
workspaces, their real checks, and FakeOllama answering as the eval-task simulator
(tests/support/eval_model.py) through the real langchain-ollama client."""

from __future__ import annotations

import asyncio
import io
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from ide.cli import main
from ide.eval.report import chart_html, cost_ratio, wilson_interval
from ide.eval.runner import EvalError, EvalOptions, Evaluation
from ide.eval.tasks import EvalTask, load_tasks
from ide.protocol.eval import REPORT_FILE, RETRY_MODE, EvalReport, EvalRun, load_report
from ide.protocol.tree import SearchTree, read_jsonl
from tests.support.eval_model import EvalModel, Skill
from tests.support.fake_ollama import FakeOllama
from tests.support.procs import children, group_alive

MODEL = "ollama:qwen2.5-coder:7b"
BUG = "toolz-get-in-default"
WRONG = "toolz-dissoc-many-keys"
READER = "toolz-interpose-leading"
QUESTION = "q-toolz-getter-callers"

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def tasks() -> dict[str, EvalTask]:
    return {t.id: t for t in load_tasks(",".join((BUG, WRONG, READER, QUESTION)))}


class Sim:
    """FakeOllama answering as the eval-task simulator; OLLAMA_HOST points the backends at it."""

    def __init__(
        self,
        tasks: Mapping[str, EvalTask],
        monkeypatch: pytest.MonkeyPatch,
        models: dict[str, dict[str, object]] | None = None,
    ) -> None:
        self.tasks = tasks
        self.monkeypatch = monkeypatch
        self.model = EvalModel(tasks.values())
        self.server = FakeOllama(responder=self.model, models=models).start()
        monkeypatch.setenv("OLLAMA_HOST", self.server.url)

    def skills(self, skills: dict[str, Skill]) -> None:
        self.model.skills = dict(skills)

    def options(self, out: Path, names: list[str], modes: list[str], **kw: object) -> EvalOptions:
        defaults: dict[str, object] = {"budget_tokens": 60_000, "budget_s": 90.0, "baseline": False}
        return EvalOptions(
            out=out, model=MODEL, modes=modes, tasks=[self.tasks[n] for n in names], **{**defaults, **kw}
        )


@pytest.fixture
def sim(tasks: dict[str, EvalTask], monkeypatch: pytest.MonkeyPatch) -> Iterator[Sim]:
    made = Sim(tasks, monkeypatch)
    try:
        yield made
    finally:
        made.server.close()


def evaluate(options: EvalOptions, **kw: object) -> tuple[Evaluation, EvalReport]:
    evaluation = Evaluation(options, log=io.StringIO(), **kw)  # type: ignore[arg-type]
    return evaluation, asyncio.run(evaluation.run())


def by_key(report: EvalReport) -> dict[tuple[str, str], EvalRun]:
    return {(r.task, r.mode): r for r in report.runs}


def test_solved_failed_and_over_budget_runs_with_their_figures_report_and_chart(
    sim: Sim, tmp_path: Path
) -> None:
    sim.skills({WRONG: "wrong", READER: "read"})
    out = tmp_path / "out"
    options = sim.options(out, [BUG, WRONG, READER, QUESTION], ["react", "tot"], budget_tokens=12_000, jobs=4)
    evaluation, report = evaluate(options)

    runs = by_key(report)
    assert len(report.runs) == 8
    assert runs[(BUG, "react")].status == "solved"
    assert runs[(QUESTION, "react")].status == "solved"
    assert runs[(QUESTION, "tot")].status == "solved"  # ToT reads only: it can answer, not fix
    assert runs[(BUG, "tot")].status == "failed"
    wrong = runs[(WRONG, "react")]
    assert wrong.status == "failed"
    assert "FAILED" in wrong.reason or "failed" in wrong.reason  # the check's own output says why
    over = runs[(READER, "react")]
    assert over.status == "over_budget"
    assert over.tokens > 0 and "budget" in over.reason

    solved = runs[(BUG, "react")]
    assert solved.usage["react"].calls == solved.model_calls >= 3  # read, edit, answer
    assert solved.input_tokens > 0 and solved.output_tokens > 0 and solved.wall_s > 0
    assert solved.tries == 1 and solved.compactions == 0 and solved.recovered_calls == 0
    tot = runs[(QUESTION, "tot")]
    assert {"tot.planner", "tot.researcher", "tot.analyzer", "tot.critic", "tot.synthesizer"} <= set(
        tot.usage
    )

    # Each run's tree is a .arbor-tree.jsonl the Search tree dock opens, with the nodes counted.
    for run in report.runs:
        assert run.tree_file is not None
        events = read_jsonl(out / run.tree_file)
        trees: dict[str, SearchTree] = {}
        for event in events:
            trees.setdefault(event.run_id, SearchTree()).apply(event)
        assert run.tree_nodes == sum(len(t.nodes) for t in trees.values()) > 0

    # The report on disk is the one returned, finished, with its summary and chart.
    loaded = load_report(out)
    assert loaded.runs == report.runs and loaded.finished_at is not None
    react = next(s for s in loaded.summary if s.mode == "react")
    assert (react.runs, react.solved, react.over_budget, react.errors) == (4, 2, 1, 0)
    assert (react.ci_low, react.ci_high) == pytest.approx(wilson_interval(2, 4), abs=1e-4)
    table = evaluation.table()
    assert re.search(r"^react\s+2/4\s+50%\s+15%–85%", table, re.MULTILINE), table
    assert re.search(r"^tot\s+1/4\s+25%", table, re.MULTILINE), table
    chart = (out / "chart.html").read_text()
    assert loaded.chart_file == "chart.html"
    assert len(re.findall(r'<rect class="rate[^"]*" data-mode="', chart)) == 2
    assert "<script" not in chart and "http://" not in chart.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_retry_baseline_tries_until_solved_or_until_the_budget_is_spent_with_compactions_counted(
    tasks: dict[str, EvalTask], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A 2k-token model: the file read overflows its window, so later requests are compacted.
    sim = Sim(tasks, monkeypatch, models={"qwen2.5-coder:7b": {"context_length": 2048}})
    try:
        sim.skills({BUG: "second_try", WRONG: "wrong"})
        options = sim.options(tmp_path / "out", [BUG, WRONG], [], baseline=True, budget_tokens=9_000, jobs=2)
        _, report = evaluate(options)
    finally:
        sim.server.close()

    runs = by_key(report)
    flaky = runs[(BUG, RETRY_MODE)]
    assert (flaky.status, flaky.tries) == ("solved", 2)
    assert flaky.model_calls == flaky.usage["react"].calls >= 5  # two sessions of read, edit, answer
    assert flaky.compactions >= 2  # at least once in each session, after the read
    never = runs[(WRONG, RETRY_MODE)]
    assert never.status == "over_budget" and never.tries >= 2
    assert never.tokens > 9_000 - 3_500  # it went on while a session's worth of budget was left
    # The tries' trees are kept apart in one file, one run id per try.
    events = read_jsonl(tmp_path / "out" / str(flaky.tree_file))
    assert {e.run_id.split(":")[0] for e in events} == {"try1", "try2"}


def test_a_turn_past_the_time_budget_is_cancelled_as_a_timeout(
    tasks: dict[str, EvalTask], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Every answer's first token takes 5 s (a model loading); the run may take 2 s.
    sim = Sim(tasks, monkeypatch, models={"qwen2.5-coder:7b": {"first_token_ms": 5000}})
    try:
        _, report = evaluate(sim.options(tmp_path / "out", [BUG], ["react"], budget_s=2.0))
    finally:
        sim.server.close()
    (run,) = report.runs
    assert run.status == "timeout" and "time budget of 2 s" in run.reason
    assert run.wall_s < 2.0 + 30  # cancelled, not waited out


@pytest.mark.own_interpreter  # reads the backend's children from /proc
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_keeps_the_finished_runs_and_a_rerun_does_only_the_missing_ones(
    sim: Sim, tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: signal.Signals
) -> None:
    """SIGTERM (a supervisor, a CI timeout) stops the evaluation as Ctrl-C does, its backends included."""
    out = tmp_path / "out"
    argv = ["eval", "--tasks", f"{QUESTION},{READER}", "--modes", "react", "--no-baseline", "--model", MODEL]
    argv += ["--out", str(out)]
    sim.skills({READER: "read"})  # the second run reads on and on: Ctrl-C lands in it
    proc = subprocess.Popen(
        [sys.executable, "-m", "ide", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # The question takes one model call; the second call is the second run's first.
        assert sim.server.wait_for_chats(2, timeout=60)
        backends = children(proc.pid)
        proc.send_signal(stop)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    assert backends and not any(group_alive(pid) for pid in backends), "no arbor acp left behind"
    assert "interrupted after 1 of 2 runs" in stderr and "Traceback" not in stderr
    saved = load_report(out)
    assert [(r.task, r.status) for r in saved.runs] == [(QUESTION, "solved")]
    assert saved.finished_at is None and not (out / "chart.html").exists()
    assert re.search(r"^react\s+1/1\s+100%", stdout, re.MULTILINE), stdout

    asked_before = len(sim.model.requests)
    sim.skills({})
    assert main(argv) == 0, capsys.readouterr().err
    resumed = load_report(out)
    assert [r.task for r in resumed.runs] == [QUESTION, READER]
    assert resumed.runs[0] == saved.runs[0] and resumed.runs[1].status == "solved"
    assert resumed.finished_at is not None and (out / "chart.html").is_file()
    # Only the missing run asked the model anything.
    assert {task for _, task in sim.model.requests[asked_before:]} == {READER}
    assert "1 already done (resuming)" in capsys.readouterr().err

    # Other settings cannot resume this report: a clear error, and --fresh starts over.
    with pytest.raises(EvalError, match=r"other settings.*budget tokens 1000 \(the report has 200000\)"):
        Evaluation(sim.options(out, [QUESTION, READER], ["react"], budget_tokens=1000))
    assert main([*argv, "--budget-tokens", "1000"]) == 2
    assert "--fresh to start over" in capsys.readouterr().err
    assert len(Evaluation(sim.options(out, [QUESTION, READER], ["react"], fresh=True)).pending()) == 2


@pytest.mark.long
def test_arbor_eval_runs_every_editing_mode_end_to_end(
    sim: Sim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [
        "eval",
        "--tasks",
        BUG,
        "--modes",
        "react,lats,plan,workflow",
        "--model",
        MODEL,
        "--out",
        str(out),
    ]
    code = main([*argv, "--no-baseline", "--jobs", "4", "--budget-tokens", "100000"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    report = load_report(out / REPORT_FILE)
    assert {(r.mode, r.status) for r in report.runs} == {
        ("react", "solved"),
        ("lats", "solved"),
        ("plan", "solved"),
        ("workflow", "solved"),
    }
    runs = by_key(report)
    assert {"lats.expansion", "lats.evaluation"} <= set(runs[(BUG, "lats")].usage)
    assert {"plan.planner", "plan.executor", "plan.replanner"} <= set(runs[(BUG, "plan")].usage)
    assert "orchestrator" in runs[(BUG, "workflow")].usage
    for mode in ("react", "lats", "plan", "workflow"):
        assert re.search(rf"^{mode}\s+1/1\s+100%", printed.out, re.MULTILINE), printed.out
    assert f"report: {out / REPORT_FILE}" in printed.out
    # Every architecture's requests were answered for this task, each recognised by its prompts.
    assert {mode for mode, task in sim.model.requests if task == BUG} == {"react", "lats", "plan", "workflow"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "react,auto"], "unknown mode(s) auto"),
        (["--modes", "react,react"], "named twice"),
        (["--runs", "0"], "--runs must be at least 1"),
        (["--budget-seconds", "-1"], "--budget-seconds must be positive"),
        (["--tasks", "no-such-task*"], "no task matches --tasks 'no-such-task*'"),
        (["--tasks-dir", "/nonexistent/tasks"], "no such task directory"),
        (["--model", "qwen2.5-coder:7b"], "the model cannot be used"),
    ],
)
def test_bad_arguments_are_refused_with_a_message(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_an_unreachable_model_server_stops_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # conftest points OLLAMA_HOST at the discard port: nothing answers there.
    assert main(["eval", "--tasks", BUG, "--model", MODEL, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "the model cannot be used" in err and "reachable" in err
    assert not (tmp_path / "out").exists()


def test_a_model_not_pulled_is_named(sim: Sim, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tasks", BUG, "--model", "ollama:nope:1b", "--out", str(tmp_path / "o")]) == 2
    assert "nope:1b" in capsys.readouterr().err


def test_summary_figures_and_cost_against_the_baseline() -> None:
    def run(task: str, mode: str, status: str, tokens: int) -> EvalRun:
        return EvalRun(task=task, mode=mode, status=status, input_tokens=tokens, wall_s=1.0)  # type: ignore[arg-type]

    report = EvalReport(
        model=MODEL,
        modes=["lats", RETRY_MODE],
        tasks=["a", "b"],
        budget_tokens=100,
        budget_s=10,
        runs=[
            run("a", "lats", "solved", 700),
            run("b", "lats", "over_budget", 300),
            run("a", RETRY_MODE, "solved", 100),
            run("b", RETRY_MODE, "failed", 100),
        ],
    )
    assert cost_ratio(report, "lats") == 5.0 and cost_ratio(report, RETRY_MODE) == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(1, 2)
    assert low == pytest.approx(0.0945, abs=1e-3) and high == pytest.approx(0.9055, abs=1e-3)
    page = chart_html(report)
    assert page.count('class="rate') == 2 and page.count('class="cost') == 2
    assert json.loads(report.model_dump_json())["modes"] == ["lats", RETRY_MODE]


def test_an_output_path_that_cannot_hold_the_report_is_refused(
    sim: Sim, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("not a directory\n")
    assert main(["eval", "--tasks", BUG, "--model", MODEL, "--out", str(taken)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write the report in {taken}" in err and "Traceback" not in err
    assert sim.model.requests == []
