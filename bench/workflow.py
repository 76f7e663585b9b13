"""Benchmark of the workflow orchestrator's fixed costs: upfront retrieval, plan assembly, graph compile.

Upfront retrieval is what a code workflow does before its first stage: for every planned stage of
feature_with_iterative_testing, queries from the task, the code index (definitions with their source),
documents, memory and the other configured sources, then context fusion (grounding check, dedupe, BM25,
relevance threshold, token budget, consistency check) — exactly ``WorkflowRun.upfront_context``. It runs
over the same corpus as bench/index.py (the standard library plus Arbor's installed dependencies, ~10k
indexed files) with the index warm. The peer, measured in the same run on the same queries: ``grep -rIl``
over the corpus (what an agent without an index would do first, and it only finds file names). Prints
JSON; medians. Besides the times: snippets and context tokens per run (all stages), snippets the
relevance threshold dropped and conflicts the consistency check flagged.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.llm import ModelRouter
from ide.search.base import RunContext
from ide.search.tree import TreeRecorder
from ide.settings import Settings
from ide.tools import ToolServices
from ide.workflows.graph import build_workflow_graph
from ide.workflows.loader import load_catalog
from ide.workflows.plan import StageDecision, assemble_plan
from ide.workflows.queries import queries_from_task
from ide.workflows.runner import WorkflowRun

BELOW = re.compile(r"(\d+) snippets? below the relevance threshold")
"""The count the retrieval line of the tree gives for ``workflows.min_relevance``."""

TASKS = (
    "add a --version flag to the CLI",
    "fix JSONEncoder so that float('nan') raises a clear ValueError when allow_nan is false",
    "make http.client.HTTPConnection retry once when the connection is reset",
    "add type hints to textwrap.dedent and its helpers",
    "support a timeout argument in subprocess.check_output callers of the email package",
)


def _bench_index_module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_index", Path(__file__).with_name("index.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context_for(corpus: Path, index: CodeIndex, settings: Settings, task: str) -> RunContext:
    async def ignore(_event: dict[str, Any]) -> None:
        return None

    return RunContext(
        task=task,
        settings=settings,
        router=ModelRouter(settings, base_dir=corpus),
        changeset=ChangeSet(corpus),
        recorder=TreeRecorder(architecture="workflow"),
        progress=ignore,
        services=ToolServices(index=index),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--site-packages", default=None, help="as bench/index.py's (default: Arbor's deps)")
    parser.add_argument(
        "--min-relevance", type=float, default=None, help="workflows.min_relevance (default: the setting's)"
    )
    args = parser.parse_args()
    catalog = load_catalog(None)
    workflow = catalog.get("feature_with_iterative_testing")
    decisions = {"3": StageDecision(include=True), "4": StageDecision(include=False)}

    assembly = []
    for _ in range(2000):
        started = time.perf_counter()
        plan = assemble_plan(workflow, decisions)
        assembly.append(time.perf_counter() - started)

    with tempfile.TemporaryDirectory(prefix="arbor-bench-workflow-") as tmp:
        corpus = Path(tmp) / "corpus"
        third_party = Path(args.site_packages) if args.site_packages else None
        info = _bench_index_module().build_corpus(corpus, third_party)
        settings = Settings.model_validate(
            {
                "llm": {"model": "scripted:unused.jsonl"},
                "data_dir": str(Path(tmp) / "data"),
                "workflows": {} if args.min_relevance is None else {"min_relevance": args.min_relevance},
            }
        )
        index = CodeIndex(corpus, Path(tmp) / "index.sqlite", settings.workspace)
        started = time.perf_counter()
        stats = index.refresh()
        index_s = time.perf_counter() - started

        compile_s = []
        for _ in range(50):
            run = WorkflowRun(context_for(corpus, index, settings, TASKS[0]), catalog, workflow, plan)
            started = time.perf_counter()
            build_workflow_graph(plan, run, max_enrichments=2, max_stage_runs=12)
            compile_s.append(time.perf_counter() - started)

        upfront: list[float] = []
        grep: list[float] = []
        snippets: list[int] = []
        below: list[int] = []
        conflicts: list[int] = []
        tokens: list[int] = []
        for _ in range(args.runs):
            for task in TASKS:
                run = WorkflowRun(context_for(corpus, index, settings, task), catalog, workflow, plan)
                started = time.perf_counter()
                context = asyncio.run(run.upfront_context())
                upfront.append(time.perf_counter() - started)
                snippets.append(sum(text.count("\n```\n") for text in context.values()))
                conflicts.append(sum(text.count("⚠ conflicting:") for text in context.values()))
                tokens.append(sum(len(text) // 4 for text in context.values()))
                lines = [n.thought or "" for n in run.ctx.recorder.tree.nodes.values()]
                below.append(sum(int(n) for line in lines for n in BELOW.findall(line)))
                terms = [t for t in queries_from_task(task) if len(t) > 2][:8]
                command = ["grep", "-rIl", *[arg for t in terms for arg in ("-e", t)], str(corpus)]
                started = time.perf_counter()
                subprocess.run(command, capture_output=True, check=False)
                grep.append(time.perf_counter() - started)
        index.close()

    med = statistics.median
    result = {
        "corpus": {
            **info,
            "indexed_files": stats.files,
            "definitions": stats.symbols,
            "index_s": round(index_s, 2),
        },
        "planned_stages": plan.order,
        "upfront_retrieval_s": {
            "median": round(med(upfront), 3),
            "p90": round(sorted(upfront)[int(0.9 * (len(upfront) - 1))], 3),
            "max": round(max(upfront), 3),
            "target": 1.0,
        },
        "snippets_per_run_median": med(snippets),
        "context_tokens_per_run_median": med(tokens),
        "below_relevance_threshold_per_run_median": med(below),
        "conflicts_flagged_per_run_median": med(conflicts),
        "peer_grep_rIl_s": round(med(grep), 3),
        "ratio_to_grep": round(med(upfront) / med(grep), 2),
        "plan_assembly_ms": round(med(assembly) * 1000, 3),
        "graph_compile_ms": round(med(compile_s) * 1000, 2),
        "min_relevance": settings.workflows.min_relevance,
        "runs": args.runs,
        "tasks": len(TASKS),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
