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

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ide.changes import ChangeSet
from ide.protocol.tree import ForkOrigin, SearchTree, SteerAction, TreeNode

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
        return [*self.trajectory(), HumanMessage(f"{HINT_PREFIX}\n{self.hint or DEFAULT_HINT}")]

    def subtree(self) -> list[TreeNode]:
        """The node and everything under it, parents before children (the explored part kept)."""
        found: list[TreeNode] = []
        stack = [self.node_id]
        while stack:
            node_id = stack.pop(0)
            found.append(self.tree.nodes[node_id])
            stack.extend(self.tree.children(node_id))
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
