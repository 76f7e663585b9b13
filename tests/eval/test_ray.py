"""``arbor eval --ray``: the same runs as Ray tasks on a local Ray cluster of two CPUs (started once for this
file, bound to 127.0.0.1), the real backend on the workers, the shipped tasks, FakeOllama answering as the
eval-task simulator and a small CLI agent metered by its proxy. A Ray-backed report equals a local one in
everything but wall times; an interrupted Ray eval resumes; a worker that dies is that run's error; without
Ray the flag says how to install it."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ide.cli import main
from ide.eval.agents import agents_under_test
from ide.eval.runner import EvalOptions, Evaluation
from ide.eval.tasks import EvalTask, load_tasks
from ide.protocol.eval import RETRY_MODE, EvalReport, EvalRun, load_report
from ide.protocol.tree import read_jsonl
from tests.support.agent_eval import FIX_FILE, FIX_TASK, QUESTION_TASK, eval_agent_command, fixed_text
from tests.support.eval_model import EvalModel
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI

MODEL = "ollama:qwen2.5-coder:7b"
RAY_INSTALL = "pip install 'arbor-ide[ray]'"

pytestmark = [
    pytest.mark.timeout(240),
    # Ray's import asks the frozen importer for a module repr (Python 3.11 warns; not ours to fix).
    pytest.mark.filterwarnings("ignore:BuiltinImporter.module_repr:DeprecationWarning"),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray instance of two CPUs for this file; its GCS address."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip(f"Ray is not installed ({RAY_INSTALL})")
    # A short session directory under the run's temp dir: Ray's socket paths must fit in 107 bytes.
    temp = tmp_path_factory.mktemp("r")
    # Ray's driver sets variables of its own (PYTHONBREAKPOINT, RAY_USAGE_STATS_ENABLED) and keeps them after
    # its shutdown: the worker's environment is put back as it was, or every later `python -m ide` of this
    # worker would differ from its fork server's and start an interpreter of its own.
    environ = dict(os.environ)
    try:
        with pytest.MonkeyPatch.context() as patch:
            # Ray's servers listen on every interface: token auth on, with a token of this run's (never
            # written to the user's ~/.ray).
            patch.setenv("RAY_AUTH_MODE", "token")
            patch.setenv("RAY_AUTH_TOKEN", uuid.uuid4().hex)
            import ray  # after the variables: Ray reads its auth mode as it is imported

            context = ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address="127.0.0.1",
                _temp_dir=str(temp),
            )
            try:
                yield context.address_info["gcs_address"]
            finally:
                ray.shutdown()
    finally:
        os.environ.clear()
        os.environ.update(environ)


@pytest.fixture(scope="module")
def tasks() -> dict[str, EvalTask]:
    return {t.id: t for t in load_tasks(f"{FIX_TASK},{QUESTION_TASK}")}


def _block(text: str) -> str:
    return f"FILE: {FIX_FILE}\n````\n{text}````\n"


@pytest.fixture
def servers(
    tasks: dict[str, EvalTask], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[EvalModel, FakeOpenAI]]:
    """The simulated model behind Ollama (Arbor's modes) and an OpenAI-compatible server (the agent)."""
    model = EvalModel(tasks.values())
    ollama = FakeOllama(responder=model).start()
    monkeypatch.setenv("OLLAMA_HOST", ollama.url)
    fixed = fixed_text(tmp_path)

    def side(body: dict[str, Any]) -> dict[str, Any]:
        asked = str(body.get("messages"))
        return (
            {"content": "Fixed.\n" + _block(fixed)}
            if "naturalsize(1000)" in asked
            else {"content": "no idea"}
        )

    try:
        with FakeOpenAI(side=side) as openai:
            yield model, openai
    finally:
        ollama.close()


def options(out: Path, by_id: dict[str, EvalTask], server: str, **kw: Any) -> EvalOptions:
    (agent,) = agents_under_test([_choice()])
    defaults: dict[str, Any] = {
        "model": MODEL,
        "modes": ["react"],
        "tasks": [by_id[FIX_TASK], by_id[QUESTION_TASK]],
        "budget_tokens": 60_000,
        "budget_s": 90.0,
        "jobs": 2,
        "agents": [agent],
        "model_server": server,
    }
    return EvalOptions(out=out, **{**defaults, **kw})


def _choice() -> Any:
    from ide.client.agentproc import resolve_agent

    return resolve_agent(eval_agent_command(), {})


def evaluate(opts: EvalOptions, **kw: Any) -> EvalReport:
    return asyncio.run(Evaluation(opts, log=io.StringIO(), **kw).run())


def comparable(run: EvalRun) -> dict[str, Any]:
    """A run's record but its wall time (and a failed check's output, which names its temp paths)."""
    data = run.model_dump(exclude={"wall_s"})
    if run.status != "solved":
        data["reason"] = bool(run.reason)
    return data


def test_a_ray_eval_and_a_local_one_give_identical_reports(
    cluster: str, servers: tuple[EvalModel, FakeOpenAI], tasks: dict[str, EvalTask], tmp_path: Path
) -> None:
    model, openai = servers
    local = evaluate(options(tmp_path / "local", tasks, openai.url))
    asked_locally = len(model.requests)
    remote = evaluate(options(tmp_path / "ray", tasks, openai.url, ray=cluster))
    assert len(model.requests) == 2 * asked_locally  # the same calls again, none more

    assert len(local.runs) == len(remote.runs) == 6
    mine = {r.key: comparable(r) for r in local.runs}
    theirs = {r.key: comparable(r) for r in remote.runs}
    assert theirs == mine
    statuses = {(r.task, r.mode): (r.status, r.tries) for r in remote.runs}
    assert statuses[(FIX_TASK, RETRY_MODE)] == ("solved", 1)
    fix = next(r for r in remote.runs if (r.task, r.mode) == (FIX_TASK, "agent:eval_agent"))
    assert (fix.status, fix.tries) == ("solved", 1), fix.reason
    assert statuses[(QUESTION_TASK, "agent:eval_agent")][0] == "failed"
    assert statuses[(QUESTION_TASK, "react")][0] == "solved"
    # The files the workers sent back, written beside the report as a local run writes them.
    for run in remote.runs:
        if run.tree_file is not None:
            assert len(read_jsonl(tmp_path / "ray" / run.tree_file)) == len(
                read_jsonl(tmp_path / "local" / run.tree_file)
            )
        if run.diff_file is not None:
            assert (tmp_path / "ray" / run.diff_file).read_text() == (
                tmp_path / "local" / run.diff_file
            ).read_text()
    agent_run = next(r for r in remote.runs if r.mode == "agent:eval_agent" and r.task == FIX_TASK)
    assert agent_run.metered and agent_run.tokens > 0 and agent_run.transcript_file
    summary = [s.model_dump(exclude={"median_wall_s"}) for s in load_report(tmp_path / "ray").summary]
    assert summary == [s.model_dump(exclude={"median_wall_s"}) for s in local.summary]


def test_an_interrupted_ray_eval_resumes_with_only_the_missing_runs(
    cluster: str, servers: tuple[EvalModel, FakeOpenAI], tasks: dict[str, EvalTask], tmp_path: Path
) -> None:
    model, openai = servers
    model.skills = {f"{FIX_TASK}/react": "read"}  # reads on and on: the stop lands in it
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    opts = options(out, tasks, openai.url, ray=cluster, agents=[], baseline=False, scratch_dir=scratch)
    evaluation = Evaluation(opts, log=io.StringIO())
    evaluation.on_run = lambda run: evaluation.stop()  # the question's run ends first (as a rule): stop then
    stopped = asyncio.run(evaluation.run())
    (first,) = stopped.runs
    other = FIX_TASK if first.task == QUESTION_TASK else QUESTION_TASK
    saved = load_report(out)
    assert saved.finished_at is None and saved.runs == stopped.runs
    # The cancelled run ended on its worker as a local one does: its backend stopped, its scratch gone.
    assert not list(scratch.iterdir())

    model.skills = {}
    asked_before = len(model.requests)
    # The same command resumes it (arbor eval --ray: this process is connected already, so it stays so).
    argv = ["eval", "--ray", cluster, "--jobs", "2", "--modes", "react", "--no-baseline", "--model", MODEL]
    argv += ["--tasks", f"{FIX_TASK},{QUESTION_TASK}", "--budget-tokens", "60000", "--budget-seconds", "90"]
    assert main([*argv, "--out", str(out)]) == 0
    resumed = load_report(out)
    assert [r.task for r in resumed.runs] == [first.task, other]
    assert resumed.runs[0] == first and resumed.runs[1].status == "solved"
    assert resumed.finished_at is not None and (out / "chart.html").is_file()
    assert {task for _, task in model.requests[asked_before:]} == {other}  # only the missing run asked


def test_a_worker_that_dies_is_that_runs_error_not_a_traceback(
    cluster: str, tasks: dict[str, EvalTask], tmp_path: Path
) -> None:
    # The "backend" kills the process that started it: the Ray worker making the run.
    killer = [sys.executable, "-c", "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"]
    opts = options(
        tmp_path / "out", tasks, "http://127.0.0.1:9", ray=cluster, agents=[], baseline=False,
        backend_command=killer, tasks=[tasks[QUESTION_TASK]],
    )  # fmt: skip
    report = evaluate(opts)
    (run,) = report.runs
    assert (
        run.status == "error"
        and run.reason == "the Ray worker running it died (killed, out of memory, or crashed)"
    )
    assert report.finished_at is not None


def test_without_ray_the_flag_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    out = tmp_path / "out"
    assert (
        main(["eval", "--ray", "local", "--tasks", QUESTION_TASK, "--model", MODEL, "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err
    assert RAY_INSTALL in err and "Traceback" not in err
    assert not out.exists()


def test_ray_is_not_imported_unless_asked_for() -> None:
    code = (
        "import sys, ide.cli, ide.eval.cli, ide.eval.runner, ide.eval.execute;"
        "from ide.eval.runner import Evaluation;"
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_local_ray_instance_arbor_started_leaves_the_drivers_environment_as_it_was(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # In a process of its own (this worker's Ray is the module's): Ray's driver sets PYTHONBREAKPOINT and
    # more, which whatever the driver starts next would inherit.
    if importlib.util.find_spec("ray") is None:
        pytest.skip(f"Ray is not installed ({RAY_INSTALL})")
    code = (
        "import os, sys; from pathlib import Path; from ide.eval.distributed import RayRuns;"
        "before = dict(os.environ); runs = RayRuns('local', 1, temp_dir=Path(sys.argv[1]));"
        "runs.open(); during = dict(os.environ); os.environ['MEANWHILE'] = '1'; runs.close();"
        "print(sorted(set(during.items()) - set(before.items())) != [],"
        "      dict(os.environ) == {**before, 'MEANWHILE': '1'})"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONBREAKPOINT" and not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=uuid.uuid4().hex)  # not this module's instance's
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path_factory.mktemp("r"))],  # short: Ray's socket paths
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]  # Ray did set some; they went, and only they


def test_the_drivers_model_variables_go_with_each_run_and_its_own_dirs_do_not() -> None:
    from ide.eval.distributed import forwarded_env

    environ = {
        "OLLAMA_HOST": "http://10.0.0.5:11434",
        "OPENAI_API_KEY": "sk-x",
        "ARBOR_LLM_OPENAI_BASE_URL": "http://10.0.0.6:8080/v1",
        "ARBOR_DATA_DIR": "/home/me/data",
        "ARBOR_CONFIG_DIR": "/home/me/config",
        "PATH": "/usr/bin",
        "HOME": "/home/me",
    }
    assert forwarded_env(environ) == {
        "OLLAMA_HOST": "http://10.0.0.5:11434",
        "OPENAI_API_KEY": "sk-x",
        "ARBOR_LLM_OPENAI_BASE_URL": "http://10.0.0.6:8080/v1",
    }


def test_a_run_that_raises_on_its_worker_is_an_error_saying_what_it_raised(
    cluster: str, tasks: dict[str, EvalTask], tmp_path: Path
) -> None:
    from ide.eval.distributed import RayRuns
    from ide.eval.execute import RunSpec
    from ide.eval.session import RunSettings

    # An agent mode with no agent behind it: execute() fails on the worker before anything starts.
    spec = RunSpec(tasks[QUESTION_TASK], "agent:ghost", 0, RunSettings(MODEL, 1000, 10.0))
    runs = RayRuns(cluster, 1)
    runs.open()
    try:
        record = asyncio.run(runs.run(spec))
    finally:
        runs.close()
    assert record.run.key == (QUESTION_TASK, "agent:ghost", 0) and record.run.status == "error"
    assert record.run.reason.startswith("the run raised RuntimeError on its Ray worker: ")
    assert "Traceback" not in record.run.reason and "\n" not in record.run.reason
    assert record.files == {}


@pytest.mark.parametrize(
    "path", ["../report.json", "trees/../../x", "/etc/passwd", "other/x.txt", "trees/a/b", "trees/.hidden"]
)
def test_a_worker_names_no_file_outside_trees_and_agents(path: str) -> None:
    from ide.eval.execute import RunRecord

    run = EvalRun(task="t", mode="react", status="failed")
    assert RunRecord.from_wire({"run": run.model_dump(mode="json"), "files": {"trees/t.jsonl": "{}"}})
    with pytest.raises(ValueError, match="outside trees/ and agents/"):
        RunRecord.from_wire({"run": run.model_dump(mode="json"), "files": {path: "x"}})
