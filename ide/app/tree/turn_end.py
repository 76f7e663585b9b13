"""Closing a search tree the backend left open: the events that end a run whose turn failed. No Qt here.

The backend closes a failed turn's tree itself; when the prompt request fails without that (the backend
died, or an agent that records no end), the window closes the run with these events so no node stays
``active`` and the run shows why it ended.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ide.protocol.tree import SearchTree, TreeEvent


def closing_events(tree: SearchTree, reason: str, *, at: float | None = None) -> list[TreeEvent]:
    """Events after ``tree``'s last that mark its active nodes failed, say ``reason`` on the root and
    finish it with ``stop_reason`` ``error``; none when the run has finished or has no root."""
    from ide.protocol.tree import TreeEvent

    if tree.finished or tree.root is None or tree.run_id is None:
        return []
    run_id, now = tree.run_id, time.time() if at is None else at
    said = tree.nodes[tree.root].observation
    changes: list[tuple[str, dict[str, object]]] = [
        (node.id, {"status": "failed", "updated_at": now})
        for node in tree.nodes.values()
        if node.status == "active"
    ]
    observation = f"{said}\n\nFailed: {reason}" if said else f"Failed: {reason}"
    changes.append((tree.root, {"observation": observation, "updated_at": now}))
    events = [
        TreeEvent(
            run_id=run_id, seq=tree.seq + i, kind="node_updated", node_id=node_id, changes=change, at=now
        )
        for i, (node_id, change) in enumerate(changes, 1)
    ]
    figures = {"stop_reason": "error", "error": reason}
    events.append(
        TreeEvent(run_id=run_id, seq=tree.seq + len(events) + 1, kind="finished", figures=figures, at=now)
    )
    return events
