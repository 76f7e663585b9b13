"""Steering a search from its tree: where a continued run starts (:class:`Fork`) and what the user asks of
a live one (:class:`Steering`).

A :class:`Fork` is built by the session from a recorded run (live, stored, or sent as events) and given to
the architecture in :attr:`~ide.search.base.RunContext.fork`. Every architecture reads the same three
things from it: the node's path as a tool-calling trajectory (:func:`trajectory`: thoughts, tool calls and
their observations, as the node records keep them), the node's branch change set (the continuation's
starting changes), and the user's hint. LATS and Tree of Thoughts also take the node's subtree as already
explored (:meth:`Fork.subtree`).

:class:`Steering` is the live channel: the ``_arbor/tree/steer`` handler adds a prune or an expand, the
running search reads them at its next selection. It is thread-safe (LATS expands concurrently).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ide.changes import ChangeSet
from ide.protocol.tree import FIXED_FIELDS, ForkOrigin, SearchTree, SteerAction, TreeNode
from ide.search.events import cap_text
from ide.search.tree import TreeRecorder

HINT_PREFIX = "Guidance from the user for going on from here:"
"""How the hint reaches the model: a user message after the trajectory, in the user's own words."""
DEFAULT_HINT = "Go on from here."
"""The continuation's prompt when the user gave no hint (an ACP prompt is never empty)."""


@dataclass
class Fork:
    """A run continued from ``node_id`` of the recorded run ``tree``."""

    tree: SearchTree
    node_id: str
    hint: str
    changeset: ChangeSet | None = None
    """The node's branch (None: its changes are not known, the session's own stand in)."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What the origin run kept beside its tree to be continued (``TreeRecorder.notes``: a workflow's plan
    and the stage of each stage node); empty when it is not known."""
    branches: dict[str, ChangeSet] = field(default_factory=dict)
    """The recorded run's branches by change set id (a node's ``changeset_id``), as
    :attr:`~ide.search.base.RunContext.branches` keeps them: the subtree's nodes go on from theirs. Empty:
    not known (a run opened from a file)."""

    @property
    def origin(self) -> ForkOrigin:
        assert self.tree.run_id is not None
        return ForkOrigin(run_id=self.tree.run_id, node_id=self.node_id)

    @property
    def node(self) -> TreeNode:
        return self.tree.nodes[self.node_id]

    @property
    def path(self) -> list[str]:
        """Node ids from the run's root to the node."""
        return self.tree.path_to(self.node_id)

    def trajectory(self) -> list[BaseMessage]:
        """The path below the root as messages (see :func:`trajectory`)."""
        return trajectory(self.tree.nodes[node_id] for node_id in self.path[1:])

    def guidance(self) -> list[BaseMessage]:
        """The trajectory, then the hint as the user's message."""
        return [*self.trajectory(), HumanMessage(self.hint_text)]

    @property
    def hint_text(self) -> str:
        """The hint as the user's guidance, worded as :meth:`guidance` gives it."""
        return f"{HINT_PREFIX}\n{self.hint or DEFAULT_HINT}"

    def steps(self) -> list[tuple[str, str]]:
        """The path below the root as ``(label, text)`` steps, for prompts written as text (no tool calls)."""
        return [(node.label, step_text(node)) for node in (self.tree.nodes[n] for n in self.path[1:])]

    def branch_of(self, node_id: str) -> ChangeSet | None:
        """The branch ``node_id`` of the subtree goes on from: :attr:`changeset` for the node itself, else
        its recorded branch when :attr:`branches` carries it; None when not known."""
        if node_id == self.node_id and self.changeset is not None:
            return self.changeset
        changeset_id = self.tree.nodes[node_id].changeset_id
        return self.branches.get(changeset_id) if changeset_id else None

    def plant(self, recorder: TreeRecorder, changeset_ids: Mapping[str, str | None]) -> dict[str, str]:
        """Record the node as the root of ``recorder``'s new run, and its subtree under it as already
        explored: each node as recorded (visits, values, rewards, statuses, thoughts, actions,
        observations) with ``changeset_ids[node]`` as its branch; the root is a ``root``, ``active`` and
        unsteered. The run's first event says where it came from (``forked_from``). Returns the new id of
        each node by its recorded id."""
        if recorder.forked_from is None:
            recorder.forked_from = self.origin
        new_ids: dict[str, str] = {}
        for node in self.subtree():
            fields = node.model_dump(exclude={*FIXED_FIELDS, "updated_at", "kind", "label", "changeset_id"})
            fields["changeset_id"] = changeset_ids.get(node.id)
            if node.id == self.node_id:
                new_ids[node.id] = recorder.add(
                    None, kind="root", label=node.label, **{**fields, "status": "active", "steer": None}
                )
            else:
                assert node.parent is not None
                new_ids[node.id] = recorder.add(
                    new_ids[node.parent], kind=node.kind, label=node.label, **fields
                )
        return new_ids

    def subtree(self) -> list[TreeNode]:
        """The node and everything under it, parents before children (the explored part kept)."""
        found: list[TreeNode] = []
        stack = [self.node_id]
        while stack:
            node_id = stack.pop(0)
            found.append(self.tree.nodes[node_id])
            stack.extend(self.tree.children(node_id))
        return found


def node_state(tree: SearchTree, node_id: str, states: Mapping[str, str], start: str | None) -> str | None:
    """The id of a node's branch: its own ``changeset_id``, else the state kept after it or after its nearest
    ancestor that has one (``states``: ``TreeRecorder.states``), else the run's ``start``."""
    for step in reversed(tree.path_to(node_id)):
        node = tree.nodes[step]
        if node.changeset_id:
            return node.changeset_id
        if step in states:
            return states[step]
    return start


def lineage(tree: SearchTree, node_id: str) -> list[TreeNode]:
    """The nodes below the root that led to ``node_id``, in the order they were made: its path, each node
    preceded by the tool calls its parent made before it. A model step's calls hang beside each other under
    it (ReAct, a plan's task, a workflow's agent), so the path alone leaves the earlier ones out; for a tree
    search, whose siblings are alternatives, the path is the trajectory (:meth:`Fork.trajectory`)."""
    found: list[TreeNode] = []
    path = tree.path_to(node_id)
    for parent, child in itertools.pairwise(path):
        for sibling in tree.children(parent):
            if sibling == child:
                break
            if tree.nodes[sibling].action is not None:
                found.append(tree.nodes[sibling])
        found.append(tree.nodes[child])
    return found


def trajectory(nodes: Iterable[TreeNode]) -> list[BaseMessage]:
    """Recorded nodes as the conversation that made them: a node's thought (and its tool call) as the
    assistant's message, its observation as the tool's answer. Nodes with neither say nothing."""
    messages: list[BaseMessage] = []
    for node in nodes:
        text = node.thought or ("" if node.action else node.label if node.kind != "root" else "")
        if node.action is not None:
            call_id = f"fork_{node.id}"
            call = {
                "name": node.action.tool,
                "args": dict(node.action.args),
                "id": call_id,
                "type": "tool_call",
            }
            messages.append(AIMessage(content=text, tool_calls=[call]))
            messages.append(ToolMessage(content=node.observation or "", tool_call_id=call_id))
        elif text:
            messages.append(AIMessage(content=text))
    return messages


def step_text(node: TreeNode) -> str:
    """One recorded node as a line of a text trajectory: its thought, its tool call and what it saw."""
    parts = []
    if node.thought:
        parts.append(cap_text(node.thought, 1500 if node.kind == "answer" else 300))
    if node.action is not None:
        parts.append(f"{node.action.tool}({json.dumps(node.action.args, default=str)[:300]})")
    if node.observation:
        parts.append("→ " + cap_text(node.observation, 600))
    return " ".join(parts) or node.label


@dataclass
class Steering:
    """What the user asked of a live search, read by its next selection."""

    pruned: set[str] = field(default_factory=set)
    expand: list[str] = field(default_factory=list)
    """Nodes to expand next, oldest first (each taken once)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ask(self, node_id: str, action: SteerAction) -> None:
        with self.lock:
            if action == "prune":
                self.pruned.add(node_id)
                self.expand = [queued for queued in self.expand if queued != node_id]
            elif node_id not in self.pruned and node_id not in self.expand:
                self.expand.append(node_id)

    def is_pruned(self, tree: SearchTree, node_id: str) -> bool:
        """``node_id`` or one of its ancestors was pruned."""
        with self.lock:
            return any(step in self.pruned for step in tree.path_to(node_id))

    def next_expand(self, tree: SearchTree) -> str | None:
        """The oldest asked expansion of a node still in the tree and not pruned, taken off the queue."""
        while True:
            with self.lock:
                if not self.expand:
                    return None
                node_id = self.expand.pop(0)
            if node_id in tree.nodes and not self.is_pruned(tree, node_id):
                return node_id
