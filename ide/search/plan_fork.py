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
trajectory (:meth:`~ide.search.steer.Fork.guidance`). The reading itself is :func:`ide.search.steer.plan_done`
(a continuation of a continuation reads its earlier plan runs the same way).

When the run was itself continued from another, what led to its root (:meth:`~ide.search.steer.Fork.lead`:
the earlier runs' work and hints) comes first.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage

from ide.search.plan_prompts import PastStep
from ide.search.steer import SEARCHES, Fork, lineage, plan_done, trajectory


def continuation(fork: Fork) -> tuple[list[BaseMessage], list[PastStep]]:
    """The messages a continuation's model gets after the task — what led to the run's root when it was
    itself a continuation, what was done by the node, then the hint — and, of a plan run, the tasks done so
    far. A plan run's is read from its events (the module docstring); a tree search's is the node's path; any
    other run's the path with each step's earlier tool calls (:func:`~ide.search.steer.lineage`)."""
    tree = fork.tree
    if tree.architecture in SEARCHES:
        return fork.guidance(), []
    if tree.architecture != "plan":
        return [*fork.lead(), *trajectory(lineage(tree, fork.node_id)), HumanMessage(fork.hint_text)], []
    messages, ended = plan_done(tree, fork.node_id)
    past = [PastStep(task=task, result=result, ok=ok) for task, result, ok in ended]
    return [*fork.lead(), *messages, HumanMessage(fork.hint_text)], past
