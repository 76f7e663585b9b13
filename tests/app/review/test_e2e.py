"""A scripted agent edits 50 files, reviewed by keyboard, applied as one commit, then rolled back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.part import ReviewDock
from tests.support.git import git
from tests.support.review_changes import commit_modules, value_edits_script
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

FILES = 50


@pytest.fixture
def fifty_files(git_workspace: Path) -> Path:
    return commit_modules(git_workspace, FILES)


def test_fifty_file_change_set_reviewed_by_keyboard_then_applied_as_one_commit(
    qtbot: Any, make_window: WindowFactory, fifty_files: Path, tmp_path: Path
) -> None:
    script = value_edits_script(tmp_path / "edits.jsonl", FILES, "Scaled them.")
    window = make_window(fifty_files, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    head = git(fifty_files, "rev-parse", "HEAD").strip()

    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Add a hundred to every VALUE")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    pane = window.part(ReviewDock).pane
    assert pane.state.interactive
    assert pane.files_model.rowCount() == FILES
    assert (fifty_files / "src" / "mod_00.py").read_text().startswith("VALUE = 0\n"), "nothing written yet"

    shift = Qt.KeyboardModifier.ShiftModifier
    for _ in range(3):  # accept files 0, 1, 2
        with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
            qtbot.keyClick(pane.unified, "A", shift)
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "R", shift)  # reject file 3
    qtbot.waitUntil(lambda: pane.files_model.index(3, 3).data() == "rejected", timeout=TURN_TIMEOUT_MS)

    with (
        qtbot.waitSignal(window.part(ReviewDock).client.applied, timeout=TURN_TIMEOUT_MS) as applied,
        qtbot.waitSignal(window.part(ReviewDock).client.historyReceived, timeout=TURN_TIMEOUT_MS),
    ):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    result = applied.args[0]
    assert result.conflicts == []
    accepted = ["src/mod_00.py", "src/mod_01.py", "src/mod_02.py"]
    assert sorted(result.batch.paths) == accepted

    for n in range(FILES):
        expected = n + 100 if n < 3 else n
        assert (fifty_files / "src" / f"mod_{n:02d}.py").read_text().startswith(f"VALUE = {expected}\n")
    assert git(fifty_files, "rev-parse", "HEAD~1").strip() == head
    assert sorted(git(fifty_files, "show", "--name-only", "--format=", "HEAD").split()) == accepted
    # the still-pending files stay in review; the rejected one is gone from it
    qtbot.waitUntil(lambda: pane.files_model.rowCount() == FILES - 4, timeout=TURN_TIMEOUT_MS)

    # Roll back from the history: the three files are as before, in a commit of their own
    assert pane.history_tree.topLevelItemCount() == 1
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)  # asks first
    [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
    with qtbot.waitSignal(window.part(ReviewDock).client.rolledBack, timeout=TURN_TIMEOUT_MS) as rolled:
        roll_back.click()
    assert rolled.args[0].refused == []
    for n in range(3):
        assert (fifty_files / "src" / f"mod_{n:02d}.py").read_text().startswith(f"VALUE = {n}\n")
    assert git(fifty_files, "rev-parse", "HEAD~2").strip() == head
    assert git(fifty_files, "status", "--porcelain") == ""
