"""The recorded LATS sample opens, replays to a solution, and still matches what its script produces."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ide.protocol.tree import SearchTree, read_jsonl
from tests.support.samples import RECORDED

REPO = Path(__file__).resolve().parent.parent


def recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_sample", REPO / "scripts" / "record_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_sample", module)
    spec.loader.exec_module(module)
    return module


def test_the_recorded_sample_replays_to_a_solution_with_a_pruned_branch_and_a_lesson() -> None:
    tree = SearchTree(read_jsonl(RECORDED))
    nodes = tree.nodes.values()
    assert tree.architecture == "lats" and tree.finished
    assert tree.figures["stop_reason"] == "end_turn" and tree.figures["solution_found"] is True
    assert len(tree.nodes) >= 10
    best = tree.nodes[tree.best_path[-1]]
    assert best.kind == "answer" and best.status == "solution"
    assert "Tests passed" in (best.reflection or "")  # the real test command confirmed it
    assert any(n.status in ("pruned", "failed") for n in nodes)
    assert any("Lesson:" in (n.reflection or "") for n in nodes)
    assert all(not (n.model or "").startswith("scripted:/") for n in nodes), "no machine paths in the file"


async def test_running_the_sample_script_again_gives_the_recorded_tree() -> None:
    module = recorder()
    fresh = await module.record()
    assert module.shape(fresh) == module.shape(read_jsonl(RECORDED))
