"""Steering a search from its tree: where a continued run starts (:class:`Fork`) and what the user asks of
a live one (:class:`Steering`).

A :class:`Fork` is built by the session from a recorded run (live, stored, or sent as events) and given to
the architecture in :attr:`~ide.search.base.RunContext.fork`. Every architecture reads the same three
things from it: the node's path as a tool-calling trajectory (:func:`trajectory`: thoughts, tool calls and
their observations, as the node records keep them), the node's branch change set (the continuation's
starting changes), and the user's hint. LATS and Tree of Thoughts also take the node's subtree as already
explored (:meth:`Fork.subtree`).

When the run being continued was itself a continuation (its ``forked_from``), the Fork carries the chain
before it (:attr:`Fork.earlier`): each earlier run's work up to the node continued from (:func:`done_by`)
and the hint given there come first in :meth:`Fork.trajectory`, :meth:`Fork.guidance` and
:meth:`Fork.steps` (:meth:`Fork.lead`), so every architecture goes on with the whole line of attempts.

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
from ide.search.events import cap_text, first_line
from ide.search.tree import TreeRecorder

HINT_PREFIX = "Guidance from the user for going on from here:"
"""How the hint reaches the model: a user message after the trajectory, in the user's own words."""
DEFAULT_HINT = "Go on from here."
"""The continuation's prompt when the user gave no hint (an ACP prompt is never empty)."""
SEARCHES = ("lats", "tot")
"""Tree searches: a node's siblings are alternatives, its path is its trajectory."""
PHASES = ("plan", "evaluation")
"""A plan run's planning and review nodes."""
ENDED = ("evaluated", "failed", "solution", "terminated_early")


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
    earlier: list[Fork] = field(default_factory=list)
    """When the recorded run was itself continued from another (its ``forked_from``), and that one perhaps
    from another: the continuations before it, oldest first, each as the run continued from, the node and
    the hint given then (their own ``earlier`` empty). Empty: the run was not a continuation, or the runs
    before it are not known."""

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
        """What led to the run's root (:meth:`lead`), then the path below the root as messages (see
        :func:`trajectory`)."""
        return [*self.lead(), *trajectory(self.tree.nodes[node_id] for node_id in self.path[1:])]

    def lead(self) -> list[BaseMessage]:
        """What led to the recorded run's root when it was continued from another (:attr:`earlier`): each
        earlier run's work up to the node continued from (:func:`done_by`), then the hint given there as the
        user's guidance. Empty for a run that was not a continuation."""
        messages: list[BaseMessage] = []
        for number, before in enumerate(self.earlier, start=1):
            messages += done_by(before.tree, before.node_id, tag=f"{number}_")
            messages.append(HumanMessage(before.hint_text))
        return messages

    def guidance(self) -> list[BaseMessage]:
        """The trajectory, then the hint as the user's message."""
        return [*self.trajectory(), HumanMessage(self.hint_text)]

    @property
    def hint_text(self) -> str:
        """The hint as the user's guidance, worded as :meth:`guidance` gives it."""
        return f"{HINT_PREFIX}\n{self.hint or DEFAULT_HINT}"

    def steps(self) -> list[tuple[str, str]]:
        """The path below the root as ``(label, text)`` steps, for prompts written as text (no tool calls);
        after what led to the run's root (:meth:`lead`, as :func:`message_steps`)."""
        own = [(node.label, step_text(node)) for node in (self.tree.nodes[n] for n in self.path[1:])]
        return [*message_steps(self.lead()), *own]

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


def trajectory(nodes: Iterable[TreeNode], tag: str = "") -> list[BaseMessage]:
    """Recorded nodes as the conversation that made them: a node's thought (and its tool call) as the
    assistant's message, its observation as the tool's answer. Nodes with neither say nothing. ``tag`` goes
    into the tool call ids (``fork_<tag><node>``), to tell apart the nodes of several runs."""
    messages: list[BaseMessage] = []
    for node in nodes:
        text = node.thought or ("" if node.action else node.label if node.kind != "root" else "")
        if node.action is not None:
            call_id = f"fork_{tag}{node.id}"
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


def done_by(tree: SearchTree, node_id: str, tag: str = "") -> list[BaseMessage]:
    """What a run had done by the time ``node_id`` ended, as the conversation that did it: a tree search's
    path below the root; a plan run's work read from its events (:func:`plan_done`); any other run's path
    with each step's earlier tool calls (:func:`lineage`). ``tag`` as :func:`trajectory` takes it."""
    if tree.architecture in SEARCHES:
        return trajectory((tree.nodes[step] for step in tree.path_to(node_id)[1:]), tag)
    if tree.architecture == "plan":
        return plan_done(tree, node_id, tag)[0]
    return trajectory(lineage(tree, node_id), tag)


def message_steps(messages: Iterable[BaseMessage]) -> list[tuple[str, str]]:
    """A conversation as ``(label, text)`` steps (as :meth:`Fork.steps` gives them): each assistant message
    with its tool calls and what they returned, each user message as the user's."""
    messages = list(messages)
    results = {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)}
    steps: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            steps.append(("user", message.text))
        elif isinstance(message, AIMessage):
            parts = [cap_text(message.text, 300)] if message.text else []
            for call in message.tool_calls:
                parts.append(f"{call['name']}({json.dumps(call['args'], default=str)[:300]})")
                if results.get(call["id"] or ""):
                    parts.append("→ " + cap_text(results[call["id"] or ""], 600))
            label = message.tool_calls[0]["name"] if message.tool_calls else "thought"
            if parts:
                steps.append((label, " ".join(parts)))
    return steps


class PlanTimes:
    """When each node of a plan run was added, started (status active) and ended, by event seq."""

    def __init__(self, tree: SearchTree) -> None:
        self.added: dict[str, int] = {}
        self.started: dict[str, int] = {}
        self.ended: dict[str, int] = {}
        self.touched: dict[str, int] = {}
        for event in tree.events:
            if event.kind == "node_added" and event.node is not None:
                node = event.node
                self.added[node.id] = self.touched[node.id] = event.seq
                if node.status == "active":
                    self.started[node.id] = event.seq
            elif event.kind == "node_updated" and event.node_id is not None:
                node_id, status = event.node_id, event.changes.get("status")
                self.touched[node_id] = event.seq
                if status == "active":
                    self.started.setdefault(node_id, event.seq)
                elif status in ENDED and node_id in self.started:
                    self.ended.setdefault(node_id, event.seq)


def _actions(tree: SearchTree, node_id: str) -> list[TreeNode]:
    return [tree.nodes[child] for child in tree.children(node_id) if tree.nodes[child].action is not None]


def _cut(tree: SearchTree, times: PlanTimes, node_id: str) -> int:
    """The event seq by which the node's part of a plan run was done."""
    node = tree.nodes[node_id]
    if node.kind == "root":
        return 0
    if node.action is not None:
        return times.touched.get(node_id, 0)
    if node.kind == "step":
        if node_id not in times.started:
            return _cut(tree, times, node.parent) if node.parent is not None else 0
        if node_id in times.ended:
            return times.ended[node_id]
        return max([times.started[node_id], *(times.touched[a.id] for a in _actions(tree, node_id))])
    if node.kind in PHASES:
        return max([times.added[node_id], *(times.touched[a.id] for a in _actions(tree, node_id))])
    return times.added.get(node_id, 0)


def plan_done(
    tree: SearchTree, node_id: str, tag: str = ""
) -> tuple[list[BaseMessage], list[tuple[str, str, bool]]]:
    """What a plan run had done by the time ``node_id`` ended, read from its events
    (:mod:`ide.search.plan_fork` says how): the conversation that did it (each task's start, its tool calls
    and their results, its end), and the tasks that had ended as ``(task, result, ok)``."""
    times = PlanTimes(tree)
    cut = _cut(tree, times, node_id)
    done: list[tuple[int, TreeNode]] = []
    for node in tree.nodes.values():
        if node.kind == "step" and times.started.get(node.id, cut + 1) <= cut:
            done.append((times.started[node.id], node))
        elif node.kind in PHASES and 0 < times.added[node.id] <= cut:
            done.append((times.added[node.id], node))
    messages: list[BaseMessage] = []
    ended: list[tuple[str, str, bool]] = []
    for _when, node in sorted(done, key=lambda item: item[0]):
        actions = [a for a in _actions(tree, node.id) if times.added[a.id] <= cut]
        if node.kind != "step":
            messages += trajectory(actions, tag)
            if node.kind == "plan" and node.thought:
                messages.append(AIMessage(f"Plan:\n{node.thought}"))
            continue
        number = len(ended) + 1
        messages.append(AIMessage(f"Task {number}: {node.thought or node.label}"))
        messages += trajectory(actions, tag)
        if times.ended.get(node.id, cut + 1) <= cut:
            ok = node.status != "failed"
            result = node.reflection or node.label
            messages.append(AIMessage(f"Task {number} {'done' if ok else 'failed'}: {result}"))
            ended.append((first_line(node.thought or node.label, 300), result, ok))
    return messages, ended


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
