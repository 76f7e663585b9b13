"""Wire models of the search tree: flat node records and the events that grow them.

Every architecture (ReAct now; LATS, Tree of Thoughts and plan/execute later) records its run as
:class:`TreeNode` records and :class:`TreeEvent` events. The backend streams events in the
``_arbor/tree`` notification (params: :class:`TreeEventBatch`) during a prompt turn, stores them with the
session, and replays them on ``session/load``. A ``.arbor-tree.jsonl`` file is one JSON event per line,
the same :class:`TreeEvent` objects, so a run can be exported, shared and opened in the window.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

TREE_NOTIFICATION = "arbor/tree"
TREE_FILE_SUFFIX = ".arbor-tree.jsonl"
OBSERVATION_CAP = 2048
"""Bytes of a tool observation kept in a node record."""

NodeKind = Literal["root", "thought", "action", "answer", "plan", "step", "evaluation", "synthesis"]
NodeStatus = Literal["generated", "evaluated", "active", "terminated_early", "solution", "pruned", "failed"]
EventKind = Literal["node_added", "node_updated", "best_path", "finished"]


class ToolAction(BaseModel):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class TreeNode(BaseModel):
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


class TreeEvent(BaseModel):
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


class TreeEventBatch(BaseModel):
    """Params of the ``_arbor/tree`` notification: events of one session, in order."""

    session_id: str
    events: list[TreeEvent]
