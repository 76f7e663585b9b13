"""Benchmark of LATS scheduling: how close a run's wall time comes to its model-call critical path.

A scripted model answers every call after ``--latency-ms`` (100 ms), with ``llm.concurrency.scripted`` = 5;
LATS runs 5 iterations × 5 expansions with an evaluation per node and finds its solution only in the last
iteration. The critical path is counted from the run: consecutive calls of one phase form a wave, and a
wave of n calls takes ceil(n / concurrency) rounds of the latency. The same run with no latency gives
the bookkeeping cost per node (everything that is not waiting for the model). Prints JSON, medians over
``--runs``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ide.changes import ChangeSet
from ide.llm import ModelRouter
from ide.search.base import RunContext
from ide.search.lats import LatsSearch
from ide.search.tree import TreeRecorder
from ide.settings import Settings

ITERATIONS = 5
WIDTH = 5
CONCURRENCY = 5
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def make_workspace(root: Path) -> Path:
    """A git repository with one small Python package, one commit."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    source = "".join(f"def greet_{i}(name):\n    return name\n\n" for i in range(20))
    (root / "pkg" / "greet.py").write_text(source)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "bench base"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    return root


def script_lines(latency_ms: float, selections: list[str]) -> list[dict[str, Any]]:
    """The run's script: per iteration a selection (from the 2nd), WIDTH expansions, WIDTH evaluations.

    Expansions read distinct line ranges (identical sibling calls would be pruned); the last iteration's
    first candidate answers and is judged a solution. ``selections`` are the ids the selection model names
    (an unknown id falls back to UCT, one call all the same).
    """
    lines: list[dict[str, Any]] = []
    for iteration in range(ITERATIONS):
        if iteration:
            pick = selections[iteration - 1] if iteration - 1 < len(selections) else "n0"
            choice = json.dumps({"node_id": pick, "reason": "most promising"})
            lines.append({"role": "lats.selection", "content": choice})
        last = iteration == ITERATIONS - 1
        for k in range(WIDTH):
            if last and k == 0:
                lines.append({"role": "lats.expansion", "content": "greet_3 is the one to change."})
                continue
            args = {"path": "pkg/greet.py", "start_line": 1 + iteration, "end_line": 2 + iteration + k}
            lines.append(
                {
                    "role": "lats.expansion",
                    "content": "Reading more of the file.",
                    "tool_calls": [{"name": "read_file", "args": args}],
                }
            )
        for k in range(WIDTH):
            solved = last and k == 0
            verdict = {"score": 9 if solved else 6 - k * 0.5, "reflection": "ok", "is_solution": solved}
            lines.append({"role": "lats.evaluation", "content": json.dumps(verdict)})
    return [{**line, "latency_ms": latency_ms} for line in lines]


async def run_once(workspace: Path, script: Path) -> tuple[float, dict[str, Any], list[str], int]:
    """One LATS run: (wall seconds, figures, the nodes it selected, critical-path rounds)."""
    settings = Settings.model_validate(
        {
            "llm": {"model": f"scripted:{script}", "concurrency": {"scripted": CONCURRENCY}},
            "lats": {"max_iterations": ITERATIONS, "expansion_width": WIDTH, "max_depth": 10},
        }
    )

    async def progress(event: dict[str, Any]) -> None:
        return None

    router = ModelRouter(settings, base_dir=workspace)
    roles: list[str] = []
    stream = router.stream

    async def counted(role: str, *args: Any, **kwargs: Any) -> Any:
        roles.append(role)
        return await stream(role, *args, **kwargs)

    router.stream = counted  # type: ignore[method-assign]
    ctx = RunContext(
        task="Find the greeting to change",
        settings=settings,
        router=router,
        changeset=ChangeSet(workspace),
        recorder=TreeRecorder(architecture="lats"),
        progress=progress,
    )
    start = time.perf_counter()
    outcome = await LatsSearch().run(ctx)
    wall = time.perf_counter() - start
    assert outcome.figures["solution_found"], outcome.answer
    nodes = ctx.recorder.tree.nodes
    selected = [n.parent for n in nodes.values() if n.parent is not None]
    parents = list(dict.fromkeys(selected))[1:]  # the root is the first iteration's
    return wall, outcome.figures, [p for p in parents if p is not None], _rounds(roles)


def _rounds(roles: list[str]) -> int:
    """Sequential model-call rounds: each run of consecutive same-phase calls is one concurrent wave."""
    rounds = 0
    index = 0
    while index < len(roles):
        end = index
        while end < len(roles) and roles[end] == roles[index]:
            end += 1
        rounds += math.ceil((end - index) / CONCURRENCY)
        index = end
    return rounds


def run(runs: int = 5, latency_ms: float = 100.0) -> dict[str, Any]:
    walls, ratios, per_node_ms = [], [], []
    figures: dict[str, Any] = {}
    rounds = 0
    with tempfile.TemporaryDirectory(prefix="arbor-bench-") as tmp:
        workspace = make_workspace(Path(tmp) / "repo")
        # A dry run names the nodes UCT selects, so the scripted selection model agrees with it.
        dry = Path(tmp) / "dry.jsonl"
        _write(dry, script_lines(0, []))
        _wall, _figures, selections, _rounds_dry = asyncio.run(run_once(workspace, dry))
        for n in range(runs):
            timed = Path(tmp) / f"timed{n}.jsonl"
            _write(timed, script_lines(latency_ms, selections))
            wall, figures, _selected, rounds = asyncio.run(run_once(workspace, timed))
            critical = rounds * latency_ms / 1000
            walls.append(wall)
            ratios.append(wall / critical)
            instant = Path(tmp) / f"instant{n}.jsonl"
            _write(instant, script_lines(0, selections))
            wall0, figures0, _selected, _rounds0 = asyncio.run(run_once(workspace, instant))
            per_node_ms.append(wall0 * 1000 / figures0["nodes"])
    return {
        "benchmark": "search",
        "architecture": "lats",
        "runs": runs,
        "iterations": ITERATIONS,
        "expansion_width": WIDTH,
        "concurrency": CONCURRENCY,
        "latency_ms": latency_ms,
        "nodes": figures.get("nodes"),
        "model_calls": figures.get("model_calls"),
        "selection_fallbacks": figures.get("selection_fallbacks"),
        "critical_path_rounds": rounds,
        "critical_path_s": round(rounds * latency_ms / 1000, 3),
        "wall_s": round(statistics.median(walls), 3),
        "wall_vs_critical_path": round(statistics.median(ratios), 3),
        "ratio_target": 1.25,
        "bookkeeping_ms_per_node": round(statistics.median(per_node_ms), 2),
    }


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    args = parser.parse_args()
    print(json.dumps(run(args.runs, args.latency_ms), indent=2))
