"""``arbor eval --jobs 4`` against a real ``llama-server -np 4``, next to the same runs with ``--jobs 1``.

llama.cpp's ``llama-server`` with a real tiny model (Gemma 3 270M, from ``scripts/realmodel.py``) serves
four slots (``-np 4``, ``-c`` four times the context per slot, so each slot has it whole). The same
evaluation — ``--tasks`` in ReAct, no baseline, answers capped, a token budget per run — runs as the real
command (``python -m ide eval``, a fresh ``--out`` each time) with ``--jobs 1`` and ``--jobs 4``,
alternated (which goes first flips every round), after one ``--jobs 4`` eval that is not counted: it fills
every slot's prompt cache (the tool list and system prompt every run sends), which the first round would
otherwise pay on one side only. The figure is throughput: runs finished per minute of the
command's wall time, medians over ``--runs``, and their ratio (issue 50's target: ≥ 2.5×). Beside it, where
a run's time goes, measured alone, one at a time: building a task's workspace, ``arbor acp`` from spawn to
its session, the task's check, and the model's share (the runs' summed wall time less those); and per
round, the CPU time Arbor's processes (the eval, its backends, the checks) and the server used, and the
server's own counters (``--metrics``: prompt tokens processed and taken from its cache, seconds spent).
Two cores can make at most ``2 / (CPU seconds per run)`` runs a second, whatever ``--jobs``: the JSON's
``cpu_bound_ratio`` is that ceiling over the ``--jobs 1`` throughput. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ide.eval.tasks import build_workspace, load_tasks, run_check  # noqa: E402
from tests.support.net import free_port  # noqa: E402
from tests.support.realmodel import GET_IT, TOOLS_TEMPLATE, cached  # noqa: E402

TASKS = "toolz-*,q-toolz-*"
CONTEXT_PER_SLOT = 8192
SLOTS = 4
LOAD_TIMEOUT_S = 120.0


@contextmanager
def server(threads: int) -> Iterator[tuple[str, int]]:
    """``llama-server -np 4 --metrics`` on 127.0.0.1 with the tools template; its /v1 URL and pid."""
    found = cached()
    if found is None:
        raise SystemExit(f"no llama-server and model cached here: run {GET_IT}")
    binary, model = found
    with tempfile.TemporaryDirectory(prefix="arbor-bench-") as folder:
        template = Path(folder) / "template.jinja"
        template.write_text(TOOLS_TEMPLATE)
        port = free_port()
        command = [str(binary), "-m", str(model), "-c", str(CONTEXT_PER_SLOT * SLOTS), "-np", str(SLOTS)]
        command += ["--host", "127.0.0.1", "--port", str(port), "-t", str(threads), "--jinja"]
        command += ["--chat-template-file", str(template), "--metrics"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + LOAD_TIMEOUT_S
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                        if answer.status == 200:
                            break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"llama-server did not start (exit {process.poll()})")
                time.sleep(0.2)
            yield f"http://127.0.0.1:{port}/v1", process.pid
        finally:
            process.kill()
            process.wait(timeout=10)


def server_figures(url: str, pid: int) -> dict[str, float]:
    """The server's counters (``/metrics``) and its CPU seconds so far."""
    figures: dict[str, float] = {}
    with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("llamacpp:") and not line.startswith("#"):
                name, _, value = line.partition(" ")
                figures[name.removeprefix("llamacpp:")] = float(value)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    figures["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return figures


COUNTERS = (
    "prompt_tokens_total",
    "prompt_tokens_cached_total",
    "prompt_seconds_total",
    "tokens_predicted_total",
    "tokens_predicted_seconds_total",
    "cpu_s",
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def environment(url: str, cap: int) -> dict[str, str]:
    """The eval's environment: the server, a throwaway config and data dir, bytecode cached."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBOR_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    scratch = Path(tempfile.mkdtemp(prefix="arbor-bench-env-"))
    env.update(
        {
            "ARBOR_CONFIG_DIR": str(scratch / "config"),
            "ARBOR_DATA_DIR": str(scratch / "data"),
            "PYTHONPYCACHEPREFIX": str(scratch / "pycache"),
            "OPENAI_API_KEY": "sk-no-key-needed",
            "ARBOR_LLM_OPENAI_BASE_URL": url,
            "ARBOR_LLM_TEMPERATURE": "0",
            "ARBOR_LLM_MAX_ANSWER_TOKENS": str(cap),
        }
    )
    return env


def evaluate(
    jobs: int, env: dict[str, str], args: argparse.Namespace, model: str, url: str, pid: int
) -> dict[str, Any]:
    """One ``arbor eval --jobs N`` of the whole set: its wall time, runs, statuses and the runs' own times,
    the CPU it and the server used, the server's counters."""
    before, cpu_before = server_figures(url, pid), children_cpu()
    with tempfile.TemporaryDirectory(prefix="arbor-bench-eval-") as out:
        command = [sys.executable, "-m", "ide", "eval", "--tasks", args.tasks, "--modes", "react"]
        command += ["--no-baseline", "--model", f"openai:{model}", "--jobs", str(jobs), "--out", out]
        command += ["--budget-tokens", str(args.budget_tokens), "--budget-seconds", str(args.budget_seconds)]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"arbor eval --jobs {jobs} exited {done.returncode}: {done.stderr[-2000:]}")
        report = json.loads((Path(out) / "report.json").read_text())
    after, arbor_cpu = server_figures(url, pid), children_cpu() - cpu_before
    runs = report["runs"]
    statuses: dict[str, int] = {}
    for run in runs:
        statuses[run["status"]] = statuses.get(run["status"], 0) + 1
    return {
        "jobs": jobs,
        "wall_s": round(wall, 2),
        "runs": len(runs),
        "runs_per_min": round(len(runs) / wall * 60, 2),
        "statuses": statuses,
        "tokens": sum(r["input_tokens"] + r["output_tokens"] for r in runs),
        "model_calls": sum(r["model_calls"] for r in runs),
        "run_wall_s_sum": round(sum(r["wall_s"] for r in runs), 2),
        "arbor_cpu_s": round(arbor_cpu, 2),
        "server": {name: round(after[name] - before[name], 2) for name in COUNTERS},
    }


async def backend_start(env: dict[str, str], workspace: Path) -> float:
    """``arbor acp`` from spawn to its session (initialize, session/new) in ``workspace``."""
    from ide.client.agentconn import ClientCallbacks, connect, initialize
    from ide.client.agentproc import AgentProcess, default_backend_command

    started = time.perf_counter()
    agent = await AgentProcess.spawn(default_backend_command(), env)
    conn = connect(agent, ClientCallbacks(lambda sid, update: None, lambda: None, lambda m, p: None))
    try:
        await initialize(conn, meta={"review": True, "tree": True}, client="arbor-bench")
        await conn.new_session(cwd=str(workspace), mcp_servers=[])
        return time.perf_counter() - started
    finally:
        await agent.stop(conn)


def fixed_costs(env: dict[str, str], pattern: str, samples: int) -> dict[str, float]:
    """Medians of a run's costs that are not the model's, each measured alone."""
    tasks = load_tasks(pattern)[:samples]
    build, start, check = [], [], []
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="arbor-bench-ws-") as folder:
            workspace = Path(folder) / "workspace"
            began = time.perf_counter()
            build_workspace(task, workspace)
            build.append(time.perf_counter() - began)
            start.append(asyncio.run(backend_start(env, workspace)))
            began = time.perf_counter()
            run_check(task, workspace, "")
            check.append(time.perf_counter() - began)
    return {
        "workspace_build_s": round(statistics.median(build), 3),
        "backend_to_session_s": round(statistics.median(start), 3),
        "check_s": round(statistics.median(check), 3),
    }


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="rounds of (jobs 1, jobs 4), alternated")
    parser.add_argument("--tasks", default=TASKS, help=f"task glob(s) (default: {TASKS})")
    parser.add_argument("--jobs", type=int, default=4, help="the parallel side's --jobs (default: 4)")
    parser.add_argument("--threads", type=int, default=2, help="llama-server's -t (default: 2)")
    parser.add_argument("--cap", type=int, default=128, help="llm.max_answer_tokens (default: 128)")
    parser.add_argument("--budget-tokens", type=int, default=8000)
    parser.add_argument("--budget-seconds", type=float, default=180.0)
    args = parser.parse_args()
    found = cached()
    if found is None:
        raise SystemExit(f"no llama-server and model cached here: run {GET_IT}")
    model = str(found[1])
    load = [loadavg()]
    rounds: list[dict[str, Any]] = []
    with server(args.threads) as (url, pid):
        env = environment(url, args.cap)
        costs = fixed_costs(env, args.tasks, samples=3)
        warmup = evaluate(args.jobs, env, args, model, url, pid)
        for number in range(args.runs):
            order = (1, args.jobs) if number % 2 == 0 else (args.jobs, 1)
            rounds.extend(evaluate(jobs, env, args, model, url, pid) for jobs in order)
            load.append(loadavg())
    one = [r for r in rounds if r["jobs"] == 1]
    many = [r for r in rounds if r["jobs"] == args.jobs]
    rpm_one = statistics.median(r["runs_per_min"] for r in one)
    rpm_many = statistics.median(r["runs_per_min"] for r in many)
    per_run = statistics.median(r["run_wall_s_sum"] / r["runs"] for r in one)
    fixed = costs["workspace_build_s"] + costs["backend_to_session_s"] + costs["check_s"]
    cpu_per_run = statistics.median((r["arbor_cpu_s"] + r["server"]["cpu_s"]) / r["runs"] for r in rounds)
    arbor_per_run = statistics.median(r["arbor_cpu_s"] / r["runs"] for r in rounds)
    ceiling = (os.cpu_count() or 1) / cpu_per_run * 60
    print(
        json.dumps(
            {
                "tasks": args.tasks,
                "server": f"llama-server -np {SLOTS} -c {CONTEXT_PER_SLOT * SLOTS} -t {args.threads}",
                "cap_tokens": args.cap,
                "runs_per_min_jobs1": rpm_one,
                f"runs_per_min_jobs{args.jobs}": rpm_many,
                "throughput_ratio": round(rpm_many / rpm_one, 2),
                "target_ratio": 2.5,
                "per_run_jobs1_s": round(per_run, 2),
                "per_run_fixed_costs": costs,
                "per_run_model_and_rest_s": round(per_run - fixed, 2),
                "cpu_s_per_run": round(cpu_per_run, 2),
                "arbor_cpu_s_per_run": round(arbor_per_run, 2),
                "cpu_bound_runs_per_min": round(ceiling, 2),
                "cpu_bound_ratio": round(ceiling / rpm_one, 2),
                "rounds": rounds,
                "warmup": warmup,
                "loadavg": load,
                "cpus": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
