"""Continuing a plan / execute / replan run from a node of an earlier run (``Continue from here``).

A plan run does its work in time, not down one branch: the planner's reads hang under the plan node, each
task's tool calls under its step, the replanner's under its review, and the steps are queued under the plan
before any of them runs. So what was done by the time a node ended is read from the run's events, not from
the node's path:

- an action ended when its result came; a task's step when it was marked done or failed (or, if it never
  ended, at its last tool call); a plan or review node at its own last tool call; a queued step that never
  started stands for the plan it was queued by;
- done by then: the plan and review phases started before, the steps started before (each with the tool
  calls it had made by then, and its result when it had ended).

The planner of the continuation is given the task, then that much as the conversation that made it (each
task's start, its tool calls and their results, its end), then the user's hint; the steps that ended are
its progress so far (the replanner reads them). For a run of another architecture the node's path is the
trajectory (:meth:`~ide.search.steer.Fork.guidance`).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ide.protocol.tree import SearchTree, TreeNode
from ide.search.events import first_line
from ide.search.plan_prompts import PastStep
from ide.search.steer import Fork, lineage, trajectory

SEARCHES = ("lats", "tot")
"""Tree searches: a node's siblings are alternatives, its path is its trajectory."""
PHASES = ("plan", "evaluation")
ENDED = ("evaluated", "failed", "solution", "terminated_early")


class _Times:
    """When each node was added, started (status active) and ended, by event seq."""

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


def _cut(tree: SearchTree, times: _Times, node_id: str) -> int:
    """The event seq by which the node's part of the run was done."""
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


def continuation(fork: Fork) -> tuple[list[BaseMessage], list[PastStep]]:
    """The messages a continuation's model gets after the task — what was done by the node, then the hint —
    and, of a plan run, the tasks done so far. A plan run's is read from its events (the module docstring);
    a tree search's is the node's path; any other run's the path with each step's earlier tool calls
    (:func:`~ide.search.steer.lineage`)."""
    tree = fork.tree
    if tree.architecture in SEARCHES:
        return fork.guidance(), []
    if tree.architecture != "plan":
        return [*trajectory(lineage(tree, fork.node_id)), HumanMessage(fork.hint_text)], []
    times = _Times(tree)
    cut = _cut(tree, times, fork.node_id)
    done: list[tuple[int, TreeNode]] = []
    for node in tree.nodes.values():
        if node.kind == "step" and times.started.get(node.id, cut + 1) <= cut:
            done.append((times.started[node.id], node))
        elif node.kind in PHASES and 0 < times.added[node.id] <= cut:
            done.append((times.added[node.id], node))
    messages: list[BaseMessage] = []
    past: list[PastStep] = []
    for _when, node in sorted(done, key=lambda item: item[0]):
        actions = [a for a in _actions(tree, node.id) if times.added[a.id] <= cut]
        if node.kind != "step":
            messages += trajectory(actions)
            if node.kind == "plan" and node.thought:
                messages.append(AIMessage(f"Plan:\n{node.thought}"))
            continue
        task = first_line(node.thought or node.label, 300)
        number = len(past) + 1
        messages.append(AIMessage(f"Task {number}: {node.thought or node.label}"))
        messages += trajectory(actions)
        if times.ended.get(node.id, cut + 1) <= cut:
            ok = node.status != "failed"
            result = node.reflection or node.label
            messages.append(AIMessage(f"Task {number} {'done' if ok else 'failed'}: {result}"))
            past.append(PastStep(task=task, result=result, ok=ok))
    return [*messages, HumanMessage(fork.hint_text)], past
