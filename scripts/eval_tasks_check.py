"""Verify the task set of ``arbor eval``; print a JSON summary, exit 1 if any task is unsound.

For every task: build its workspace; a bug or feature task's check must FAIL there (and leave the workspace
clean), then PASS once the reference diff is applied; a question's answer regex must accept its
``sample_answer`` and reject an empty or evasive answer. Needs the pinned packages:
``pip install -e '.[eval]'``.

    python scripts/eval_tasks_check.py [--tasks GLOB] [--dir DIR] [--jobs N] [--timeout S]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ide.eval.tasks import EvalTask, TaskError, load_tasks, verify_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="*", help="glob on task ids (comma-separated globs allowed)")
    parser.add_argument("--dir", type=Path, default=None, help="task directory (default: the shipped set)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="tasks verified at once")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per check run")
    args = parser.parse_args(argv)
    try:
        tasks = load_tasks(args.tasks, args.dir)
    except TaskError as exc:
        print(f"eval_tasks_check: {exc}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"eval_tasks_check: no task matches {args.tasks!r}", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="arbor-eval-check-") as tmp:

        def verify(task: EvalTask) -> dict[str, object]:
            result = verify_task(task, Path(tmp) / task.id, args.timeout)
            return {
                "task": task.id,
                "kind": task.kind,
                "difficulty": task.difficulty,
                "ok": result.ok,
                "problems": result.problems,
                "seconds": result.seconds,
            }

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(verify, tasks))
    summary = {
        "tasks": len(results),
        "ok": sum(1 for r in results if r["ok"]),
        "failed": [r["task"] for r in results if not r["ok"]],
        "by_kind": dict(Counter(t.kind for t in tasks)),
        "by_difficulty": dict(Counter(t.difficulty for t in tasks)),
        "by_package": dict(Counter(t.package.name for t in tasks)),
        "wall_s": round(time.monotonic() - started, 2),
        "jobs": args.jobs,
        "results": results,
    }
    print(json.dumps(summary, indent=1))
    return 0 if not summary["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
