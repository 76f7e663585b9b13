"""The recorded LATS sample opens in the search-tree dock and its replay slider steps through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ide.app.tree_view import SearchTreeView
from ide.protocol.tree import SearchTree, read_jsonl
from tests.test_samples import RECORDED

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
