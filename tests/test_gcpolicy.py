"""The collector policy's start-up half (ide/gcpolicy.py): what a ``quiet_imports`` block makes is never
walked before ``settle_heap``, and ``settle_heap`` still collects the garbage the block left. Each check
runs in a child: the collector's state is the whole process's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import gc, json, weakref
    from ide.gcpolicy import quiet_imports, settle_heap

    passes = []
    gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))

    class Node:
        pass

    enabled_before = gc.isenabled()
    with quiet_imports():
        enabled_inside = gc.isenabled()
        kept = [Node() for _ in range(50_000)]  # what imports make: alive for good
        garbage = Node()
        garbage.self = garbage  # a cycle dropped inside the block
        gone = weakref.ref(garbage)
        del garbage
        passes_inside = list(passes)
    frozen = gc.get_freeze_count()
    more = [[Node()] for _ in range(20_000)]  # the young collections after the block run as before
    alive_before_settle = gone() is not None
    settled = settle_heap()
    print(json.dumps({
        "enabled": [enabled_before, enabled_inside, gc.isenabled()],
        "frozen": frozen,
        "passes_inside": passes_inside,
        "passes_after": passes,
        "alive_before_settle": alive_before_settle,
        "settled": settled,
        "collected": gone() is None,
    }))
    """
)


def test_a_quiet_block_is_not_walked_and_settle_heap_collects_what_it_left() -> None:
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # The collector was on, off inside the block, and on again after it.
    assert seen["enabled"] == [True, False, True]
    assert seen["passes_inside"] == []
    # What the block made is frozen: the collections after it do not walk the 50,000 nodes.
    assert seen["frozen"] >= 50_000
    assert seen["passes_after"], "the young collections still run after the block"
    # The cycle dropped inside the block waits for settle_heap, which finds it (it unfreezes first).
    assert seen["alive_before_settle"] is True
    assert seen["settled"] is True
    assert seen["collected"] is True
