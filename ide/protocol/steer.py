"""Steering the search from its tree (``_arbor/tree/*``): continue from any node with a hint, use a node's
branch, prune or expand a node of a live search, and list a session's runs and nodes.

Continuing is two steps, so the continuation is an ordinary ACP turn (streamed, cancellable, answered like
any prompt): :data:`FORK` arms the session's next ``session/prompt`` to start from a node — its path's
trajectory and its branch's changes — and that prompt's text is the user's hint. The run it starts records
``forked_from`` on its first event (:class:`~ide.protocol.tree.ForkOrigin`).
"""

from __future__ import annotations

from pydantic import Field

from ide.protocol.method import Method
from ide.protocol.review import ChangeSetView
from ide.protocol.tree import ForkOrigin, NodeKind, NodeStatus, SteerAction, TreeEvent
from ide.protocol.wire import WireModel


class ForkParams(WireModel):
    session_id: str
    run_id: str
    node_id: str
    mode: str | None = Field(
        None, description="The mode the continuation runs in (a mode id); unset: the run's own architecture"
    )
    events: list[TreeEvent] = Field(
        default_factory=list,
        description="The run's events, for a run the session does not hold (one opened from a file); its "
        "branches' changes are then unknown and the continuation starts from the session's own",
    )


class ForkResult(WireModel):
    run_id: str
    node_id: str
    mode: str = Field(description="The mode the next prompt runs in")
    path: list[str] = Field(description="Node ids from the run's root to the node: the trajectory given")
    files: list[str] = Field(
        default_factory=list, description="Files the node's branch changed: the continuation starts from them"
    )
    note: str = Field("", description="What the continuation will not have, said plainly (or empty)")


FORK = Method("arbor/tree/fork", ForkParams, ForkResult)
"""Arm the session's next ``session/prompt`` to continue from a node (see the module docstring). Refused
while a turn runs, for a node or run the session does not know, or a mode it does not have."""


class AdoptParams(WireModel):
    session_id: str
    run_id: str
    node_id: str
    replace: bool = Field(
        False, description="Replace a pending review that holds decisions (the user confirmed it)"
    )


class AdoptResult(WireModel):
    adopted: bool
    decisions: int = Field(0, description="Decisions of the pending review that adopting would replace")
    changeset: ChangeSetView | None = Field(None, description="The session's review now (when adopted)")


ADOPT = Method("arbor/tree/adopt", AdoptParams, AdoptResult)
"""Make a node's branch the session's pending change set (Use this branch). With decisions pending and
``replace`` unset nothing changes: the answer says how many decisions it would replace."""


class SteerParams(WireModel):
    session_id: str
    run_id: str
    node_id: str
    action: SteerAction


class SteerResult(WireModel):
    accepted: bool
    message: str = Field("", description="Why not, when not accepted")


STEER = Method("arbor/tree/steer", SteerParams, SteerResult)
"""Prune (never select or expand again) or expand (more children next) a node of the session's running
LATS or Tree-of-Thoughts search; recorded in its tree as a ``node_updated`` of the node's ``steer``."""


class NodeSummary(WireModel):
    id: str
    parent: str | None = None
    kind: NodeKind
    label: str
    score: float | None = Field(None, description="The node's reward (0–1), else its value when visited")
    status: NodeStatus
    best: bool = Field(False, description="On the run's best path")
    changes: bool = Field(False, description="The node's branch holds changes the session keeps")


class RunSummary(WireModel):
    run_id: str
    architecture: str | None = None
    label: str = Field("", description="The root's label (the task)")
    finished: bool = False
    forked_from: ForkOrigin | None = None
    nodes: list[NodeSummary] = Field(default_factory=list, description="With ``run_id`` asked only")


class RunsParams(WireModel):
    session_id: str
    run_id: str | None = Field(None, description="One run, with its nodes; unset: every run, without")


class RunsResult(WireModel):
    runs: list[RunSummary]


RUNS = Method("arbor/tree/runs", RunsParams, RunsResult)
"""The session's recorded runs, oldest first (restored sessions included), or one run with its nodes."""
