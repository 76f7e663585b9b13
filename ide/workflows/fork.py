"""Continuing a workflow from a node of an earlier run (``Continue from here``).

A workflow run keeps beside its tree (``TreeRecorder.notes["workflow"]``) its name, its execution plan and
the stage each stage node ran. A node belongs to the stage of its nearest stage node on its path (stage
nodes are chained, each under the one before; a stage's agents and their tool calls hang under its node);
the nodes before the first stage (the retrieval, the plan) belong to the entry stage. The continuation runs
the workflow again from that stage, on the node's change set, with the stages before it as done (their
summaries from their nodes) and the node's trajectory and the user's hint in every stage agent's brief —
after the earlier runs' steps and hints when the run was itself continued from another
(:meth:`~ide.search.steer.Fork.lead`).

When the stage cannot be known (the run was not a workflow, its notes were not kept, or the workflow is
gone), the workflow starts as a new run with the trajectory and hint as context, and the run says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from ide.protocol.tree import SearchTree, TreeNode
from ide.search.events import first_line
from ide.search.steer import DEFAULT_HINT, HINT_PREFIX, message_steps
from ide.workflows.plan import ExecutionPlan

NOTES_KEY = "workflow"
"""Key of a workflow run's notes in ``TreeRecorder.notes``."""
TRAJECTORY_CAP = 6000
"""Characters of the trajectory a stage agent's brief carries (the latest steps kept)."""
OBSERVATION_CHARS = 400
"""Characters of each tool call's observation in that trajectory."""


@dataclass(frozen=True)
class StageStart:
    """Where a continued workflow starts: its workflow and plan, the stage, what the stages before said."""

    workflow: str
    plan: ExecutionPlan
    stage: str
    summaries: dict[str, str]


def notes_of(workflow: str, plan: ExecutionPlan) -> dict[str, Any]:
    """The notes a new workflow run starts with (stage nodes are added as they open)."""
    return {"name": workflow, "plan": plan.model_dump(mode="json"), "stages": {}}


def stage_start(tree: SearchTree, node_id: str, notes: Mapping[str, Any]) -> StageStart | None:
    """The stage a continuation from ``node_id`` starts at, or None when it cannot be known."""
    kept = notes.get(NOTES_KEY)
    if tree.architecture != "workflow" or not isinstance(kept, Mapping) or node_id not in tree.nodes:
        return None
    try:
        plan = ExecutionPlan.model_validate(kept.get("plan"))
    except ValueError:
        return None
    stages = kept.get("stages") if isinstance(kept.get("stages"), Mapping) else {}
    path = tree.path_to(node_id)
    on_path = [stages[step] for step in path if step in stages and stages[step] in plan.routing_table]
    stage = on_path[-1] if on_path else plan.entry
    summaries: dict[str, str] = {}
    for step in path:
        ran = stages.get(step)
        if ran is None or ran == stage or ran not in plan.routing_table:
            continue
        node = tree.nodes[step]
        if node.status != "failed":
            summaries[ran] = node.thought or node.label
    return StageStart(str(kept.get("name") or plan.workflow), plan, stage, summaries)


def trajectory_text(nodes: Iterable[TreeNode], cap: int = TRAJECTORY_CAP) -> str:
    """The path's steps as lines a brief can carry: what each node thought, each tool call with its
    arguments and the start of what it returned (the most recent within ``cap`` characters)."""
    lines: list[str] = []
    for node in nodes:
        if node.kind == "root":
            continue
        said = first_line(node.thought or "", 300) if node.thought else ""
        if node.action is not None:
            args = json.dumps(node.action.args, ensure_ascii=False, sort_keys=True)
            observed = (node.observation or "").strip().replace("\n", " ")[:OBSERVATION_CHARS]
            lines.append(f"- called {node.action.tool}({args}) → {observed}")
        else:
            lines.append(f"- {node.kind} {node.label}" + (f": {said}" if said and said != node.label else ""))
    text = "\n".join(lines)
    return text if len(text) <= cap else "(earlier steps left out)\n" + text[-cap:]


def guidance_text(path: Iterable[TreeNode], hint: str, lead: Iterable[BaseMessage] = ()) -> str:
    """What a continued workflow's stage agents are told besides their brief: the trajectory and the hint;
    first, when the run was itself continued from another, what led to its root (``lead``:
    :meth:`~ide.search.steer.Fork.lead`, the earlier runs' steps and the user's guidance given then)."""
    before = "\n".join(f"- {label}: {text}" for label, text in message_steps(lead))
    if len(before) > TRAJECTORY_CAP:
        before = "(earlier steps left out)\n" + before[-TRAJECTORY_CAP:]
    parts = [f"Earlier runs of this task, each continued from the one before:\n{before}"] if before else []
    steps = trajectory_text(path)
    if steps:
        parts.append("An earlier run of this task got this far:\n" + steps)
    parts.append(f"{HINT_PREFIX}\n{hint or DEFAULT_HINT}")
    return "\n\n".join(parts)
