"""Wire models of the search tree: flat node records and the events that grow them.

Every architecture (ReAct now; LATS, Tree of Thoughts and plan/execute later) records its run as
:class:`TreeNode` records and :class:`TreeEvent` events. The backend streams events in the
``_arbor/tree`` notification (params: :class:`TreeEventBatch`) during a prompt turn, stores them with the
session, and replays them on ``session/load``. A ``.arbor-tree.jsonl`` file is one JSON event per line,
the same :class:`TreeEvent` objects, so a run can be exported, shared and opened in the window.

:class:`SearchTree` is the one replay of those events, used by the backend (which records runs with
``ide.search.tree.TreeRecorder``) and by the window alike: applying the same events in the same order
always gives the same tree, whether they come live, from the session store or from a file.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from ide.protocol.method import Method, Notification
from ide.protocol.review import ChangeSetView
from ide.protocol.wire import WireModel

TREE_FILE_SUFFIX = ".arbor-tree.jsonl"
OBSERVATION_CAP = 2048
"""Bytes of a tool observation kept in a node record."""
MAX_RECORDING_NODES = 20_000
"""Nodes of a ``.arbor-tree.jsonl`` file Arbor opens: a run with the default settings records tens (the
sample, 10), the tree view is measured at 5,000, and reading 20,000 takes about a second."""
MAX_RECORDING_BYTES = 100 * 2**20
"""Bytes of a ``.arbor-tree.jsonl`` file Arbor opens: 20,000 nodes at ~5 kB each (an observation is kept
to 2 kB; its thought and updates come on top)."""

NodeKind = Literal["root", "thought", "action", "answer", "plan", "step", "evaluation", "synthesis"]
NodeStatus = Literal["generated", "evaluated", "active", "terminated_early", "solution", "pruned", "failed"]
EventKind = Literal["node_added", "node_updated", "best_path", "finished"]


RECOVERED_PREFIX = "recovered_"
"""Id prefix of a tool call Arbor recovered from the model's text (the model wrote the call out): the one
mark of such a call, read and written only through the functions below."""


def recovered_call_id(ident: str) -> str:
    """The id of a tool call recovered from the model's text, made from a unique ``ident``."""
    return f"{RECOVERED_PREFIX}{ident}"


def is_recovered(call_id: str | None) -> bool:
    """Whether a tool call (by id) was recovered from the model's text."""
    return bool(call_id) and str(call_id).startswith(RECOVERED_PREFIX)


def carried_call_id(call_id: str | None, ident: str) -> str:
    """``ident`` as the id of a call an agent runs under its own id, still marked recovered when the
    model's call (``call_id``) was."""
    return recovered_call_id(ident) if is_recovered(call_id) else ident


def recovered_calls(calls: Iterable[Mapping[str, Any]]) -> int:
    """How many of the LangChain tool-call dicts ``calls`` were recovered from the model's text."""
    return sum(1 for call in calls if is_recovered(call.get("id")))


class ToolAction(WireModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    recovered: bool = Field(
        False,
        description="The model wrote this call as text; Arbor recovered it",
        exclude_if=lambda recovered: not recovered,  # keeps recorded trees as they were
    )

    @classmethod
    def of(cls, call: Mapping[str, Any]) -> ToolAction:
        """The action of a LangChain tool-call dict (``name``, ``args``, ``id``)."""
        args = call.get("args")
        return cls(
            tool=call.get("name") or "?",
            args=dict(args) if isinstance(args, Mapping) else {},
            recovered=is_recovered(call.get("id")),
        )


def left_out_unset(description: str) -> Any:
    """An optional field a record leaves out while it is unset, so recordings made before it stay as they
    were, byte for byte."""
    return Field(None, description=description, exclude_if=lambda value: value is None)


class ForkOrigin(WireModel):
    """Where a run continued from: a node of an earlier run of the session (``Continue from here``)."""

    run_id: str
    node_id: str


SteerAction = Literal["prune", "expand"]
"""What the user asked of a node of a live search: never select or expand it again, or expand it next."""


class TreeNode(WireModel):
    """One node of a search tree."""

    id: str
    parent: str | None = None
    depth: int = 0
    kind: NodeKind = "thought"
    label: str = ""
    thought: str | None = None
    action: ToolAction | None = None
    observation: str | None = Field(None, description=f"Capped at {OBSERVATION_CAP} bytes")
    reflection: str | None = None
    reward_raw: float | None = Field(None, description="The evaluator's score, 0–10")
    reward: float | None = Field(None, description="Normalised score, 0–1")
    visits: int = 0
    value: float = 0.0
    status: NodeStatus = "generated"
    changeset_id: str | None = Field(None, description="The branch's change set")
    role: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    created_at: float = Field(0.0, description="Seconds since the epoch")
    updated_at: float = 0.0
    steer: SteerAction | None = left_out_unset("What the user last asked of this node during the run")


class TreeEvent(WireModel):
    """A change to the tree of one run.

    ``node_added`` carries the whole node; ``node_updated`` the node id and the changed fields in
    ``changes``; ``best_path`` the ids from the root to the best node; ``finished`` the run's figures.
    """

    run_id: str
    seq: int = Field(description="1, 2, 3… within a run; replay applies events in this order")
    kind: EventKind
    node: TreeNode | None = None
    node_id: str | None = None
    changes: dict[str, Any] = Field(default_factory=dict)
    path: list[str] = Field(default_factory=list)
    architecture: str | None = None
    figures: dict[str, Any] = Field(default_factory=dict)
    at: float = 0.0
    forked_from: ForkOrigin | None = left_out_unset("On a run's first event: the node it continues from")


class TreeEventBatch(WireModel):
    """Params of the ``_arbor/tree`` notification: events of one session, in order."""

    session_id: str
    events: list[TreeEvent]


TREE_NOTIFICATION = Notification("arbor/tree", TreeEventBatch)

FIXED_FIELDS = frozenset({"id", "parent", "depth", "created_at"})
"""Fields set when a node is added; a ``node_updated`` may not change them."""


class TreeError(ValueError):
    """An event or update that does not fit the tree it is applied to."""


class TreeFileError(TreeError):
    """A ``.arbor-tree.jsonl`` file that cannot be read; the message names file:line and the fault."""


class SearchTree:
    """The tree of one run: ``nodes`` by id, children in the order they were added, best path, figures.

    It changes only through :meth:`apply`, which checks each event against the tree so far (one run,
    ``seq`` 1, 2, 3…, known parents, fields of :class:`TreeNode`) and raises :class:`TreeError` without
    changing anything when one does not fit. Node records are replaced, never mutated, on update.
    """

    def __init__(self, events: Iterable[TreeEvent] = ()) -> None:
        self.run_id: str | None = None
        self.architecture: str | None = None
        self.forked_from: ForkOrigin | None = None
        """The node of an earlier run this run continues from (its first event says)."""
        self.nodes: dict[str, TreeNode] = {}
        self.root: str | None = None
        self.best_path: list[str] = []
        self.finished = False
        self.figures: dict[str, Any] = {}
        self.events: list[TreeEvent] = []
        # Only nodes that have children get a list: most nodes of a search tree are leaves, and every
        # list is one more object for the cycle collector to walk while a live run grows.
        self._children: dict[str, list[str]] = {}
        for event in events:
            self.apply(event)

    @property
    def seq(self) -> int:
        """The ``seq`` of the last event applied, 0 for an empty tree."""
        return len(self.events)

    def children(self, node_id: str) -> list[str]:
        """Ids of the node's children, in the order they were added."""
        if node_id not in self.nodes:
            raise TreeError(f"no node {node_id!r} in run {self.run_id}")
        return list(self._children.get(node_id, ()))

    def path_to(self, node_id: str) -> list[str]:
        """Ids from the root down to ``node_id``."""
        if node_id not in self.nodes:
            raise TreeError(f"no node {node_id!r} in run {self.run_id}")
        path: list[str] = []
        current: str | None = node_id
        while current is not None:
            path.append(current)
            current = self.nodes[current].parent
        path.reverse()
        return path

    def at(self, seq: int) -> SearchTree:
        """The tree as it stood after its first ``seq`` events (0: empty), for stepping through a replay."""
        if not 0 <= seq <= self.seq:
            raise ValueError(f"seq {seq} is outside this run's 0…{self.seq}")
        return SearchTree(self.events[:seq])

    def apply(self, event: TreeEvent) -> None:
        """Grow the tree by one event; raise :class:`TreeError` (tree unchanged) if it does not fit."""
        if self.finished:
            raise TreeError(f"run {self.run_id} has finished; event seq {event.seq} came after it")
        if self.run_id is not None and event.run_id != self.run_id:
            raise TreeError(f"event of run {event.run_id} applied to the tree of run {self.run_id}")
        if event.seq != self.seq + 1:
            raise TreeError(f"run {event.run_id}: expected event seq {self.seq + 1}, got {event.seq}")
        if event.kind == "node_added":
            self._add(event)
        elif event.kind == "node_updated":
            self._update(event)
        elif event.kind == "best_path":
            self._check_path(event.path)
            self.best_path = list(event.path)
        else:
            self.finished = True
            self.figures = dict(event.figures)
        self.run_id = event.run_id
        if self.architecture is None:
            self.architecture = event.architecture
        if self.forked_from is None and event.seq == 1:
            self.forked_from = event.forked_from
        self.events.append(event)

    def _add(self, event: TreeEvent) -> None:
        node = event.node
        if node is None:
            raise TreeError(f"node_added seq {event.seq} carries no node")
        if node.id in self.nodes:
            raise TreeError(f"node_added seq {event.seq}: node {node.id!r} already exists")
        if node.parent is None:
            if self.root is not None:
                raise TreeError(
                    f"node_added seq {event.seq}: a second root {node.id!r} (root is {self.root!r})"
                )
            depth = 0
        elif node.parent not in self.nodes:
            raise TreeError(f"node_added seq {event.seq}: parent {node.parent!r} of {node.id!r} is unknown")
        else:
            depth = self.nodes[node.parent].depth + 1
        if node.depth != depth:
            raise TreeError(
                f"node_added seq {event.seq}: {node.id!r} has depth {node.depth}, expected {depth}"
            )
        self.nodes[node.id] = node
        if node.parent is None:
            self.root = node.id
        else:
            self._children.setdefault(node.parent, []).append(node.id)

    def _update(self, event: TreeEvent) -> None:
        node_id = event.node_id
        if node_id is None or node_id not in self.nodes:
            raise TreeError(f"node_updated seq {event.seq}: unknown node {node_id!r}")
        self.nodes[node_id] = updated_node(self.nodes[node_id], event.changes)

    def _check_path(self, path: list[str]) -> None:
        if not path:
            raise TreeError("best_path is empty")
        if path[0] != self.root:
            raise TreeError(f"best_path starts at {path[0]!r}, not at the root {self.root!r}")
        for parent, child in itertools.pairwise(path):
            if child not in self.nodes or self.nodes[child].parent != parent:
                raise TreeError(f"best_path: {child!r} is not a child of {parent!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchTree):
            return NotImplemented
        return (
            self.run_id == other.run_id
            and self.architecture == other.architecture
            and self.nodes == other.nodes
            and self._children == other._children
            and self.best_path == other.best_path
            and self.finished == other.finished
            and self.figures == other.figures
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SearchTree(run_id={self.run_id!r}, nodes={len(self.nodes)}, seq={self.seq})"


def unsettable(fields: Iterable[str], fixed: str) -> str | None:
    """Why a node's ``fields`` may not be given: a name TreeNode lacks, or one of :data:`FIXED_FIELDS`
    (``fixed`` says who sets those instead); None when every one may."""
    unknown = sorted(set(fields) - set(TreeNode.model_fields))
    if unknown:
        return f"TreeNode has no field {', '.join(unknown)}"
    taken = sorted(set(fields) & FIXED_FIELDS)
    return f"{', '.join(taken)} are {fixed}" if taken else None


def updated_node(node: TreeNode, changes: dict[str, Any]) -> TreeNode:
    """``node`` with ``changes`` applied and validated; :class:`TreeError` names a bad field or value."""
    refused = unsettable(changes, "set when a node is added, not updated")
    if refused:
        raise TreeError(f"node {node.id!r}: {refused}")
    # A shallow copy with only the changed fields validated: the unchanged values (an action and its
    # arguments among them) are shared with the old record instead of rebuilt, so an update costs less
    # and leaves fewer objects for the cycle collector than re-validating the whole node.
    new = node.model_copy()
    # Read here, not at import: until TreeNode's first use (``defer_build``) the class holds a stand-in whose
    # every attribute read calls ``model_rebuild`` (tests/search/test_tree.py).
    validator = TreeNode.__pydantic_validator__
    try:
        for name, value in changes.items():
            validator.validate_assignment(new, name, value)
    except ValidationError:
        # The whole-record validation names every bad field at once: the message the caller gets.
        try:
            return TreeNode.model_validate({**node.model_dump(), **changes})
        except ValidationError as exc:
            raise TreeError(f"node {node.id!r}: {first_error(exc)}") from None
    return new


def write_jsonl(events: Iterable[TreeEvent], path: str | os.PathLike[str]) -> Path:
    """Write events as a ``.arbor-tree.jsonl`` file (suffix added if missing), atomically; return its path."""
    target = Path(path)
    if not target.name.endswith(TREE_FILE_SUFFIX):
        target = target.with_name(target.name + TREE_FILE_SUFFIX)
    write_text_atomic(
        target, "".join(event.model_dump_json(exclude_defaults=True) + "\n" for event in events)
    )
    return target


def write_text_atomic(target: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``target`` through a temporary file beside it, so a
    reader never sees it half written and a crash leaves the file as it was."""
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_jsonl(path: str | os.PathLike[str]) -> list[TreeEvent]:
    """Read a ``.arbor-tree.jsonl`` file: its events, checked to replay into trees (one per run).

    Blank lines are skipped. Any fault raises :class:`TreeFileError` naming ``file:line`` and what is
    wrong with that line; so does a file over :data:`MAX_RECORDING_BYTES` or holding more than
    :data:`MAX_RECORDING_NODES` nodes, before its events are read.
    """
    source = Path(path)
    try:
        with source.open("rb") as handle:
            _check_size(source, os.fstat(handle.fileno()).st_size)
            data = handle.read(MAX_RECORDING_BYTES + 1)
    except OSError as exc:
        raise TreeFileError(f"{source}: cannot read it: {exc.strerror or exc}") from None
    _check_size(source, len(data))  # it grew since
    # Counted in the bytes first (the way Arbor writes an event), so a recording far too big is refused
    # at once; one written otherwise is stopped by the count below, at the first node over.
    _check_nodes(source, data.count(b'"kind":"node_added"'))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TreeFileError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    del data
    events: list[TreeEvent] = []
    trees: dict[str, SearchTree] = {}
    nodes = 0
    # Split on "\n" only: str.splitlines() would also break JSON strings holding U+2028 and friends.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        where = f"{source}:{number}"
        try:
            event = TreeEvent.model_validate_json(line)
        except ValidationError as exc:
            if any(error["type"] == "json_invalid" for error in exc.errors()):
                raise TreeFileError(f"{where}: not JSON ({exc.errors()[0]['msg']})") from None
            raise TreeFileError(f"{where}: not a tree event: {first_error(exc)}") from None
        if event.kind == "node_added":
            nodes += 1
            _check_nodes(source, nodes, counting=True)
        try:
            trees.setdefault(event.run_id, SearchTree()).apply(event)
        except TreeError as exc:
            raise TreeFileError(f"{where}: {exc}") from None
        events.append(event)
    return events


def _check_size(source: Path, size: int) -> None:
    if size > MAX_RECORDING_BYTES:
        raise TreeFileError(
            f"{source}: this recording is {size / 2**20:,.0f} MB; Arbor opens recordings of up to "
            f"{MAX_RECORDING_BYTES // 2**20} MB"
        )


def _check_nodes(source: Path, nodes: int, *, counting: bool = False) -> None:
    """Refuse a recording of more than :data:`MAX_RECORDING_NODES` nodes (``counting``: the count so far)."""
    if nodes > MAX_RECORDING_NODES:
        held = f"more than {MAX_RECORDING_NODES:,}" if counting else f"{nodes:,}"
        raise TreeFileError(
            f"{source}: this recording holds {held} nodes; Arbor opens recordings of up to "
            f"{MAX_RECORDING_NODES:,} nodes"
        )


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"]) or "value"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{location}: {error['msg']}{more}"


class BranchDiffParams(WireModel):
    session_id: str
    changeset_id: str


BRANCH_DIFF = Method("arbor/tree/branch", BranchDiffParams, ChangeSetView)
"""The proposed changes of one search branch (a node's ``changeset_id``), read-only. Served for the runs
of the backend's live sessions; a run opened from a file has no change sets to show."""
