"""The recorded LATS sample opens in the search-tree dock, readable at the dock's size, and its replay
slider steps through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ide.app.tree.view import SearchTreeView
from ide.protocol.tree import SearchTree, read_jsonl
from tests.support.samples import RECORDED
from tests.support.tree_view import assert_captions_readable, dock_sized

pytestmark = pytest.mark.window


def test_the_sample_opens_shows_its_best_path_and_replays(qtbot: Any, qsettings_dir: Path) -> None:
    view = SearchTreeView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    events = read_jsonl(RECORDED)
    expected = SearchTree(events)

    with qtbot.waitSignal(view.runFinished, timeout=2000) as finished:
        key = view.open_file(RECORDED)
    assert finished.args == [key]  # the window freezes a finished run's objects for the collector
    view.flush()
    tree = view.runs[key]
    assert tree == expected
    assert len(view.canvas.geometry) == len(expected.nodes)
    assert view.shown.best_path == expected.best_path

    last = len(events)
    assert view.slider.maximum() == last
    for k in (1, last // 2, last - 1):
        with qtbot.waitSignal(view.relaid, timeout=2000):
            view.slider.setValue(k)
        assert set(view.shown.nodes) == set(SearchTree(events[:k]).nodes)
    with qtbot.waitSignal(view.relaid, timeout=2000):
        view.slider.setValue(last)
    assert view.step is None and set(view.shown.nodes) == set(expected.nodes)

    view.select_node(expected.best_path[-1])
    assert "Tests passed" in view.inspector.toPlainText()


def test_every_node_of_the_sample_is_readable_at_the_default_fit(qtbot: Any, qsettings_dir: Path) -> None:
    view = dock_sized(qtbot)
    key = view.open_file(RECORDED)
    view.flush()
    tree = view.runs[key]
    assert not view.canvas.geometry.horizontal, "the sample's tree is wider than deep: top-down"
    assert_captions_readable(view, list(tree.nodes), all_in_view=True)
    geometry = view.canvas.geometry
    scored = [n for n in tree.nodes.values() if n.reward_raw is not None]
    assert scored and all(geometry.score[geometry.index[n.id]] == f"{n.reward_raw:g}" for n in scored)
    assert view.overview.isHidden(), "the whole tree is in view: no map over it"
    view.select_node(tree.best_path[-1])
    assert "UCT (c = 1.414)" in view.inspector.toPlainText(), "LATS chose its nodes by UCT"
