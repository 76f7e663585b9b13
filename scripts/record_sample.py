"""Record the LATS sample: run resources/samples/lats-bugfix/script.jsonl on a git copy of its workspace.

    python scripts/record_sample.py [--check]

Writes the recording to ``--output`` (default: a new temporary directory) and prints a JSON summary;
``--write`` replaces the recorded resources/samples/lats-bugfix.arbor-tree.jsonl instead (open it with
``arbor --open``). ``--check`` writes nothing and exits 1 when the recorded file's tree differs in shape (ids,
parents, kinds, statuses, labels, best path) from a fresh run — the test suite runs the same comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ide.changes import ChangeSet
from ide.llm import ModelRouter
from ide.protocol.tree import SearchTree, TreeEvent, read_jsonl, write_jsonl
from ide.search.base import RunContext
from ide.search.lats import LatsSearch
from ide.search.tree import TreeRecorder
from ide.settings import Settings

SAMPLE = Path(__file__).resolve().parent.parent / "resources" / "samples" / "lats-bugfix"
RECORDED = SAMPLE.parent / "lats-bugfix.arbor-tree.jsonl"
TASK = "mean() in stats.py returns the wrong value; fix it so check_stats.py passes"
LATS = {"expansion_width": 3, "max_iterations": 4, "test_command": f"{sys.executable} check_stats.py"}
GIT = ["git", "-c", "user.name=Arbor sample", "-c", "user.email=sample@arbor.invalid"]
EPOCH = 1767258000.0
"""2026-01-01 09:00 UTC: the recorded run's first timestamp, so re-recording changes only the deltas."""


def sample_clock(epoch: float = EPOCH) -> Callable[[], float]:
    """A wall clock for the recorder that starts at ``epoch`` and advances with real elapsed time."""
    start = time.monotonic()
    return lambda: epoch + (time.monotonic() - start)


def git_copy(target: Path) -> Path:
    """The sample workspace copied to ``target`` as a git repository with one commit."""
    shutil.copytree(SAMPLE / "workspace", target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "sample workspace"]):
        subprocess.run([*GIT, *args], cwd=target, check=True)
    return target


async def record() -> list[TreeEvent]:
    """Run the sample's LATS search on a throwaway git copy; its tree events."""
    with tempfile.TemporaryDirectory(prefix="arbor-sample-") as temp:
        workspace = git_copy(Path(temp) / "workspace")
        settings = Settings.model_validate(
            {"llm": {"model": f"scripted:{SAMPLE / 'script.jsonl'}"}, "lats": LATS}
        )
        events: list[TreeEvent] = []

        async def progress(_event: dict[str, Any]) -> None:
            return None

        ctx = RunContext(
            task=TASK,
            settings=settings,
            router=ModelRouter(settings, base_dir=workspace),
            changeset=ChangeSet(workspace),
            recorder=TreeRecorder(
                architecture="lats", run_id="lats-bugfix-sample", emit=events.append, clock=sample_clock()
            ),
            progress=progress,
        )
        await LatsSearch().run(ctx)
    # Node records name their model, "scripted:<absolute path>"; keep the file free of this machine's paths.
    root = f"{SAMPLE.parents[2]}/"
    return [TreeEvent.model_validate_json(e.model_dump_json().replace(root, "")) for e in events]


def shape(events: list[TreeEvent]) -> dict[str, Any]:
    """What must not change between recordings: the tree's structure, statuses, labels and best path."""
    tree = SearchTree(events)
    return {
        "nodes": [(n.id, n.parent, n.kind, n.status, n.label) for n in tree.nodes.values()],
        "best_path": tree.best_path,
        "stop_reason": tree.figures.get("stop_reason"),
    }


def summary(events: list[TreeEvent]) -> dict[str, Any]:
    """The run at a glance: node count, stop reason, best path labels, statuses and the run's figures."""
    tree = SearchTree(events)
    figures = tree.figures
    return {
        "nodes": len(tree.nodes),
        "events": len(events),
        "stop_reason": figures.get("stop_reason"),
        "iterations": figures.get("iterations"),
        "best_path": [f"{i}: {tree.nodes[i].label}" for i in tree.best_path],
        "statuses": {s: sum(1 for n in tree.nodes.values() if n.status == s) for s in ("solution", "pruned")},
        "lessons": sum(1 for n in tree.nodes.values() if "Lesson:" in (n.reflection or "")),
        "figures": {key: value for key, value in figures.items() if key != "by_role"},
    }


def main() -> int:
    """Record (or with ``--check`` compare) the sample; the exit status is 1 only for a stale sample."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the recorded file, write nothing")
    parser.add_argument("--write", action="store_true", help=f"replace the recorded {RECORDED.name}")
    parser.add_argument("--output", type=Path, default=None, help="where to write (default: a temporary dir)")
    args = parser.parse_args()
    events = asyncio.run(record())
    if args.check:
        same = shape(events) == shape(read_jsonl(RECORDED))
        print(json.dumps({"recorded": str(RECORDED), "same_shape": same}))
        return 0 if same else 1
    target = RECORDED if args.write else args.output
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="arbor-sample-")) / RECORDED.name
    write_jsonl(events, target)
    print(json.dumps({"written": str(target), **summary(events)}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
