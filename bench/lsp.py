"""Benchmark of the language-server pool on a real package tree (this repository's ``ide`` package).

Measures, with jedi-language-server: cold start → first definition (fresh pool each time), warm
definition latency (p50/p95) and references (p50/p95) at real call sites taken from the code index, and
``--cycles`` start/stop cycles with a count of processes left behind. The same definitions answered by
jedi's Python API in this process are the floor. Prints JSON.

Beside each server query the code index answers by name at the same moment (``ide/codeintel/lsp/byname``,
as the window asks both): "first answer" is when the window has something to show — for references the
index's answer when it has one, else the server's; for a definition the server's when it comes within
the window's grace (``DEFINITION_GRACE_S``), else the index's at the end of the grace. How far the
index's places agree with the server's is counted too (precision and recall over all queries).
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jedi

from ide.codeintel.index import CodeIndex
from ide.codeintel.lsp import At, Location, LspPool
from ide.codeintel.lsp.byname import definitions_by_name, references_by_name
from ide.settings import LspSettings, WorkspaceSettings
from tests.support.procs import group_alive  # /proc reading shared with the tests

ROOT = Path(__file__).resolve().parent.parent


DEFINITION_GRACE_S = 0.5
"""F12 waits this long for the server before the window goes to the index's answer
(``ide/app/workspace/part_lsp.py``:
``DEFINITION_GRACE_MS``)."""


def call_sites(index: CodeIndex, count: int, seed: int = 11) -> list[tuple[Path, int, int]]:
    """Real uses of names the repository defines: (file, 1-based line, 1-based column)."""
    rows = index.db.execute(
        "SELECT f.path, r.name, r.lines FROM refs r JOIN files f ON f.id = r.file_id "
        "WHERE f.path LIKE 'ide/%' AND f.language = 'python' "
        "AND r.name IN (SELECT name FROM defs) AND length(r.name) > 3"
    ).fetchall()
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


async def both(
    index: CodeIndex, at: At, server: Callable[[At], Awaitable[list[Location]]], by_name: Callable[..., Any]
) -> tuple[float, float, list[Location], list[Location]]:
    """The server's and the index's answers asked at the same moment: (server s, index s, answers)."""
    started = time.perf_counter()
    asked = asyncio.ensure_future(server(at))
    _, found = await asyncio.to_thread(by_name, index, at)
    index_s = time.perf_counter() - started
    served = await asked
    return time.perf_counter() - started, index_s, served, found


class Agreement:
    """How many of the index's places the server also gave (precision) and of the server's places the
    index gave (recall), over all queries."""

    def __init__(self) -> None:
        self.index = self.server = self.both = 0

    def add(self, found: list[Location], served: list[Location]) -> None:
        mine = {(loc.path, loc.line, loc.column) for loc in found}
        theirs = {(loc.path, loc.line, loc.column) for loc in served}
        self.index += len(mine)
        self.server += len(theirs)
        self.both += len(mine & theirs)

    def figures(self) -> dict[str, float | None]:
        return {
            "precision": round(self.both / self.index, 3) if self.index else None,
            "recall": round(self.both / self.server, 3) if self.server else None,
        }


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 2)


async def measure(
    index: CodeIndex, sites: list[tuple[Path, int, int]], runs: int, cycles: int
) -> dict[str, object]:
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
    warm, refs, refs_first, first, first_shown = [], [], [], [], []
    slowest: list[tuple[float, str]] = []
    by_name_definitions = by_name_references = by_name_confirmed = by_name_holding = 0
    definitions_agree, references_agree = Agreement(), Agreement()
    for path, line, column in sites:  # open every file once so the timings below are warm queries
        at = At(ROOT, path, line, column)
        served_s, index_s, served, found = await both(index, at, pool.definition, definitions_by_name)
        first.append(served_s)
        slowest.append((served_s, f"{path.relative_to(ROOT)}:{line}:{column}"))
        if served_s <= DEFINITION_GRACE_S or not found:
            first_shown.append(served_s)
        else:
            first_shown.append(max(DEFINITION_GRACE_S, index_s))
            by_name_definitions += 1
            by_name_confirmed += set(found) == set(served)  # F12 went where the server says
            by_name_holding += bool(served) and set(served) <= set(found)  # or listed it among others
        definitions_agree.add(found, served)
    for path, line, column in sites:
        started = time.perf_counter()
        found = await pool.definition(At(ROOT, path, line, column))
        warm.append((time.perf_counter() - started) * 1000)
        answered += bool(found)
    for path, line, column in sites[:40]:
        at = At(ROOT, path, line, column)
        served_s, index_s, served, found = await both(index, at, pool.references, references_by_name)
        refs.append(served_s * 1000)
        refs_first.append((index_s if found else served_s) * 1000)
        by_name_references += bool(found)
        references_agree.add(found, served)
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
        "first_definition_per_file_s": {
            "p50": pct(first, 50),
            "max": round(max(first), 2),
            "slowest": [f"{site} {seconds:.2f} s" for seconds, site in sorted(slowest, reverse=True)[:3]],
        },
        "first_definition_per_file_first_answer_s": {
            "p50": pct(first_shown, 50),
            "max": round(max(first_shown), 2),
            "by_name_after_grace": by_name_definitions,
            "by_name_same_as_server": by_name_confirmed,
            "by_name_holds_server": by_name_holding,
            "grace_s": DEFINITION_GRACE_S,
        },
        "definitions_by_name_vs_server": definitions_agree.figures(),
        "warm_definition_ms": {
            "p50": pct(warm, 50),
            "p95": pct(warm, 95),
            "answered": answered,
            "queries": len(warm),
        },
        "references_ms": {"p50": pct(refs, 50), "p95": pct(refs, 95), "queries": len(refs)},
        "references_first_answer_ms": {
            "p50": pct(refs_first, 50),
            "p95": pct(refs_first, 95),
            "by_name": by_name_references,
            "queries": len(refs_first),
        },
        "references_by_name_vs_server": references_agree.figures(),
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
    with tempfile.TemporaryDirectory() as tmp:
        index = CodeIndex(ROOT, Path(tmp) / "index.sqlite", WorkspaceSettings(), workers=1)
        try:
            index.refresh()
            sites = call_sites(index, args.queries)
            figures = asyncio.run(measure(index, sites, args.runs, args.cycles))
        finally:
            index.close()
    figures["jedi_api_definition_ms"] = jedi_floor(sites)
    warm = figures["warm_definition_ms"]
    floor = figures["jedi_api_definition_ms"]
    figures["warm_p50_vs_jedi_api"] = round(warm["p50"] / floor["p50"], 2) if floor["p50"] else None  # type: ignore[index]
    figures["tree"] = str(ROOT / "ide")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
