"""The recorder architectures write their search trees with.

The tree itself (:class:`~ide.protocol.tree.SearchTree`, built only from events) and the
``.arbor-tree.jsonl`` reader and writer live in :mod:`ide.protocol.tree`, so the window replays runs with
the same code; import them from there.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ide.changes import ChangeSet
from ide.protocol.tree import (
    OBSERVATION_CAP,
    ForkOrigin,
    SearchTree,
    TreeError,
    TreeEvent,
    TreeNode,
    first_error,
    unsettable,
    updated_node,
)
from ide.search.events import cap_text

__all__ = ["TreeRecorder"]


class TreeRecorder:
    """Writes the tree of one run: each call makes one event, applies it to :attr:`tree`, then emits it.

    Architectures call :meth:`add`, :meth:`update`, :meth:`best_path` and :meth:`finish`; nothing else
    changes the tree, so what a client replays is what the run did. Calls are serialised by
    :attr:`lock` (LATS expands branches concurrently): ids are unique, ``seq`` rises by one per event,
    and ``emit`` sees events in ``seq`` order. Hold :attr:`lock` to read-modify-write several nodes as
    one step (backpropagation does); reading :attr:`tree` while other threads write also needs it.

    Beside the tree, and never in its events (so recorded trees stay as they were), the recorder keeps what
    a later run needs to continue from one of its nodes: :attr:`states` (the change set as it stood after
    a node, for architectures that edit a change set in place: ReAct, plan, a workflow's stage agents;
    see :meth:`keep_state`), :attr:`start_state` and :attr:`notes`. The session keeps them with the run's
    branches across restarts.
    """

    def __init__(
        self,
        *,
        architecture: str,
        run_id: str | None = None,
        emit: Callable[[TreeEvent], None] | None = None,
        clock: Callable[[], float] = time.time,
        forked_from: ForkOrigin | None = None,
    ) -> None:
        self.run_id = run_id or uuid.uuid4().hex
        self.architecture = architecture
        self.forked_from = forked_from
        """Where the run continues from: written on its first event (set it before the root is added)."""
        self.tree = SearchTree()
        self.lock = threading.RLock()
        self.states: dict[str, str] = {}
        """Node id → the id of the change set (one of the run's branches) as it stood after that node, for
        nodes whose record does not name one (``changeset_id``)."""
        self.start_state: str | None = None
        """The id of the change set as it stood when the run began (the state of a node before any kept)."""
        self.notes: dict[str, Any] = {}
        """JSON values an architecture keeps to continue from a node later (a workflow: its plan, and the
        stage each stage node ran)."""
        self._emit = emit
        self._clock = clock
        self._nodes_made = 0
        self._last_state: dict[str, str] = {}

    @property
    def emitter(self) -> Callable[[TreeEvent], None] | None:
        """Where this recorder's events go (a nested run records its own tree to the same place)."""
        return self._emit

    @property
    def seq(self) -> int:
        """The ``seq`` of the last event recorded."""
        return self.tree.seq

    def add(self, parent: str | None, *, kind: str, label: str, **fields: Any) -> str:
        """Add a node under ``parent`` (``None``: the root) and return its new id."""
        refused = unsettable(fields, "set by the recorder, not by add()")
        if refused:
            raise TreeError(refused)
        if fields.get("observation") is not None:
            fields["observation"] = cap_text(fields["observation"], OBSERVATION_CAP)
        with self.lock:
            if parent is not None and parent not in self.tree.nodes:
                raise TreeError(f"no node {parent!r} to add a child to in run {self.run_id}")
            depth = 0 if parent is None else self.tree.nodes[parent].depth + 1
            node_id = f"n{self._nodes_made + 1}"
            now = self._clock()
            try:
                node = TreeNode(
                    id=node_id,
                    parent=parent,
                    depth=depth,
                    kind=kind,  # type: ignore[arg-type]
                    label=label,
                    created_at=now,
                    **{"updated_at": now, **fields},
                )
            except ValidationError as exc:
                raise TreeError(f"new node under {parent!r}: {first_error(exc)}") from None
            self._record(
                kind="node_added",
                node=node,
                architecture=self.architecture if parent is None else None,
                at=now,
            )
            self._nodes_made += 1
            return node_id

    def update(self, node_id: str, **changes: Any) -> TreeNode:
        """Change fields of a node; emit ``node_updated`` with only the fields whose value changed.

        ``updated_at`` is set with them. An ``observation`` is capped at OBSERVATION_CAP bytes. Returns the
        node as it is now; nothing is emitted when no value changed.
        """
        if changes.get("observation") is not None:
            changes["observation"] = cap_text(changes["observation"], OBSERVATION_CAP)
        with self.lock:
            if node_id not in self.tree.nodes:
                raise TreeError(f"no node {node_id!r} in run {self.run_id}")
            old = self.tree.nodes[node_id]
            new = updated_node(old, changes)
            # Wire form of the validated values, so live events equal the ones read back from JSONL.
            dumped = new.model_dump(mode="json", include=set(changes))
            old_dumped = old.model_dump(mode="json", include=set(changes))
            # A field left out of the wire when unset (a node's ``steer``) is missing from one dump or both.
            names = [name for name in TreeNode.model_fields if name in changes]
            delta = {name: dumped.get(name) for name in names if old_dumped.get(name) != dumped.get(name)}
            if not delta:
                return old
            now = self._clock()
            if "updated_at" not in delta:
                delta["updated_at"] = now
            self._record(kind="node_updated", node_id=node_id, changes=delta, at=now)
            return self.tree.nodes[node_id]

    def best_path(self, node_id: str) -> list[str]:
        """Mark the path from the root to ``node_id`` as the best so far; return its ids."""
        with self.lock:
            path = self.tree.path_to(node_id)
            self._record(kind="best_path", path=path, at=self._clock())
            return path

    def finish(self, **figures: Any) -> None:
        """Close the run with its figures (stop reason, iterations, tokens…); no event may follow."""
        try:
            json.dumps(figures)
        except (TypeError, ValueError) as exc:
            raise TreeError(f"run figures must be JSON values: {exc}") from None
        with self.lock:
            self._record(kind="finished", figures=figures, architecture=self.architecture, at=self._clock())

    def keep_start(self, changeset: ChangeSet, branches: dict[str, ChangeSet]) -> str:
        """Remember ``changeset`` as the run's state before any of its nodes (:attr:`start_state`)."""
        with self.lock:
            kept = changeset.child()
            branches[kept.id] = kept
            self._last_state[changeset.id] = kept.id
            self.start_state = kept.id
            return kept.id

    def keep_state(self, node_id: str, changeset: ChangeSet, branches: dict[str, ChangeSet]) -> str:
        """Remember ``changeset`` as it stands now as the run's state after ``node_id``: a snapshot (a
        copy-on-write child, never edited) added to ``branches`` (the run's), or the last one taken of the
        same change set while its proposed entries have not changed since. Returns the snapshot's id."""
        with self.lock:
            last = self._last_state.get(changeset.id)
            kept = branches.get(last) if last is not None else None
            if kept is None or kept.state_key() != changeset.state_key():
                kept = changeset.child()
                branches[kept.id] = kept
                self._last_state[changeset.id] = kept.id
            self.states[node_id] = kept.id
            return kept.id

    def _record(self, **event: Any) -> None:
        """Make the next event, apply it (which checks it), then hand it to ``emit``; call under the lock."""
        if self.tree.seq == 0 and self.forked_from is not None:
            event["forked_from"] = self.forked_from
        recorded = TreeEvent(run_id=self.run_id, seq=self.tree.seq + 1, **event)
        self.tree.apply(recorded)
        if self._emit is not None:
            self._emit(recorded)
