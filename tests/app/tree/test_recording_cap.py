"""`arbor --open` on a recording too big to show (issue 45, item 6): refused at once with the limit in
the window's banner — a 200,000-node file once took 20 s and 900 MB — while a real recording still opens."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

import ide.protocol.tree as tree_file
from ide.app.main import open_at_start
from ide.app.start.demo import SAMPLE_TREE
from ide.app.tree.part import TreeDock
from ide.protocol.tree import MAX_RECORDING_BYTES, MAX_RECORDING_NODES, TreeFileError, read_jsonl
from tests.support.window import WindowFactory

pytestmark = pytest.mark.window

SAMPLES = Path(__file__).resolve().parents[3] / "resources" / "samples"
TREE_AGENT = [sys.executable, str(Path(__file__).parents[2] / "support" / "tree_agent.py")]


def recording(path: Path, nodes: int, *, spaced: bool = False) -> Path:
    """A one-run recording of ``nodes`` nodes (a root and its children), written as Arbor writes one,
    or with a space after each colon as another program might."""
    colon = ": " if spaced else ":"
    root = (
        f'{{"run_id"{colon}"big","seq"{colon}1,"kind"{colon}"node_added","node"{colon}{{"id"{colon}"n0"}}}}\n'
    )
    children = (
        f'{{"run_id"{colon}"big","seq"{colon}{seq},"kind"{colon}"node_added",'
        f'"node"{colon}{{"id"{colon}"n{seq}","parent"{colon}"n0","depth"{colon}1}}}}\n'
        for seq in range(2, nodes + 1)
    )
    path.write_text(root + "".join(children))
    return path


def test_a_recording_of_too_many_nodes_is_refused_at_once_with_the_limit(tmp_path: Path) -> None:
    path = recording(tmp_path / "huge.arbor-tree.jsonl", MAX_RECORDING_NODES + 1)
    started = time.perf_counter()
    with pytest.raises(TreeFileError) as refused:
        read_jsonl(path)
    assert time.perf_counter() - started < 0.5  # nothing was parsed: reading them all takes about a second
    assert str(refused.value) == (
        f"{path}: this recording holds {MAX_RECORDING_NODES + 1:,} nodes; Arbor opens recordings of up to "
        f"{MAX_RECORDING_NODES:,} nodes"
    )


def test_a_recording_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "large.arbor-tree.jsonl"
    with path.open("wb") as out:
        out.truncate(MAX_RECORDING_BYTES + 2**20)  # sparse: nothing to read, as long as nobody does
    started = time.perf_counter()
    with pytest.raises(
        TreeFileError, match=r"this recording is 101 MB; Arbor opens recordings of up to 100 MB"
    ):
        read_jsonl(path)
    assert time.perf_counter() - started < 0.5


def test_a_recording_written_otherwise_is_stopped_at_the_first_node_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tree_file, "MAX_RECORDING_NODES", 50)
    assert len(read_jsonl(recording(tmp_path / "fits.arbor-tree.jsonl", 50, spaced=True))) == 50
    with pytest.raises(
        TreeFileError, match=r":51 .*|holds more than 50 nodes; Arbor opens recordings of up to 50"
    ):
        read_jsonl(recording(tmp_path / "over.arbor-tree.jsonl", 51, spaced=True))


def test_the_window_says_why_it_does_not_open_a_huge_recording_and_opens_a_real_one(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window = make_window(tmp_path, command=TREE_AGENT, start=False)
    huge = recording(tmp_path / "huge.arbor-tree.jsonl", MAX_RECORDING_NODES + 1)
    assert not open_at_start(window, huge)  # what `arbor --open FILE` does once the window is up
    assert window.banner.isVisible()
    assert (
        f"holds {MAX_RECORDING_NODES + 1:,} nodes; Arbor opens recordings of up to"
        in window.banner.title.text()
    )
    assert open_at_start(window, SAMPLES / SAMPLE_TREE)
    window.part(TreeDock).view.flush()
    assert window.part(TreeDock).view.shown is not None and len(window.part(TreeDock).view.shown.nodes) == 10
