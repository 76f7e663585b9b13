"""UCT selection and backpropagation: the arithmetic LATS steers by, checked by hand and by property."""

from __future__ import annotations

import math
import threading
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ide.protocol.tree import SearchTree, TreeError, TreeEvent
from ide.search.tree import TreeRecorder
from ide.search.uct import backpropagate, normalise_reward, select_uct, uct_score


def test_uct_score_by_hand() -> None:
    # 0.5 + 1.414 * sqrt(ln 10 / 2) = 0.5 + 1.414 * sqrt(1.151293) = 0.5 + 1.414 * 1.072983
    assert uct_score(0.5, 2, 10) == pytest.approx(2.017198, abs=1e-6)
    # 0.9 + 1.414 * sqrt(ln 10 / 8) = 0.9 + 1.414 * 0.536492 = 0.9 + 0.758599
    assert uct_score(0.9, 8, 10) == pytest.approx(1.658599, abs=1e-6)
    # c = 2: 0.25 + 2 * sqrt(ln 4 / 4) = 0.25 + 2 * 0.588705
    assert uct_score(0.25, 4, 4, c=2) == pytest.approx(1.427410, abs=1e-6)
    # a parent seen once: ln 1 = 0, only the value counts
    assert uct_score(0.7, 1, 1) == 0.7
    assert uct_score(0.0, 0, 5) == math.inf
    assert uct_score(0.0, 0, 0) == math.inf


@pytest.mark.parametrize(("visits", "parent_visits"), [(-1, 3), (2, -1), (4, 3)])
def test_uct_score_refuses_impossible_counts(visits: int, parent_visits: int) -> None:
    with pytest.raises(ValueError, match="visits"):
        uct_score(0.5, visits, parent_visits)


def fan(*children: tuple[float, int, str], parent_visits: int = 10) -> tuple[TreeRecorder, str]:
    recorder = TreeRecorder(architecture="lats")
    root = recorder.add(None, kind="root", label="q", visits=parent_visits)
    for value, visits, status in children:
        recorder.add(root, kind="thought", label="c", value=value, visits=visits, status=status)
    return recorder, root


def test_select_uct_trades_value_for_exploration() -> None:
    recorder, root = fan((0.9, 8, "evaluated"), (0.3, 2, "evaluated"))
    # 1.658599 vs 0.3 + 1.517198 = 1.817198: the little-tried child wins
    assert select_uct(recorder.tree, root) == "n3"
    # without exploration the better value wins
    assert select_uct(recorder.tree, root, c=0) == "n2"


def test_select_uct_tries_unvisited_children_first() -> None:
    recorder, root = fan((0.99, 9, "evaluated"), (0.0, 0, "generated"))
    assert select_uct(recorder.tree, root) == "n3"


def test_select_uct_breaks_ties_by_the_order_children_were_added() -> None:
    ties = [(0.5, 3, "evaluated")] * 11
    recorder, root = fan(*ties, parent_visits=40)
    assert select_uct(recorder.tree, root) == "n2"  # not "n10" or "n12", which sort first as text
    recorder, root = fan((0.0, 0, "generated"), (0.0, 0, "generated"))
    assert select_uct(recorder.tree, root) == "n2"


def test_select_uct_passes_over_pruned_and_failed_children() -> None:
    recorder, root = fan((0.0, 0, "pruned"), (0.0, 0, "failed"), (0.1, 5, "evaluated"))
    assert select_uct(recorder.tree, root) == "n4"
    assert select_uct(recorder.tree, root, skip=()) == "n2"
    recorder, root = fan((0.0, 0, "pruned"))
    with pytest.raises(TreeError, match="no child to select"):
        select_uct(recorder.tree, root)
    with pytest.raises(TreeError, match="no child to select"):
        select_uct(recorder.tree, "n2")


@pytest.mark.parametrize(
    ("raw", "reward"), [(0, 0.0), (7.0, 0.7), (10, 1.0), (12.5, 1.0), (-3, 0.0), (3.3, 0.33)]
)
def test_normalise_reward(raw: float, reward: float) -> None:
    assert normalise_reward(raw) == pytest.approx(reward)


def test_normalise_reward_refuses_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        normalise_reward(math.nan)


def test_backpropagate_by_hand() -> None:
    emitted: list[TreeEvent] = []
    recorder = TreeRecorder(architecture="lats", emit=emitted.append)
    root = recorder.add(None, kind="root", label="q")
    a = recorder.add(root, kind="thought", label="a")
    b = recorder.add(a, kind="action", label="b")
    sibling = recorder.add(root, kind="thought", label="s")

    assert backpropagate(recorder, b, 1.0) == [root, a, b]
    backpropagate(recorder, a, 0.0)
    backpropagate(recorder, b, 0.5)
    backpropagate(recorder, sibling, 0.2)

    nodes = recorder.tree.nodes
    assert (nodes[root].visits, nodes[root].value) == (4, pytest.approx((1.0 + 0.0 + 0.5 + 0.2) / 4))
    assert (nodes[a].visits, nodes[a].value) == (3, pytest.approx(0.5))
    assert (nodes[b].visits, nodes[b].value) == (2, pytest.approx(0.75))
    assert (nodes[sibling].visits, nodes[sibling].value) == (1, pytest.approx(0.2))
    assert emitted[-1].kind == "node_updated" and emitted[-1].node_id == sibling
    assert emitted[-1].changes["visits"] == 1
    assert SearchTree(emitted) == recorder.tree


def test_backpropagate_on_a_bare_tree_matches_the_recorder() -> None:
    recorder = TreeRecorder(architecture="lats")
    root = recorder.add(None, kind="root", label="q")
    leaf = recorder.add(root, kind="thought", label="a")
    bare = SearchTree(recorder.tree.events)
    for reward in (0.2, 0.9, 0.4):
        backpropagate(recorder, leaf, reward)
        backpropagate(bare, leaf, reward)
    for node_id in (root, leaf):
        assert bare.nodes[node_id].visits == recorder.tree.nodes[node_id].visits == 3
        assert bare.nodes[node_id].value == pytest.approx(recorder.tree.nodes[node_id].value)


def test_backpropagate_refuses_non_finite_rewards() -> None:
    recorder = TreeRecorder(architecture="lats")
    root = recorder.add(None, kind="root", label="q")
    with pytest.raises(ValueError, match="finite"):
        backpropagate(recorder, root, math.inf)
    assert recorder.tree.nodes[root].visits == 0


@pytest.mark.usefixtures("eager_thread_switching")
def test_concurrent_backpropagations_lose_no_visit() -> None:
    recorder = TreeRecorder(architecture="lats")
    root = recorder.add(None, kind="root", label="q")
    leaves = [recorder.add(root, kind="thought", label=str(i)) for i in range(6)]
    start = threading.Barrier(len(leaves))

    def rollouts(leaf: str) -> None:
        start.wait()
        for _ in range(100):
            backpropagate(recorder, leaf, 1.0 if leaf == leaves[0] else 0.0)

    workers = [threading.Thread(target=rollouts, args=(leaf,)) for leaf in leaves]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert recorder.tree.nodes[root].visits == 600
    assert recorder.tree.nodes[root].value == pytest.approx(100 / 600)
    assert all(recorder.tree.nodes[leaf].visits == 100 for leaf in leaves)


@st.composite
def searches(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, float]]]:
    """A random tree (parent index of each node after the root) and backpropagations (node, reward)."""
    size = draw(st.integers(1, 25))
    parents = [draw(st.integers(0, i)) for i in range(size - 1)]
    backprops = draw(
        st.lists(st.tuples(st.integers(0, size - 1), st.floats(0, 1, allow_nan=False)), max_size=40)
    )
    return parents, backprops


@settings(max_examples=150, deadline=None)
@given(searches())
def test_backprop_invariants_hold_on_random_trees(search: tuple[list[int], list[tuple[int, float]]]) -> None:
    parents, backprops = search
    recorder = TreeRecorder(architecture="lats")
    ids = [recorder.add(None, kind="root", label="r")]
    for parent in parents:
        ids.append(recorder.add(ids[parent], kind="thought", label="t"))

    direct: dict[str, int] = defaultdict(int)
    through: dict[str, list[float]] = defaultdict(list)  # every reward that passed each node
    for index, reward in backprops:
        leaf = ids[index]
        direct[leaf] += 1
        for node_id in backpropagate(recorder, leaf, reward):
            through[node_id].append(reward)

    tree = recorder.tree
    for node_id, node in tree.nodes.items():
        children = tree.children(node_id)
        assert node.visits == direct[node_id] + sum(tree.nodes[c].visits for c in children)
        assert node.visits == len(through[node_id])
        expected = math.fsum(through[node_id]) / node.visits if node.visits else 0.0
        assert node.value == pytest.approx(expected, abs=1e-9)
        assert 0.0 <= node.value <= 1.0 + 1e-12
        if node.parent is not None:
            assert node.visits <= tree.nodes[node.parent].visits
    assert SearchTree(tree.events) == tree
