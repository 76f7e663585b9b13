"""Drawing a search tree: which nodes to lay out, and a tidy-tree layout of them. No Qt here.

The tree itself is :class:`ide.protocol.tree.SearchTree`, the one replay shared with the backend.
:func:`tidy_layout` places a forest with Buchheim, Jünger and Leipert's O(n) version of Walker's
algorithm (Reingold–Tilford aesthetics: parents centred over children, isomorphic subtrees drawn alike,
subtrees packed as close as their contours allow). It is iterative, so a ReAct chain thousands of
steps deep does not hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ide.protocol.tree import SearchTree, ToolAction, TreeEvent, TreeNode


@dataclass
class Layout:
    """Positions in layout units: x (siblings one unit apart), depth (one per level)."""

    ids: list[str] = field(default_factory=list)
    x: list[float] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    """Index of each node's parent in ``ids``, -1 for a root."""

    def __len__(self) -> int:
        return len(self.ids)


def visible_ids(tree: SearchTree, *, hide_pruned: bool) -> tuple[list[str], dict[str, list[str]]]:
    """Roots and children lists to lay out: everything, or without pruned nodes and their subtrees."""
    nodes = tree.nodes
    children: dict[str, list[str]] = {node_id: [] for node_id in nodes}
    for node_id, node in nodes.items():  # insertion order: children keep the order they were added in
        if node.parent is not None and not (hide_pruned and node.status == "pruned"):
            children[node.parent].append(node_id)
    root = tree.root
    if root is None or (hide_pruned and nodes[root].status == "pruned"):
        return [], children
    return [root], children


def tidy_layout(roots: Sequence[str], children: dict[str, list[str]], gap: float = 1.0) -> Layout:
    """Buchheim–Walker tidy layout of the forest under ``roots`` (the roots become siblings under a
    virtual root). O(n) time, no recursion. Returns positions with the leftmost node at x = 0."""
    # Index the forest: node 0 is the virtual root.
    ids: list[str] = [""]
    kids: list[list[int]] = [[]]
    par: list[int] = [-1]
    number: list[int] = [0]
    stack: list[tuple[int, str]] = []
    for r in reversed(roots):
        stack.append((0, r))
    order_children: list[list[int]] = kids
    while stack:
        p, node_id = stack.pop()
        i = len(ids)
        ids.append(node_id)
        kids.append([])
        par.append(p)
        number.append(len(order_children[p]))
        order_children[p].append(i)
        for c in reversed(children.get(node_id, ())):
            stack.append((i, c))
    n = len(ids)
    prelim = [0.0] * n
    mod = [0.0] * n
    shift = [0.0] * n
    change = [0.0] * n
    thread = [-1] * n
    ancestor = list(range(n))

    def left_brother(v: int) -> int:
        k = number[v]
        return kids[par[v]][k - 1] if k > 0 else -1

    def next_left(v: int) -> int:
        return kids[v][0] if kids[v] else thread[v]

    def next_right(v: int) -> int:
        return kids[v][-1] if kids[v] else thread[v]

    def apportion(v: int, default_ancestor: int) -> int:
        w = left_brother(v)
        if w < 0:
            return default_ancestor
        vir = vor = v
        vil = w
        vol = kids[par[v]][0]
        sir = sor = mod[vir]
        sil = mod[vil]
        sol = mod[vol]
        while next_right(vil) >= 0 and next_left(vir) >= 0:
            vil = next_right(vil)
            vir = next_left(vir)
            vol = next_left(vol)
            vor = next_right(vor)
            ancestor[vor] = v
            s = (prelim[vil] + sil) - (prelim[vir] + sir) + gap
            if s > 0:
                a = ancestor[vil] if par[ancestor[vil]] == par[v] else default_ancestor
                subtrees = number[v] - number[a]
                change[v] -= s / subtrees
                shift[v] += s
                change[a] += s / subtrees
                prelim[v] += s
                mod[v] += s
                sir += s
                sor += s
            sil += mod[vil]
            sir += mod[vir]
            sol += mod[vol]
            sor += mod[vor]
        if next_right(vil) >= 0 and next_right(vor) < 0:
            thread[vor] = next_right(vil)
            mod[vor] += sil - sor
        else:
            if next_left(vir) >= 0 and next_left(vol) < 0:
                thread[vol] = next_left(vir)
                mod[vol] += sir - sol
            default_ancestor = v
        return default_ancestor

    # First walk, iteratively in the recursive algorithm's exact order: after each child's walk, the
    # child is apportioned against its left siblings before the next child is walked.
    defaults = [0] * n
    walk: list[list[int]] = [[0, 0]]  # [node, next child index]
    while walk:
        frame = walk[-1]
        v, k = frame
        ch = kids[v]
        if k < len(ch):
            if k == 0:
                defaults[v] = ch[0]
            frame[1] = k + 1
            walk.append([ch[k], 0])
            continue
        walk.pop()
        if ch:
            # execute shifts
            s = c = 0.0
            for w in reversed(ch):
                prelim[w] += s
                mod[w] += s
                c += change[w]
                s += shift[w] + c
            mid = (prelim[ch[0]] + prelim[ch[-1]]) / 2
            lb = left_brother(v) if v else -1
            if lb >= 0:
                prelim[v] = prelim[lb] + gap
                mod[v] = prelim[v] - mid
            else:
                prelim[v] = mid
        else:
            lb = left_brother(v) if v else -1
            prelim[v] = prelim[lb] + gap if lb >= 0 else 0.0
        if v:
            p = par[v]
            defaults[p] = apportion(v, defaults[p])

    # Second walk: absolute x = prelim + sum of ancestors' mods.
    x = [0.0] * n
    depth = [0] * n
    acc = [0.0] * n
    pre: list[int] = [0]
    while pre:
        v = pre.pop()
        x[v] = prelim[v] + acc[v]
        for w in kids[v]:
            acc[w] = acc[v] + mod[v]
            depth[w] = depth[v] + 1
            pre.append(w)
    if n == 1:
        return Layout()
    left = min(x[1:])
    return Layout(
        ids=ids[1:],
        x=[value - left for value in x[1:]],
        depth=[d - 1 for d in depth[1:]],
        parent=[p - 1 for p in par[1:]],
    )


def synthetic_events(
    nodes: int, *, run_id: str = "synthetic", branching: int = 5, seed: int = 7
) -> list[TreeEvent]:
    """A LATS-shaped run of ``nodes`` nodes for tests, benchmarks and demos: every node is added, most
    are evaluated (``node_updated`` with a reward and visits), some pruned, one best path at the end.
    Action nodes carry a change set id (``cs-<node id>``), as a branch that edited files would."""
    import random

    rng = random.Random(seed)
    kinds = ("thought", "action", "evaluation", "plan", "step", "synthesis")
    tools = ("read_file", "grep", "edit_file", "run_tests", "list_dir")
    events: list[TreeEvent] = []
    depth: dict[str, int] = {}
    frontier: list[str] = []

    def emit(**fields: Any) -> None:
        events.append(TreeEvent(run_id=run_id, seq=len(events) + 1, **fields))

    for index in range(nodes):
        node_id = f"n{index}"
        if index == 0:
            parent, kind = None, "root"
        else:
            # prefer recent nodes, so the tree grows deep as well as wide
            parent = frontier[max(0, len(frontier) - 1 - int(rng.expovariate(1 / (branching * 3))))]
            kind = rng.choice(kinds)
        action = (
            ToolAction(tool=rng.choice(tools), args={"path": f"src/m{index % 97}.py"})
            if kind == "action"
            else None
        )
        d = 0 if parent is None else depth[parent] + 1
        depth[node_id] = d
        node = TreeNode(
            id=node_id,
            parent=parent,
            depth=d,
            kind=kind,  # type: ignore[arg-type]
            label=f"{kind} {index}",
            thought=f"Consider option {index}",
            action=action,
            status="active",
            model="scripted:bench",
            role="expansion",
            changeset_id=f"cs-{node_id}" if kind == "action" else None,
        )
        emit(kind="node_added", node=node, architecture="lats" if index == 0 else None)
        frontier.append(node_id)
        if index and rng.random() < 0.9:
            raw = round(rng.uniform(0, 10), 1)
            status = "pruned" if raw < 1.5 else ("failed" if raw < 2.0 else "evaluated")
            emit(
                kind="node_updated",
                node_id=node_id,
                changes={
                    "reward_raw": raw,
                    "reward": raw / 10,
                    "visits": rng.randint(1, 20),
                    "value": raw / 10,
                    "status": status,
                    "reflection": f"score {raw}",
                },
            )
    parents = {e.node.id: e.node.parent for e in events if e.node is not None}
    path: list[str] = []
    tip: str | None = f"n{nodes - 1}"
    while tip is not None:
        path.append(tip)
        tip = parents.get(tip)
    emit(kind="best_path", path=list(reversed(path)))
    emit(kind="finished", figures={"nodes": nodes})
    return events
