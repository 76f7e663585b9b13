"""Which results of a search tree something checked, and which are only the model's own word. No Qt here.

The wire has no "verified" flag: a node's ``solution`` status may come from a test run or from the
evaluator model's own score. What was checked is read from what the tree records, and each verdict names
its evidence:

- a workflow's ``evaluation`` node labelled "tests passed" with status ``solution`` (its test run), and the
  stage it belongs to;
- an answer whose reflection says "Tests passed (…)" (LATS ran the tests on its branch while searching);
- a run an eval report checked (:class:`RunCheck`): its answer is verified when the task's check passed;
  when the check failed, every ``solution`` nothing else checked was a self-score the check refuted.

The best path drawn before a run finishes is worked out from the nodes shown (:func:`shown_best_path`), so
a replay step never points at a 2/10 answer beside a 6/10 node: verified nodes first, then claimed
solutions, then the score. A finished run's is the path it recorded: the one it answered with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ide.protocol.tree import SearchTree, TreeNode

Trust = Literal["verified", "self", "refuted"]
"""``verified``: a check passed; ``self``: a ``solution`` by the model's own judgement, nothing checked;
``refuted``: a ``solution`` the run's check failed."""

TESTS_PASSED_LABEL = re.compile(r"^\s*tests passed\b", re.IGNORECASE)
TESTS_PASSED_NOTE = re.compile(r"^\s*Tests passed\b(?:\s*\((?P<how>[^)]*)\))?", re.IGNORECASE | re.MULTILINE)
UNRANKED = frozenset({"pruned", "failed"})
"""Statuses the best path never ends at."""


@dataclass(frozen=True)
class RunCheck:
    """An outside check of a whole run (``arbor eval``'s task check), given to the runs opened with it."""

    passed: bool | None
    """True: the check passed; False: it failed; None: it did not run (over budget, timeout, error)."""
    note: str
    """What the check said, in words: "the eval check passed", "the eval check failed: …"."""
    answer: str | None = None
    """The node the run answered with (its final best path's end), which a passed check verifies."""


def _tests_node(node: TreeNode) -> bool:
    return (
        node.kind == "evaluation" and node.status == "solution" and bool(TESTS_PASSED_LABEL.match(node.label))
    )


def evidence(tree: SearchTree, node: TreeNode, check: RunCheck | None = None) -> str | None:
    """Why ``node`` counts as verified, in words (None: nothing checked it)."""
    if _tests_node(node):
        return (
            f"its test run passed ({node.reflection.strip()})" if node.reflection else "its test run passed"
        )
    if node.status == "solution":
        for child_id in tree.children(node.id):
            child = tree.nodes[child_id]
            if _tests_node(child):
                return f"the tests passed (evaluation node {child.id})"
    reflection = node.reflection or ""
    found = TESTS_PASSED_NOTE.search(reflection) if "ests passed" in reflection else None
    if found is not None and node.status != "failed":
        how = found.group("how")
        return f"the tests ran on its branch while searching and passed{f' ({how})' if how else ''}"
    if check is not None and check.passed and node.id == check.answer:
        return check.note
    return None


def node_trust(tree: SearchTree, node: TreeNode, check: RunCheck | None = None) -> tuple[Trust | None, str]:
    """How far ``node``'s result can be trusted, and why: (trust, evidence or what is missing)."""
    why = evidence(tree, node, check)
    if why is not None:
        return "verified", why
    if node.status != "solution":
        return None, ""
    if check is not None and check.passed is False:
        return "refuted", f"{check.note}; its 'solution' status was the model's own score"
    scored = f", the model's own score {node.reward_raw:g}/10" if node.reward_raw is not None else ""
    return "self", f"claimed by the run{scored}; nothing ran to check it"


def trust_map(tree: SearchTree, check: RunCheck | None = None) -> dict[str, tuple[Trust, str]]:
    """The trust of every node that has one (verified, self-scored or refuted), by id."""
    found: dict[str, tuple[Trust, str]] = {}
    answer = check.answer if check is not None else None
    for node in tree.nodes.values():
        if node.status != "solution" and node.id != answer and "ests passed" not in (node.reflection or ""):
            continue  # nothing to trust or doubt: the cheap test first, for a large live tree
        trust, why = node_trust(tree, node, check)
        if trust is not None:
            found[node.id] = (trust, why)
    return found


def _score(node: TreeNode) -> float | None:
    if node.reward_raw is not None:
        return node.reward_raw
    return node.reward * 10 if node.reward is not None else None


def shown_best_path(tree: SearchTree, trusts: dict[str, tuple[Trust, str]] | None = None) -> list[str]:
    """The best path as drawn. A finished run's is the one it recorded (the path it answered with). Before
    that (a replay step, a run still going) it is worked out from the nodes ``tree`` holds now: to the
    verified node, else a claimed solution, else the highest score (the recorded path's end wins ties;
    with no node scored or claimed, the recorded path)."""
    if tree.finished and tree.best_path:
        return list(tree.best_path)
    trusts = trust_map(tree) if trusts is None else trusts
    recorded = tree.best_path[-1] if tree.best_path else None
    best_key: tuple[bool, bool, float, bool] | None = None
    best: str | None = None
    for node in tree.nodes.values():
        score = node.reward_raw if node.reward_raw is not None else _score(node)
        found = trusts.get(node.id)
        if (score is None and found is None) or node.status in UNRANKED or node.parent is None:
            continue
        trust = found[0] if found is not None else None
        key = (trust == "verified", trust == "self", score or 0.0, node.id == recorded)
        if best_key is None or key > best_key:
            best_key, best = key, node.id
    return tree.path_to(best) if best is not None else list(tree.best_path)


class Marks:
    """The trusts and the best path of the tree a view draws, worked out once per state of it."""

    def __init__(self) -> None:
        self._tree: SearchTree | None = None
        self._key: tuple[int, RunCheck | None] | None = None
        self.trusts: dict[str, tuple[Trust, str]] = {}
        self.best_path: list[str] = []

    def update(self, tree: SearchTree, check: RunCheck | None) -> Marks:
        """Bring the marks up to ``tree`` as it is now (checked by ``check``); returns itself."""
        key = (tree.seq, check)
        if tree is not self._tree or key != self._key:
            self._tree, self._key = tree, key
            self.trusts = trust_map(tree, check)
            self.best_path = shown_best_path(tree, self.trusts)
        return self

    def trust(self, node_id: str) -> Trust | None:
        """The trust of node ``node_id`` (None: no claim, nothing checked)."""
        found = self.trusts.get(node_id)
        return found[0] if found is not None else None
