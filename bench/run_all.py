"""Run every benchmark and print one JSON object with all their figures (keyed by benchmark).

Each benchmark runs as its own process (``python bench/NAME.py``) so one cannot disturb the next; a
benchmark that fails is reported with its exit status and the end of its stderr, and the others still
run. ``--runs N`` is passed to those that take it; ``--only a,b`` picks some; ``--site-packages`` goes to
the corpus benchmarks (index, workflow).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = (
    "startup",
    "review",
    "review_pane",
    "tree_view",
    "search",
    "lsp",
    "index",
    "workflow",
    "context",
    "shadow",
    "eval_jobs",
)
TAKES_RUNS = set(ORDER) - {"review"}
TAKES_CORPUS = {"index", "workflow"}
SHADOW_FILES = 100_000
"""Issue 50's shadow targets are at a kernel-sized tree (``bench/shadow.py`` alone defaults to 10,000)."""


def run_one(name: str, runs: int | None, site_packages: str | None) -> dict[str, object]:
    command = [sys.executable, str(BENCH / f"{name}.py")]
    if runs is not None and name in TAKES_RUNS:
        command += ["--runs", str(runs)]
    if site_packages and name in TAKES_CORPUS:
        command += ["--site-packages", site_packages]
    if name == "shadow":
        command += ["--files", str(SHADOW_FILES)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=BENCH.parent)
    seconds = round(time.perf_counter() - started, 1)
    if done.returncode != 0:
        return {"error": f"exit status {done.returncode}", "stderr": done.stderr[-2000:], "wall_s": seconds}
    try:
        start = done.stdout.index("{")
        result = json.JSONDecoder().raw_decode(done.stdout[start:])[0]
    except ValueError:
        return {"error": "did not print JSON", "stdout": done.stdout[-2000:], "wall_s": seconds}
    return {"figures": result, "wall_s": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=None, help="runs per benchmark (default: each one's own)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument(
        "--site-packages", default=None, help="a whole directory for the corpus benches (default: their own)"
    )
    args = parser.parse_args()
    chosen = [n for n in ORDER if not args.only or n in args.only.split(",")]
    results = {name: run_one(name, args.runs, args.site_packages) for name in chosen}
    print(json.dumps({"python": sys.version.split()[0], "benchmarks": results}, indent=2))
    sys.exit(1 if any("error" in r for r in results.values()) else 0)


if __name__ == "__main__":
    main()
