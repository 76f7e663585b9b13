"""Benchmark of the code index on real code: the standard library plus Arbor's installed dependencies.

In one run, side by side: a cold full index (fresh SQLite file) vs ``ctags -R`` over the same tree and vs
the parse floor (tree-sitter parsing the files the index parsed, in as many worker processes, with no
queries, no Python walk and no SQLite: issue 32's target is the index at most 1.3x that; both also in CPU
seconds of all their processes, which a busy machine hardly changes) and the query floor (the same with the
index's tag query run over each tree, its captures handed to Python and left there: issue 50's target is
the index at most 1.3x this one in CPU, ``cold_vs_query_floor_cpu``), a re-open with
nothing changed, one edited file reflected in search, symbol-query latency (p50/p95 over queries made
from real names: exact, prefix, substring and fuzzy), database size and peak RSS. The corpus is a
hard-link tree (a copy where linking fails) in a temp dir, so nothing is written near the real files. Its
third-party part is the files of the distributions ``arbor-ide`` needs, recursively (what ``pip install
arbor-ide`` brings: issue 32's corpus, whatever else this interpreter holds); ``--site-packages DIR`` takes
a whole directory instead (this machine's held 2.5x as many files, with SciPy, SymPy and the AWS CLI).
Prints JSON; medians over ``--runs``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ide.codeintel.index.store as store
from ide.codeintel.index import CodeIndex
from ide.codeintel.index.languages import TAGGED
from ide.codeintel.index.service import IndexService
from ide.settings import Settings, WorkspaceSettings


def mirror(source: Path, target: Path, skip: set[str]) -> None:
    """Hard-link every file of ``source`` under ``target`` (copy when linking is not possible)."""
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d not in skip]
        here = target / Path(dirpath).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            src = Path(dirpath) / name
            if src.is_symlink() or not src.is_file():
                continue
            _link(src, here / name)


def _link(src: Path, dst: Path) -> None:
    """Hard-link ``src`` as ``dst`` (a copy where linking is not possible; nothing if ``dst`` is there)."""
    try:
        os.link(src, dst)
    except FileExistsError:
        pass
    except OSError:
        shutil.copy2(src, dst)


def dependencies(distribution: str = "arbor-ide") -> list[metadata.Distribution]:
    """The installed distributions ``distribution`` requires, recursively, without extras or itself; a
    requirement not installed (another platform's, a marker that does not hold) is left out."""
    found: dict[str, metadata.Distribution | None] = {}
    todo = [distribution]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in found:
            continue
        try:
            dist = found[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            found[name] = None
            continue
        for requirement in dist.requires or ():
            if "extra ==" not in requirement.replace("extra==", "extra =="):
                todo.append(re.match(r"[A-Za-z0-9._-]+", requirement).group())  # type: ignore[union-attr]
    del found[distribution]
    return [dist for dist in found.values() if dist is not None]


def mirror_distributions(target: Path) -> None:
    """Hard-link the installed files of Arbor's dependencies under ``target``, as site-packages holds them."""
    for dist in dependencies():
        for file in dist.files or ():
            parts = file.parts
            if not parts or parts[0] == ".." or "__pycache__" in parts or parts[0].endswith(".dist-info"):
                continue  # scripts in bin/, bytecode, the metadata
            src = Path(dist.locate_file(file))
            if src.is_symlink() or not src.is_file():
                continue
            (target / file).parent.mkdir(parents=True, exist_ok=True)
            _link(src, target / file)  # two distributions may list one file (a shared namespace's)


def build_corpus(root: Path, site_packages: Path | None = None) -> dict[str, int | str]:
    """The standard library and the dependencies' files (or all of ``site_packages``) under ``root``."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    mirror(stdlib, root / "stdlib", {"site-packages", "__pycache__"})
    if site_packages is None:
        mirror_distributions(root / "site-packages")
    else:
        mirror(site_packages, root / "site-packages", {"__pycache__"})
    files = sum(len(f) for _, _, f in os.walk(root))
    size = sum((Path(d) / f).stat().st_size for d, _, fs in os.walk(root) for f in fs)
    third_party = str(site_packages) if site_packages else "the files of arbor-ide's dependencies"
    return {"stdlib": str(stdlib), "site_packages": third_party, "files": files, "bytes": size}


def parse_files(root: str, jobs: list[tuple[str, str]]) -> int:
    """Read and parse some files (in a worker process) as the index does, and nothing else; their count."""
    import tree_sitter_language_pack as pack

    for rel, language in jobs:
        with open(os.path.join(root, rel), "rb") as handle:
            pack.get_parser(language).parse(handle.read())  # type: ignore[arg-type]
    return len(jobs)


def parse_and_query_files(root: str, jobs: list[tuple[str, str]]) -> int:
    """Read and parse some files and run the index's own tag query over each tree (its captures handed
    to Python, nothing done with them): what any extraction by that query pays; their count."""
    from tree_sitter import QueryCursor

    from ide.codeintel.index.extract import compiled

    for rel, language in jobs:
        grammar = compiled(language)
        with open(os.path.join(root, rel), "rb") as handle:
            tree = grammar.parser.parse(handle.read())
        QueryCursor(grammar.tags).captures(tree.root_node)
    return len(jobs)


def parse_floor(corpus: Path, db: Path, workers: int, work=parse_files) -> float:  # type: ignore[no-untyped-def]
    """Seconds to parse the files the index at ``db`` parsed with a grammar, in ``workers`` processes, in
    batches of 64 as the indexer sends them (``work``: :func:`parse_and_query_files` runs the query too)."""
    import multiprocessing
    import sqlite3
    from concurrent.futures import ProcessPoolExecutor

    with sqlite3.connect(db) as con:
        marks = ", ".join("?" * len(TAGGED))
        jobs = con.execute(
            f"SELECT path, language FROM files WHERE language IN ({marks}) AND status != 'skipped' "
            "ORDER BY id",
            TAGGED,
        ).fetchall()
    batches = [jobs[start : start + 64] for start in range(0, len(jobs), 64)]
    context = multiprocessing.get_context("forkserver" if sys.platform == "linux" else "spawn")
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        parsed = sum(pool.map(work, [str(corpus)] * len(batches), batches))
    assert parsed == len(jobs)
    return time.perf_counter() - started


def cpu_seconds() -> float | None:
    """CPU seconds used so far by this process and all its descendants (the fork server, the parser
    workers, alive, exited or reaped), from /proc; None where there is no /proc. A busy machine stretches
    wall times but hardly these, so the ratios of CPU seconds are the steadier ones."""
    if not os.path.isdir("/proc/self"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the name: state, ppid, …; utime, stime, cutime, cstime are the 12th to 15th.
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15])  # reaped children in c*time
    ours = {os.getpid()}
    grew = True
    while grew:  # a child's pid may be lower than its parent's: go until nothing is added
        grew = False
        for pid, parent in parents.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    return sum(times[pid] for pid in ours) / tick


def _own_cpu() -> float:
    """CPU seconds of this process alone, all its threads (the index's writer, its walk and the pool's
    result reader): the cold index's share outside its workers."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def queries(index: CodeIndex, count: int, seed: int = 7) -> list[str]:
    """Real names cut four ways: whole, a prefix, an inner substring, and a fuzzy subsequence."""
    rng = random.Random(seed)
    names = [row[0] for row in index.db.execute("SELECT name FROM defs WHERE length(name) >= 6")]
    made = []
    for name in rng.sample(names, count):
        cut = rng.randrange(4)
        if cut == 0:
            made.append(name)
        elif cut == 1:
            made.append(name[: rng.randint(3, len(name) - 1)])
        elif cut == 2:
            start = rng.randint(1, len(name) - 4)
            made.append(name[start : start + rng.randint(3, len(name) - start)])
        else:
            made.append(name[0] + "".join(ch for ch in name[1:] if rng.random() < 0.5)[:5])
    return made


async def watched_edits(corpus: Path, db: Path, workspace: WorkspaceSettings) -> list[float]:
    """Save a file while the backend's watcher runs; time until a search finds the new function."""
    service = IndexService(corpus, Settings(workspace=workspace), CodeIndex(corpus, db, workspace))
    service.start()
    await asyncio.wait_for(service.updated.wait(), 600)  # the pass (nothing to parse) is done
    while not service.watching:  # the watcher reports itself on its first event; give it one
        (corpus / "bench_probe.py").write_text("x = 1\n")
        await asyncio.sleep(0.2)
    target = corpus / "stdlib" / "json" / "decoder.py"
    original = target.read_text()
    target.unlink()  # break the hard link: the edits must not reach the real stdlib
    target.write_text(original)
    await asyncio.sleep(0.5)
    timings = []
    for attempt in range(5):
        name = f"bench_watched_{attempt}"
        target.write_text(original + f"\n\ndef {name}():\n    pass\n")
        started = time.perf_counter()
        for _ in range(200):  # bounded: 10 s
            if service.index.search(name, 1):
                break
            await asyncio.sleep(0.005)
        timings.append((time.perf_counter() - started) * 1000)
    target.write_text(original)
    await service.close()
    return timings


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--site-packages",
        default=None,
        help="index this whole directory as the third-party part (default: Arbor's dependencies' files)",
    )
    parser.add_argument("--workers", type=int, default=0, help="parser processes (default: one per CPU)")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    if shutil.which("ctags") is None:
        sys.exit("bench/index.py needs universal-ctags on PATH (the peer it is measured against)")

    with tempfile.TemporaryDirectory(prefix="arbor-bench-index-") as tmp:
        corpus = Path(tmp) / "corpus"
        info = build_corpus(corpus, Path(args.site_packages) if args.site_packages else None)
        settings = WorkspaceSettings(exclude=["__pycache__/", ".git/"])
        cold, ctags, reopen, edits, floor, query_floor = [], [], [], [], [], []
        cold_cpu: list[float] = []
        cold_parent_cpu: list[float] = []
        floor_cpu: list[float] = []
        query_floor_cpu: list[float] = []
        stats = None
        for run in range(args.runs):
            db = Path(tmp) / f"index{run}.sqlite"
            index = CodeIndex(corpus, db, settings, args.workers)
            before = cpu_seconds()
            parent_before = _own_cpu()
            seconds, stats = timed(index.refresh)
            cold_parent_cpu.append(_own_cpu() - parent_before)
            cold.append(seconds)
            between = cpu_seconds()
            floor.append(parse_floor(corpus, db, index.workers))
            after = cpu_seconds()
            query_floor.append(parse_floor(corpus, db, index.workers, parse_and_query_files))
            queried = cpu_seconds()
            if before is not None and between is not None and after is not None and queried is not None:
                cold_cpu.append(between - before)
                floor_cpu.append(after - between)
                query_floor_cpu.append(queried - after)
            seconds, again = timed(index.refresh)
            assert again.parsed == 0, again
            reopen.append(seconds)
            target = corpus / "stdlib" / "json" / "encoder.py"
            original = target.read_text()
            target.unlink()  # break the hard link first: the edits must not reach the real stdlib
            target.write_text(original)
            index.update_paths([target])
            for attempt in range(3):
                name = f"bench_marker_{run}_{attempt}"
                target.write_text(original + f"\n\ndef {name}():\n    pass\n")
                started = time.perf_counter()
                index.update_paths([target])
                found = index.search(name, 1)
                edits.append(time.perf_counter() - started)
                assert found and found[0].name == name
            target.write_text(original)
            index.update_paths([target])
            index.close()
            tags = Path(tmp) / "tags"
            started = time.perf_counter()
            # ctags exits 1 after warnings about odd files (null tags in minified JS); the tags are written.
            subprocess.run(["ctags", "-R", "-f", str(tags), str(corpus)], check=False, capture_output=True)
            ctags.append(time.perf_counter() - started)
            assert tags.stat().st_size > 0

        watch_ms = asyncio.run(watched_edits(corpus, Path(tmp) / "index0.sqlite", settings))

        index = CodeIndex(corpus, Path(tmp) / "index0.sqlite", settings)
        latencies, sql_latencies = [], []
        made = queries(index, args.queries)
        for query in made:
            started = time.perf_counter()
            found = index.search(query, 30)
            latencies.append((time.perf_counter() - started) * 1000)
            # The peer: the same search with the fuzzy tier's LIKE pass over every name (as before issue 32).
            started = time.perf_counter()
            peer = store.search(index.db, query, 30)
            sql_latencies.append((time.perf_counter() - started) * 1000)
            assert found == peer, query
        index.close()

    cold_median, ctags_median = statistics.median(cold), statistics.median(ctags)
    floor_median = statistics.median(floor)
    print(
        json.dumps(
            {
                "corpus": info,
                "workers": args.workers or os.cpu_count(),
                "index": stats.as_dict() if stats else None,
                "cold_full_index_s": round(cold_median, 2),
                "cold_runs_s": [round(s, 2) for s in cold],
                "ctags_R_s": round(ctags_median, 2),
                "ctags_runs_s": [round(s, 2) for s in ctags],
                "cold_vs_ctags": round(cold_median / ctags_median, 2),
                "parse_floor_s": round(floor_median, 2),
                "parse_floor_runs_s": [round(s, 2) for s in floor],
                "cold_vs_parse_floor": round(cold_median / floor_median, 2),
                "cold_vs_parse_floor_target": 1.3,
                # CPU seconds of this process and its children (parser workers included) in each.
                "cold_full_index_cpu_s": round(statistics.median(cold_cpu), 2) if cold_cpu else None,
                "cold_cpu_runs_s": [round(s, 2) for s in cold_cpu],
                # Of which this process's own (the walk, SQLite, unpickling); the rest is the workers'.
                "cold_parent_cpu_s": round(statistics.median(cold_parent_cpu), 2),
                "cold_parent_cpu_runs_s": [round(s, 2) for s in cold_parent_cpu],
                "parse_floor_cpu_s": round(statistics.median(floor_cpu), 2) if floor_cpu else None,
                "parse_floor_cpu_runs_s": [round(s, 2) for s in floor_cpu],
                "cold_vs_parse_floor_cpu": (
                    round(statistics.median(cold_cpu) / statistics.median(floor_cpu), 2) if cold_cpu else None
                ),
                # The parse floor plus the index's tag query over each tree, its captures handed to Python
                # and nothing else: what any extraction by that query pays above the parse floor.
                "query_floor_s": round(statistics.median(query_floor), 2),
                "query_floor_cpu_s": (
                    round(statistics.median(query_floor_cpu), 2) if query_floor_cpu else None
                ),
                "query_floor_cpu_runs_s": [round(s, 2) for s in query_floor_cpu],
                "query_floor_vs_parse_floor_cpu": (
                    round(statistics.median(query_floor_cpu) / statistics.median(floor_cpu), 2)
                    if query_floor_cpu
                    else None
                ),
                "cold_vs_query_floor_cpu": (
                    round(statistics.median(cold_cpu) / statistics.median(query_floor_cpu), 2)
                    if query_floor_cpu
                    else None
                ),
                "reopen_unchanged_s": round(statistics.median(reopen), 3),
                "one_edit_reflected_ms": round(statistics.median(edits) * 1000, 1),
                "watched_edit_reflected_ms": {
                    "median": round(statistics.median(watch_ms), 1),
                    "max": round(max(watch_ms), 1),
                    "debounce_ms": Settings().index.debounce_ms,
                },
                "symbols_query_ms": {
                    "queries": len(latencies),
                    "p50": round(percentile(latencies, 50), 2),
                    "p95": round(percentile(latencies, 95), 2),
                    "max": round(max(latencies), 2),
                },
                "symbols_query_sql_like_ms": {
                    "p50": round(percentile(sql_latencies, 50), 2),
                    "p95": round(percentile(sql_latencies, 95), 2),
                    "max": round(max(sql_latencies), 2),
                },
                "symbols_query_p95_target_ms": 20,
                "db_bytes": stats.db_bytes if stats else None,
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                # Largest waited-for child: ctags or the forkserver (parser workers are its children).
                "peak_rss_child_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
