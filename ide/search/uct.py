"""UCT arithmetic for tree search: scoring and selecting children, backpropagating rewards.

Bookkeeping, as LATS (seed 000) keeps it: one backpropagation from node ``n`` adds one visit to every
node from the root down to ``n`` and folds the reward into each one's ``value``, the running mean of
every reward propagated through it. So for every node

    visits = direct visits (backpropagations that started at the node itself) + sum of children's visits
    value  = mean of the rewards of all those visits
"""

from __future__ import annotations

import math
from collections.abc import Collection

from ide.protocol.tree import NodeStatus, SearchTree, TreeError, TreeEvent
from ide.protocol.uct import EXPLORATION, uct_terms
from ide.search.tree import TreeRecorder

__all__ = [
    "REWARD_SCALE",
    "UNSELECTABLE",
    "backpropagate",
    "normalise_reward",
    "select_uct",
    "uct_score",
]

UNSELECTABLE: tuple[NodeStatus, ...] = ("pruned", "failed")
"""Statuses of children :func:`select_uct` passes over."""

REWARD_SCALE = 10.0
"""Evaluators score 0–10; the tree keeps rewards as 0–1."""


def uct_score(value: float, visits: int, parent_visits: int, c: float = EXPLORATION) -> float:
    """``value + c·√(ln parent_visits / visits)``; an unvisited node scores infinity, so it is tried first."""
    if visits < 0 or parent_visits < 0:
        raise ValueError(f"visits cannot be negative (visits={visits}, parent_visits={parent_visits})")
    if visits > 0 and parent_visits < visits:
        raise ValueError(f"a child cannot have more visits ({visits}) than its parent ({parent_visits})")
    return uct_terms(value, visits, parent_visits, c)[2]


def select_uct(
    tree: SearchTree, node_id: str, c: float = EXPLORATION, skip: Collection[str] = UNSELECTABLE
) -> str:
    """The id of the child of ``node_id`` with the highest UCT score.

    Children whose status is in ``skip`` are passed over. Ties go to the child added first (the lower
    node number), so a replayed search selects the same way.
    """
    parent_visits = tree.nodes[node_id].visits if node_id in tree.nodes else 0
    candidates = [child for child in tree.children(node_id) if tree.nodes[child].status not in skip]
    if not candidates:
        raise TreeError(f"node {node_id!r} has no child to select (all pruned or failed, or none yet)")

    def score(child: str) -> float:
        node = tree.nodes[child]
        return uct_score(node.value, node.visits, parent_visits, c)

    return max(candidates, key=score)  # max keeps the first of equal scores


def backpropagate(target: TreeRecorder | SearchTree, leaf_id: str, reward: float) -> list[str]:
    """Add one visit with ``reward`` to every node from the root down to ``leaf_id``; return that path.

    Through a :class:`TreeRecorder` the changes are recorded (and emitted) as ``node_updated`` events
    under its lock, so concurrent backpropagations never lose a visit. A bare :class:`SearchTree` gets the
    same events applied directly (simulations, benchmarks).
    """
    if not math.isfinite(reward):
        raise ValueError(f"reward must be a finite number, got {reward}")
    if isinstance(target, TreeRecorder):
        with target.lock:
            path = target.tree.path_to(leaf_id)
            for node_id in path:
                target.update(node_id, **_visited(target.tree, node_id, reward))
        return path
    path = target.path_to(leaf_id)
    for node_id in path:
        target.apply(
            TreeEvent(
                run_id=target.run_id or "",
                seq=target.seq + 1,
                kind="node_updated",
                node_id=node_id,
                changes=_visited(target, node_id, reward),
            )
        )
    return path


def normalise_reward(raw: float) -> float:
    """An evaluator's 0–10 score as a 0–1 reward, clamped (a model may answer 11 or -1)."""
    if math.isnan(raw):
        raise ValueError("the reward score is not a number (NaN)")
    return min(1.0, max(0.0, raw / REWARD_SCALE))


def _visited(tree: SearchTree, node_id: str, reward: float) -> dict[str, float | int]:
    node = tree.nodes[node_id]
    visits = node.visits + 1
    return {"visits": visits, "value": node.value + (reward - node.value) / visits}
