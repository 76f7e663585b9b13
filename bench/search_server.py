"""LATS against a real inference server: what a batching server buys the search.

llama.cpp's ``llama-server`` with a real tiny model (Gemma 3 270M, from ``scripts/realmodel.py``) answers
LATS (``--iterations`` × 5 expansions, each scored by an evaluation call) three ways in one run:
sequential (one slot, one call at a time), 5 concurrent calls to one slot (``-np 1``: the server queues
them) and 5 concurrent calls to four slots (``-np 4``: it batches them). The model rambles, so the tree it
grows differs from run to run; wall time is reported with the calls and tokens it took, and the figure
that compares the three is output tokens per second of wall time. Answers are capped
(``llm.max_answer_tokens``) so a run stays short. Prints JSON, medians over ``--runs``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.search import make_workspace  # noqa: E402
from ide.changes import ChangeSet  # noqa: E402
from ide.llm import ModelRouter  # noqa: E402
from ide.search.base import RunContext  # noqa: E402
from ide.search.lats import LatsSearch  # noqa: E402
from ide.search.tree import TreeRecorder  # noqa: E402
from ide.settings import Settings  # noqa: E402
from tests.support.realmodel import GET_IT, cached, llama_server  # noqa: E402

WIDTH = 5
CONTEXT_PER_SLOT = 4096
CONFIGS = (("sequential", 1, 1), ("np1_concurrent5", 1, WIDTH), ("np4_concurrent5", 4, WIDTH))
"""(name, server slots, concurrent calls Arbor makes)."""


async def run_once(
    workspace: Path, url: str, model: str, concurrency: int, iterations: int, cap: int
) -> dict:
    settings = Settings.model_validate(
        {
            "llm": {
                "model": f"openai:{model}",
                "openai_base_url": url,
                "concurrency": {"openai": concurrency},
                "max_answer_tokens": cap,
            },
            "lats": {"max_iterations": iterations, "expansion_width": WIDTH, "max_depth": 4},
        }
    )

    async def progress(event: dict[str, Any]) -> None:
        return None

    ctx = RunContext(
        task="Change the greeting in pkg/greet.py to say hello",
        settings=settings,
        router=ModelRouter(settings, base_dir=workspace),
        changeset=ChangeSet(workspace),
        recorder=TreeRecorder(architecture="lats"),
        progress=progress,
    )
    start = time.perf_counter()
    outcome = await LatsSearch().run(ctx)
    wall = time.perf_counter() - start
    figures = outcome.figures
    return {
        "wall_s": wall,
        "model_calls": figures.get("model_calls", 0),
        "output_tokens": figures.get("output_tokens", 0),
        "nodes": figures.get("nodes", 0),
    }


def run(runs: int, iterations: int, cap: int) -> dict[str, Any]:
    found = cached()
    if found is None:
        return {"benchmark": "search_server", "skipped": f"no llama-server or model cached: {GET_IT}"}
    binary, model = found
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="arbor-bench-") as tmp:
        workspace = make_workspace(Path(tmp) / "repo")
        for name, slots, concurrency in CONFIGS:
            with llama_server(binary, model, context=CONTEXT_PER_SLOT * slots, slots=slots) as server:
                asyncio.run(run_once(workspace, server.url, server.model, concurrency, 1, cap))  # warm-up
                for _ in range(runs):
                    results[name].append(
                        asyncio.run(
                            run_once(workspace, server.url, server.model, concurrency, iterations, cap)
                        )
                    )
    out: dict[str, Any] = {
        "benchmark": "search_server",
        "architecture": "lats",
        "model": model.name,
        "runs": runs,
        "iterations": iterations,
        "expansion_width": WIDTH,
        "max_answer_tokens": cap,
        "context_per_slot": CONTEXT_PER_SLOT,
    }
    for name, rows in results.items():
        rates = [r["output_tokens"] / r["wall_s"] for r in rows if r["wall_s"] > 0]
        out[name] = {
            "wall_s": round(statistics.median(r["wall_s"] for r in rows), 2),
            "model_calls": statistics.median(r["model_calls"] for r in rows),
            "output_tokens": statistics.median(r["output_tokens"] for r in rows),
            "output_tokens_per_s": round(statistics.median(rates), 1) if rates else None,
        }
    base = out["sequential"]["output_tokens_per_s"]
    for name, _, _ in CONFIGS[1:]:
        rate = out[name]["output_tokens_per_s"]
        out[name]["throughput_vs_sequential"] = round(rate / base, 2) if base and rate else None
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--max-answer-tokens", type=int, default=64)
    args = parser.parse_args()
    print(json.dumps(run(args.runs, args.iterations, args.max_answer_tokens), indent=2))
