"""Continue from here on the recorded sample (issue 48): opened from the start page, its nodes offer it, and
it runs in a demo window of its own — a throwaway copy of the sample's project, this window's model, the
recording opened there and forked from with its events — never in the user's workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ide.app.chat.part import ChatDock
from ide.app.start.demo import SAMPLE_TREE, holds_sample_project, sample_dir
from ide.app.start.part import StartPart
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.protocol.tree import read_jsonl
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, close_window

pytestmark = pytest.mark.window

SAMPLES = sample_dir()
assert SAMPLES is not None, "the tests run from the source checkout, which holds resources/samples"
HINT = "mean() divides by n now; say what is left."


def test_the_sample_continues_from_a_node_in_a_demo_window_with_this_windows_model(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "continue.jsonl"
    script.write_text(
        json.dumps({"content": "Nothing is left: check_stats.py passes on this branch."}) + "\n"
    )
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"}, start=False)
    assert not holds_sample_project(SAMPLES, git_workspace)
    start = window.part(StartPart)
    assert start.open_sample()
    view = window.part(TreeDock).view
    run_id = read_jsonl(SAMPLES / SAMPLE_TREE)[0].run_id
    assert view.current == f"{SAMPLE_TREE} · {run_id}"
    view.flush()
    view.select_node("n5")  # the right edit, in the middle of the search
    action = view.node_actions.actions["continue"]
    assert action.isEnabled() and "demo window" in action.toolTip(), "no backend needed in this window"
    action.trigger()
    dialog = window.part(TreeDock).steering.dialog
    assert dialog is not None and dialog.isVisible() and "demo window" in dialog.note.text()
    dialog.hint_box.setPlainText(HINT)
    dialog.mode_box.setCurrentIndex(dialog.mode_box.findData("react"))
    assert dialog.mode() == "react", "Arbor's modes are offered while this window's backend is not running"
    with qtbot.waitSignal(start.demoOpened, timeout=TURN_TIMEOUT_MS) as opened:
        dialog.continue_button.click()
    demo: MainWindow = opened.args[0]
    [run] = start.demos
    assert run.continuation is not None and run.continuation.node_id == "n5"
    assert run.continuation.env == {"ARBOR_MODEL": f"scripted:{script}"}
    try:
        assert demo.workspace.is_relative_to(run.root) and holds_sample_project(SAMPLES, demo.workspace)
        trees = demo.part(TreeDock).view

        def continued() -> bool:
            return any(t.forked_from is not None and t.finished for t in trees.runs.values())

        qtbot.waitUntil(continued, timeout=TURN_TIMEOUT_MS)
        (key,) = (k for k, t in trees.runs.items() if t.forked_from is not None)
        origin = trees.runs[key].forked_from
        assert origin is not None and (origin.run_id, origin.node_id) == (run_id, "n5")
        assert f"{SAMPLE_TREE} · {run_id}" in trees.runs, "the recording is shown there, the run under it"
        chat = demo.part(ChatDock).panel
        chat.flush()
        assert HINT in chat.transcript() and "check_stats.py passes" in chat.transcript()
        assert not (git_workspace / "stats.py").exists(), "nothing of the sample reached this workspace"
    finally:
        close_window(qtbot, demo)
    qtbot.waitUntil(lambda: not run.root.exists(), timeout=10_000)
