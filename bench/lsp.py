"""Benchmark of the language-server pool on a real package tree (this repository's ``ide`` package).

Measures, with jedi-language-server: cold start → first definition (fresh pool each time), warm
definition latency (p50/p95) and references (p50) at real call sites taken from the code index, and
``--cycles`` start/stop cycles with a count of processes left behind. The same definitions answered by
jedi's Python API in this process are the floor. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jedi

from ide.codeintel.index import CodeIndex
from ide.codeintel.lsp import At, LspPool
from ide.settings import LspSettings, WorkspaceSettings
from tests.support.procs import group_alive  # /proc reading shared with the tests

ROOT = Path(__file__).resolve().parent.parent


def call_sites(count: int, seed: int = 11) -> list[tuple[Path, int, int]]:
    """Real uses of names the repository defines: (file, 1-based line, 1-based column)."""
    with tempfile.TemporaryDirectory() as tmp:
        index = CodeIndex(ROOT, Path(tmp) / "index.sqlite", WorkspaceSettings(), workers=1)
        index.refresh()
        rows = index.db.execute(
            "SELECT f.path, r.name, r.lines FROM refs r JOIN files f ON f.id = r.file_id "
            "WHERE f.path LIKE 'ide/%' AND f.language = 'python' "
            "AND r.name IN (SELECT name FROM defs) AND length(r.name) > 3"
        ).fetchall()
        index.close()
    rng = random.Random(seed)
    rng.shuffle(rows)
    sites = []
    for path, name, lines in rows:
        line = int(lines.split(",")[0])
        text = (ROOT / path).read_text().splitlines()[line - 1]
        match = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text)
        if match:
            sites.append((ROOT / path, line, match.start() + 1))
        if len(sites) == count:
            break
    return sites


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 2)


async def measure(sites: list[tuple[Path, int, int]], runs: int, cycles: int) -> dict[str, object]:
    settings = LspSettings()
    cold = []
    for _ in range(runs):
        pool = LspPool(settings)
        started = time.perf_counter()
        path, line, column = sites[0]
        await pool.definition(At(ROOT, path, line, column))
        cold.append(time.perf_counter() - started)
        await pool.close()

    pool = LspPool(LspSettings(request_timeout_s=60))
    answered = 0
    warm, refs, first = [], [], []
    for path, line, column in sites:  # open every file once so the timings below are warm queries
        started = time.perf_counter()
        await pool.definition(At(ROOT, path, line, column))
        first.append(time.perf_counter() - started)
    for path, line, column in sites:
        started = time.perf_counter()
        found = await pool.definition(At(ROOT, path, line, column))
        warm.append((time.perf_counter() - started) * 1000)
        answered += bool(found)
    for path, line, column in sites[:40]:
        started = time.perf_counter()
        await pool.references(At(ROOT, path, line, column))
        refs.append((time.perf_counter() - started) * 1000)
    await pool.close()

    leftovers = 0
    for _ in range(cycles):
        pool = LspPool(settings)
        await pool.server("python", ROOT)
        pids = [server.pid for server in pool.servers.values()]
        await pool.close()
        await asyncio.sleep(0.05)  # a killed helper is a zombie until init reaps it
        leftovers += sum(group_alive(pid) for pid in pids if pid)

    return {
        "cold_start_to_first_definition_s": {
            "median": round(statistics.median(cold), 3),
            "runs": [round(c, 3) for c in cold],
        },
        "first_definition_per_file_s": {"p50": pct(first, 50), "max": round(max(first), 2)},
        "warm_definition_ms": {
            "p50": pct(warm, 50),
            "p95": pct(warm, 95),
            "answered": answered,
            "queries": len(warm),
        },
        "references_ms": {"p50": pct(refs, 50), "p95": pct(refs, 95), "queries": len(refs)},
        "start_stop_cycles": cycles,
        "leftover_processes": leftovers,
    }


def jedi_floor(sites: list[tuple[Path, int, int]]) -> dict[str, float]:
    project = jedi.Project(ROOT)
    for path, line, column in sites:  # warm jedi's caches like the server's
        jedi.Script(path=path, project=project).goto(line, column - 1, follow_imports=True)
    timings = []
    for path, line, column in sites:
        code = path.read_text()
        started = time.perf_counter()
        jedi.Script(code, path=path, project=project).goto(line, column - 1, follow_imports=True)
        timings.append((time.perf_counter() - started) * 1000)
    return {"p50": pct(timings, 50), "p95": pct(timings, 95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="cold starts to time")
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args()
    sites = call_sites(args.queries)
    figures = asyncio.run(measure(sites, args.runs, args.cycles))
    figures["jedi_api_definition_ms"] = jedi_floor(sites)
    warm = figures["warm_definition_ms"]
    floor = figures["jedi_api_definition_ms"]
    figures["warm_p50_vs_jedi_api"] = round(warm["p50"] / floor["p50"], 2) if floor["p50"] else None  # type: ignore[index]
    figures["tree"] = str(ROOT / "ide")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
