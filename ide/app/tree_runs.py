"""The runs the tree dock holds, fed event by event, and the one-line summary of a run. No Qt here.

Duplicated live events are ignored, early ones held until the gap fills, and an event that does not fit
stops its run where it was, with a fault saying so.
"""

from __future__ import annotations

from ide.protocol.tree import SearchTree, TreeError, TreeEvent

HELD_EVENTS_MAX = 10_000
"""Events of one run kept while waiting for an earlier one that has not arrived."""


class RunFeed:
    """Runs by key (a live run's id, or ``file · run id`` for one opened from a file) and their faults."""

    def __init__(self) -> None:
        self.runs: dict[str, SearchTree] = {}
        self.file_runs: set[str] = set()
        """Runs opened from a file."""
        self.stale_runs: set[str] = set()
        """Runs kept from an earlier session (its restore failed): the backend no longer has them."""
        self.faults: dict[str, str] = {}
        """Runs whose events stopped fitting, and what the dock's message line says about them."""
        self.held: dict[str, dict[int, TreeEvent]] = {}
        """Per run, events that came early, by sequence number."""

    def feed(self, key: str, tree: SearchTree, event: TreeEvent) -> list[TreeEvent]:
        """Apply ``event`` (and held events it unblocks) to ``tree``; the events applied."""
        if key in self.faults and key not in self.held:
            return []  # stopped for good: an event did not fit
        if event.seq <= tree.seq:
            return []  # a duplicate
        held = self.held.setdefault(key, {})
        if event.seq > tree.seq + 1:
            if len(held) < HELD_EVENTS_MAX:
                held.setdefault(event.seq, event)
            self.faults[key] = (
                f"run {tree.run_id or event.run_id}: events out of order after seq {tree.seq}; "
                "showing the tree up to there"
            )
            return []
        applied: list[TreeEvent] = []
        next_event: TreeEvent | None = event
        while next_event is not None:
            try:
                tree.apply(next_event)
            except TreeError as exc:
                self.held.pop(key, None)
                self.faults[key] = f"{exc}; showing the tree up to seq {tree.seq}"
                return applied
            applied.append(next_event)
            next_event = held.pop(tree.seq + 1, None)
        if held:
            self.faults[key] = (
                f"run {tree.run_id}: events out of order after seq {tree.seq}; showing the tree up to there"
            )
        else:
            del self.held[key]
            self.faults.pop(key, None)
        return applied

    def forget(self, key: str) -> None:
        """Drop run ``key`` and everything kept about it."""
        del self.runs[key]
        self.file_runs.discard(key)
        self.stale_runs.discard(key)
        self.faults.pop(key, None)
        self.held.pop(key, None)


def run_summary(tree: SearchTree, drawn: int, *, replaying: bool) -> str:
    """The dock's line about ``tree``: its size (and how much of it is drawn), architecture and state."""
    text = f"{len(tree.nodes)} nodes"
    if drawn != len(tree.nodes):
        text += f" ({drawn} shown)"
    if tree.architecture:
        text += f" · {tree.architecture}"
    if replaying:
        text += " · replay"
    elif tree.finished:
        figures = ", ".join(f"{k} {v}" for k, v in list(tree.figures.items())[:4])
        text += f" · finished{': ' + figures if figures else ''}"
    else:
        text += " · running"
    return text
