"""The Workspace dock lists a file an Apply made, and forgets it after the Roll back, without File → Refresh
Files (it listed the workspace only at the start)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.part import ReviewDock
from ide.app.workspace.part import WorkspaceDock
from tests.support.git import git
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def test_a_file_apply_makes_is_listed_and_gone_after_the_roll_back(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "turn.jsonl"
    create = {"name": "create_file", "args": {"path": "made_by_agent.py", "content": "MADE = True\n"}}
    script.write_text(
        json.dumps({"tool_calls": [create]}) + "\n" + json.dumps({"content": "Made it."}) + "\n"
    )
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    panel = window.part(WorkspaceDock).panel
    qtbot.waitUntil(lambda: bool(panel.files), timeout=TURN_TIMEOUT_MS)
    assert "made_by_agent.py" not in panel.files
    review = window.part(ReviewDock).client
    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("make a module")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    pane = window.part(ReviewDock).pane
    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.accept_all_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert (git_workspace / "made_by_agent.py").exists()
    qtbot.waitUntil(lambda: "made_by_agent.py" in panel.files, timeout=TURN_TIMEOUT_MS)

    qtbot.waitUntil(lambda: pane.history_tree.topLevelItemCount() == 1, timeout=TURN_TIMEOUT_MS)
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)  # asks first
    [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
    with qtbot.waitSignal(review.rolledBack, timeout=TURN_TIMEOUT_MS):
        roll_back.click()
    assert (
        not (git_workspace / "made_by_agent.py").exists()
        and git(git_workspace, "status", "--porcelain") == ""
    )
    qtbot.waitUntil(lambda: "made_by_agent.py" not in panel.files, timeout=TURN_TIMEOUT_MS)
