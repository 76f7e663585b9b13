"""The chat's mode box switches the session's agent architecture; a plan turn shows its plan and tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.tree.part import TreeDock
from tests.support.plan_script import two_task_script
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def test_choosing_plan_mode_runs_the_next_turn_as_plan_execute_replan(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "plan.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in two_task_script()))
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    box = window.part(ChatDock).panel.mode_box
    modes = [box.itemData(i) for i in range(box.count())]
    assert modes == ["react", "lats", "tot", "plan", "workflow", "auto"]
    assert box.isEnabled() and window.part(ChatDock).panel.current_mode() == "react"

    with qtbot.waitSignal(window.bridge.modeChanged, timeout=TURN_TIMEOUT_MS) as changed:
        box.setCurrentIndex(modes.index("plan"))
        box.activated.emit(modes.index("plan"))
    assert changed.args == ["plan"]
    assert window.bridge.mode == "plan"

    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Say Hi instead of Hello, README too")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    window.part(ChatDock).panel.flush()
    text = "\n".join(view.plain_text() for view in window.part(ChatDock).panel.views())
    assert "Change the greeting in pkg/greet.py to Hi" in text  # the plan view
    assert "greet now says Hi" in text
    assert window.part(ReviewDock).pane.files_model.rowCount() == 2
    runs = window.part(TreeDock).view.runs
    assert any(tree.architecture == "plan" and tree.finished for tree in runs.values())


def test_a_lats_run_in_the_window_shows_its_tree_and_any_branch_diff_read_only(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    from tests.support.lats_script import EDIT_WINS, LATS_ENV

    script = tmp_path / "lats.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in EDIT_WINS))
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "lats", **LATS_ENV}
    window = make_window(git_workspace, env=env)
    wait_ready(qtbot, window)
    assert window.part(ChatDock).panel.current_mode() == "lats"

    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Make greet say Hi")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view = window.part(TreeDock).view
    (tree,) = [t for t in view.runs.values() if t.architecture == "lats"]
    qtbot.waitUntil(lambda: tree.finished, timeout=TURN_TIMEOUT_MS)
    assert tree.best_path == ["n1", "n2", "n4"]
    pane = window.part(ReviewDock).pane
    assert pane.state.interactive and pane.files_model.rowCount() == 1  # the best branch, for review

    view.select_node("n3")  # the sibling that only read the file
    assert "read_file" in view.inspector.toPlainText()
    assert view.branch_button.isVisible() and view.branch_button.isEnabled()
    with qtbot.waitSignal(window.docks["tree"].branchDiffReceived, timeout=TURN_TIMEOUT_MS):
        view.branch_button.click()
    assert pane.state.branch is not None and not pane.state.interactive
    assert pane.files_model.rowCount() == 0  # that branch proposes nothing
    assert "read-only" in pane.branch_label.text()

    view.select_node("n2")
    with qtbot.waitSignal(window.docks["tree"].branchDiffReceived, timeout=TURN_TIMEOUT_MS):
        view.branch_button.click()
    assert pane.files_model.rowCount() == 1 and not pane.state.interactive
    pane.back_button.click()
    assert pane.state.branch is None and pane.state.interactive and pane.files_model.rowCount() == 1
