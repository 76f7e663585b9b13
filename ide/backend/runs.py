"""A session's runs: every search tree it recorded (the live one, and those stored with its history) and each
run's branch change sets, so a node of any of them can be listed, continued (``_arbor/tree/fork``) or adopted
(``_arbor/tree/adopt``), also after the backend restarted.

A run's branches are the change sets its nodes stand for: a node's own ``changeset_id`` (LATS and Tree of
Thoughts branch), or the state the architecture kept after it (``TreeRecorder.states``: ReAct, plan and a
workflow's stage agents edit one change set in place), or the run's start
(:func:`ide.search.steer.node_state`).
The book holds the branches of the last KEPT_RUNS runs in memory, as the run made them, and the session store
keeps those of the last ``KEPT_RUN_STATES`` runs (``ide.backend.store``), encoded with each file's bytes once
(``ide.changes.snapshot.encode_changesets``); an older run's tree stays listed and replayable, its changes are
not known any more.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ide.protocol import steer as st
from ide.protocol.tree import SearchTree, TreeError, TreeEvent
from ide.search.events import first_line

if TYPE_CHECKING:
    from ide.backend.store import SessionStore
    from ide.changes import ChangeSet
    from ide.search.steer import Steering
    from ide.search.tree import TreeRecorder

# LangChain (ide.search.steer) and the change sets are imported where they are used: the extensions import
# this module when the backend starts, before ``initialize`` answers.

log = logging.getLogger(__name__)

KEPT_RUNS = 3
"""Runs whose branch change sets a session holds in memory as they were made (the window's branch diffs)."""
LOADED_RUNS = 3
"""Runs whose stored branches a session keeps decoded after a lookup."""
MAX_STATE_BYTES = 32 * 2**20
"""A run's encoded branches over this are not stored (its tree still is): a search over large files."""
STATE_VERSION = 1


@dataclass
class Kept:
    """What a run left to continue from: its branches by id, the state after nodes, its start, its notes."""

    branches: dict[str, ChangeSet]
    states: dict[str, str] = field(default_factory=dict)
    start: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    def branch_of(self, tree: SearchTree, node_id: str) -> ChangeSet | None:
        from ide.search.steer import node_state

        found = node_state(tree, node_id, self.states, self.start)
        return self.branches.get(found) if found is not None else None


@dataclass
class RunInfo:
    """One run of the session: its tree and the task it worked on."""

    tree: SearchTree
    task: str
    kept: bool = False
    """Its branches are held or stored: a node's changes are known."""
    hint: str | None = None
    """A continued run's hint: what the user asked when it was continued (its turn's prompt). None for a run
    that was not continued, or whose turn's prompt is not known."""


@dataclass
class Link:
    """One continuation along a chain of runs (:meth:`RunBook.chain`): the run continued from, its node, and
    the hint the user gave the continuation ("" when not known)."""

    tree: SearchTree
    node_id: str
    hint: str


@dataclass
class LiveRun:
    """The run of the turn now running: what ``_arbor/tree/steer`` hands a prune or an expand to."""

    run_id: str
    architecture: str
    steering: Steering
    tree: SearchTree


@dataclass
class ArmedFork:
    """What ``_arbor/tree/fork`` armed the session's next prompt with."""

    run_id: str
    node_id: str
    mode: str
    tree: SearchTree
    task: str
    given: bool = False
    """The run came with the request (its events), not from the session: its branches are not known."""


class RunBook:
    """The runs of one session (see the module docstring)."""

    def __init__(self, store: SessionStore, session_id: str, cwd: str) -> None:
        self.store = store
        self.session_id = session_id
        self.cwd = cwd
        self.live: LiveRun | None = None
        self._held: OrderedDict[str, tuple[TreeRecorder, dict[str, ChangeSet]]] = OrderedDict()
        self._loaded: OrderedDict[str, Kept | None] = OrderedDict()

    def hold(self, recorder: TreeRecorder, branches: dict[str, ChangeSet]) -> None:
        """Hold a run's recorder and branch change sets (of the last KEPT_RUNS runs) in memory."""
        self._held[recorder.run_id] = (recorder, branches)
        while len(self._held) > KEPT_RUNS:
            self._held.popitem(last=False)

    def branch(self, changeset_id: str) -> ChangeSet | None:
        """A branch change set held in memory (of a recent run, or one whose stored branches were read)."""
        for _recorder, branches in self._held.values():
            if changeset_id in branches:
                return branches[changeset_id]
        for kept in self._loaded.values():
            if kept is not None and changeset_id in kept.branches:
                return kept.branches[changeset_id]
        return None

    async def runs(self) -> list[RunInfo]:
        """Every run of the session, oldest first: stored ones, and the held ones as they are now."""
        batches = await asyncio.to_thread(self.store.tree_batches, self.session_id, self.cwd)
        stored = await asyncio.to_thread(self.store.kept_runs, self.session_id, self.cwd)
        events: dict[str, list[TreeEvent]] = {}
        questions: dict[str, str | None] = {}
        for _turn, question, batch in batches:
            for raw in batch:
                try:
                    event = TreeEvent.model_validate(raw)
                except ValueError:
                    continue
                events.setdefault(event.run_id, []).append(event)
                questions.setdefault(event.run_id, question)
        trees = {run_id: _replay(run_id, run_events) for run_id, run_events in events.items()}
        for run_id, (recorder, _branches) in self._held.items():
            with recorder.lock:
                if recorder.tree.root is not None:
                    trees[run_id] = SearchTree(recorder.tree.events)
        found: list[RunInfo] = []
        tasks: dict[str, str] = {}
        for run_id, tree in trees.items():
            root = tree.nodes.get(tree.root) if tree.root is not None else None
            origin = tree.forked_from.run_id if tree.forked_from is not None else None
            # A continued run goes on with its origin's task: its root is the node it continued from (a
            # LATS or ToT run plants a copy, whose thought is that node's reasoning, not the task).
            task = (
                (tasks.get(origin) if origin is not None else None)
                or (root.thought if root is not None and root.thought else None)
                or _question(questions.get(run_id), root.label if root is not None else "")
            )
            tasks[run_id] = task
            hint = questions.get(run_id) if origin is not None else None
            found.append(RunInfo(tree, task, kept=run_id in self._held or run_id in stored, hint=hint))
        return found

    async def chain(self, run_id: str) -> list[Link]:
        """How the run came to be when it was continued from another run of the session (``forked_from``),
        and that one perhaps from another: each run continued from, the node and the hint given then, oldest
        first — as far back as the session knows the runs (a run it does not know ends the chain)."""
        runs = {run.tree.run_id: run for run in await self.runs()}
        links: list[Link] = []
        seen = {run_id}
        run = runs.get(run_id)
        while run is not None and run.tree.forked_from is not None:
            origin = run.tree.forked_from
            before = runs.get(origin.run_id)
            if before is None or origin.run_id in seen or origin.node_id not in before.tree.nodes:
                break
            links.append(Link(before.tree, origin.node_id, run.hint or ""))
            seen.add(origin.run_id)
            run = before
        return links[::-1]

    async def kept(self, run_id: str) -> Kept | None:
        """What the run left to continue from: held in memory, or read from the store (None: not kept)."""
        held = self._held.get(run_id)
        if held is not None:
            recorder, branches = held
            return Kept(branches, recorder.states, recorder.start_state, recorder.notes)
        if run_id in self._loaded:
            self._loaded.move_to_end(run_id)
            return self._loaded[run_id]
        payload = await asyncio.to_thread(self.store.load_run_states, self.session_id, self.cwd, run_id)
        kept = await asyncio.to_thread(decode_kept, payload) if payload is not None else None
        self._loaded[run_id] = kept
        while len(self._loaded) > LOADED_RUNS:
            self._loaded.popitem(last=False)
        return kept

    async def save(self, recorder: TreeRecorder, branches: dict[str, ChangeSet]) -> None:
        """Keep a finished (or stopped) run's branches in the session store (never fails the turn)."""
        try:
            with recorder.lock:
                tree = SearchTree(recorder.tree.events)
                kept = Kept(dict(branches), dict(recorder.states), recorder.start_state, dict(recorder.notes))
            payload = await asyncio.to_thread(encode_kept, tree, kept)
            await asyncio.to_thread(
                self.store.save_run_states, self.session_id, self.cwd, recorder.run_id, payload
            )
            self._loaded.pop(recorder.run_id, None)
        except Exception:
            log.exception("the branches of run %s could not be kept", recorder.run_id)


def node_changes(tree: SearchTree, kept: Kept | None) -> dict[str, bool]:
    """Which nodes of ``tree`` stand for a branch that holds changes (reads files: call off the loop)."""
    changed: dict[str, bool] = {}

    def holds(node_id: str) -> bool:
        branch = kept.branch_of(tree, node_id) if kept is not None else None
        if branch is None:
            return False
        if branch.id not in changed:
            changed[branch.id] = bool(branch.changed_paths())
        return changed[branch.id]

    return {node_id: holds(node_id) for node_id in tree.nodes}


def run_summary(tree: SearchTree, changes: dict[str, bool] | None = None) -> st.RunSummary:
    """A run as ``_arbor/tree/runs`` lists it; with its nodes when ``changes`` (:func:`node_changes`) is
    given. A node's score is its reward, else its value once visited."""
    root = tree.nodes.get(tree.root) if tree.root is not None else None
    best = set(tree.best_path)
    nodes = [
        st.NodeSummary(
            id=node.id,
            parent=node.parent,
            kind=node.kind,
            label=node.label,
            score=node.reward if node.reward is not None else (node.value if node.visits else None),
            status=node.status,
            best=node.id in best,
            changes=changes.get(node.id, False),
        )
        for node in (tree.nodes.values() if changes is not None else ())
    ]
    return st.RunSummary(
        run_id=tree.run_id or "",
        architecture=tree.architecture,
        label=root.label if root is not None else "",
        finished=tree.finished,
        forked_from=tree.forked_from,
        nodes=nodes,
    )


def _replay(run_id: str, events: list[TreeEvent]) -> SearchTree:
    """The stored events of one run as a tree: as far as they replay (a run killed mid-way stops early)."""
    tree = SearchTree()
    for event in events:
        try:
            tree.apply(event)
        except TreeError as exc:
            log.warning("run %s: stored tree event skipped: %s", run_id, exc)
    return tree


def _question(question: str | None, label: str) -> str:
    """A run's task from its turn's question, when the question is what its root was labelled with."""
    if question and first_line(question) == label:
        return question
    return label


def encode_kept(tree: SearchTree, kept: Kept) -> dict[str, Any]:
    """A run's branches that its nodes stand for (and its start), its states and notes, as JSON data."""
    from ide.changes.snapshot import encode_changesets

    wanted = {kept.start, *kept.states.values()}
    wanted |= {node.changeset_id for node in tree.nodes.values() if node.changeset_id}
    changesets = [kept.branches[ident] for ident in wanted if ident is not None and ident in kept.branches]
    payload: dict[str, Any] = {
        "version": STATE_VERSION,
        "start": kept.start,
        "states": kept.states,
        "notes": kept.notes,
        "branches": encode_changesets(changesets) if changesets else None,
    }
    if len(json.dumps(payload["branches"])) > MAX_STATE_BYTES:
        log.warning("run %s: its branches are over %d bytes; they are not kept", tree.run_id, MAX_STATE_BYTES)
        payload["branches"] = None
    return payload


def decode_kept(payload: dict[str, Any]) -> Kept | None:
    """What :func:`encode_kept` gave ``payload`` for; None for one that cannot be read (said in the log)."""
    from ide.changes import ChangeError
    from ide.changes.snapshot import decode_changesets

    if not isinstance(payload, dict) or payload.get("version") != STATE_VERSION:
        return None
    try:
        branches = decode_changesets(payload["branches"]) if payload.get("branches") else {}
    except (ChangeError, KeyError, TypeError) as exc:
        log.warning("stored branches could not be read: %s", exc)
        branches = {}
    states = payload.get("states")
    notes = payload.get("notes")
    return Kept(
        branches,
        dict(states) if isinstance(states, dict) else {},
        payload.get("start") if isinstance(payload.get("start"), str) else None,
        dict(notes) if isinstance(notes, dict) else {},
    )


async def stored_summaries(
    store: SessionStore, session_id: str, cwd: str, run_id: str | None = None
) -> list[tuple[st.RunSummary, int]]:
    """A stored session's runs as ``_arbor/tree/runs`` lists them, each with its number of nodes, read from
    the store alone (``arbor tree list``): every run, or the runs whose id is or starts with ``run_id``, with
    their nodes."""
    book = RunBook(store, session_id, cwd)
    found = []
    for run in await book.runs():
        if run_id is None:
            found.append((run_summary(run.tree), len(run.tree.nodes)))
        elif run.tree.run_id is not None and run.tree.run_id.startswith(run_id):
            kept = await book.kept(run.tree.run_id)
            changes = await asyncio.to_thread(node_changes, run.tree, kept)
            found.append((run_summary(run.tree, changes), len(run.tree.nodes)))
    return found
