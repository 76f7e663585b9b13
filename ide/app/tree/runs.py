"""The runs the tree dock holds, fed event by event, and the one-line summary of a run. No Qt here.

Duplicated live events are ignored, early ones held until the gap fills, and an event that does not fit
stops its run where it was, with a fault saying so.
"""

from __future__ import annotations

from dataclasses import replace

from ide.app.tree.verdict import RunCheck
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
        self.checks: dict[str, RunCheck] = {}
        """Runs an outside check judged (an eval report's, for the run's tree file)."""

    def set_check(self, source: str, check: RunCheck) -> None:
        """Judge the runs opened from file ``source`` by ``check``: the last run (the one that answered) by
        it, with its final best path's end as the answer; earlier ones (the retry baseline's tries before
        it) were not solved, or the baseline would have stopped."""
        keys = [key for key in self.runs if key.startswith(f"{source} · ")]
        for number, key in enumerate(keys, start=1):
            tree = self.runs[key]
            if number == len(keys):
                answer = tree.best_path[-1] if tree.best_path else None
                self.checks[key] = replace(check, answer=answer)
            else:
                self.checks[key] = RunCheck(
                    False, f"try {number} of {len(keys)} was not solved: the run tried again"
                )

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
        self.checks.pop(key, None)


def run_summary(tree: SearchTree, drawn: int, *, replaying: bool) -> str:
    """The dock's line about ``tree``: its size (and how much of it is drawn), architecture and state."""
    text = f"{len(tree.nodes)} node{'' if len(tree.nodes) == 1 else 's'}"
    if drawn != len(tree.nodes):
        text += f" ({drawn} shown)"
    if tree.architecture:
        text += f" · {tree.architecture}"
    if replaying:
        text += " · replay"
    elif tree.finished:
        figures = figures_text(tree.figures, SUMMARY_FIGURES)
        text += f" · finished{': ' + figures if figures else ''}"
    else:
        text += " · running"
    return text


FIGURES: dict[str, tuple[str, str]] = {
    "wall_s": ("wall", " s"),
    "average_score": ("average score", ""),
    "best_score": ("best score", "/10"),
    "model_calls": ("model calls", ""),
    "input_tokens": ("tokens in", ""),
    "output_tokens": ("tokens out", ""),
    "latency_ms": ("latency", " ms"),
    "stop_reason": ("stopped", ""),
    "solution_found": ("solution found", ""),
}
"""How a run's figure is said: its words and unit, by key. A key not here is said by its name, humanised."""
SUMMARY_FIGURES = 4
"""Figures the dock's line shows (the first ones the run gives, not counting ``nodes``: the line begins
with the node count)."""


def figure_text(key: str, value: object) -> str:
    """One figure as a person writes it: ``wall 0.13 s``, ``average score 4.75``, ``model calls 20``."""
    label, unit = FIGURES.get(key, (key.replace("_", " ").strip(), ""))
    if isinstance(value, bool):
        shown = "yes" if value else "no"
    elif isinstance(value, int):
        shown = f"{value:,}"
    elif isinstance(value, float):
        shown = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    else:
        shown = str(value).replace("_", " ")
    return f"{label} {shown}{unit}"


def figures_text(figures: dict[str, object], limit: int | None = None) -> str:
    """The run's plain figures (numbers, words; not the per-role tables), said one by one, the first
    ``limit`` of them (None: all)."""
    plain = [
        figure_text(key, value)
        for key, value in figures.items()
        if key != "nodes" and value is not None and isinstance(value, bool | int | float | str)
    ]
    return ", ".join(plain if limit is None else plain[:limit])
