"""The Review dock with a change set sent as a summary: the first screen shows at once, another file's
hunks come when it is selected or stepped into ("Loading…" meanwhile), and decisions on them apply exactly
those hunks (a scripted agent, Arbor's backend, a real git repository)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.pane import LOADING
from ide.app.review.part import ReviewDock
from ide.protocol.review import FIRST_SCREEN_HUNKS
from tests.support.git import git
from tests.support.review_changes import commit_modules, value_edits_script
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

FILES = 30


@pytest.fixture
def modules(git_workspace: Path) -> Path:
    return commit_modules(git_workspace, FILES)


def test_the_first_screen_shows_at_once_and_other_files_hunks_come_when_shown(
    qtbot: Any, make_window: WindowFactory, modules: Path, tmp_path: Path
) -> None:
    script = value_edits_script(tmp_path / "edits.jsonl", FILES, "Done.")
    window = make_window(modules, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    pane, review = window.part(ReviewDock).pane, window.part(ReviewDock).client
    asked: list[list[str]] = []
    pane.hunksRequested.connect(lambda params: asked.append(params.paths))

    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Add a hundred to every VALUE")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    files = pane.state.changeset.files  # type: ignore[union-attr]
    # The first screen came with the change set: shown without asking for anything.
    assert [file.summarised for file in files] == [False] * FIRST_SCREEN_HUNKS + [True] * (FILES - 20)
    assert pane.diff_pages.currentWidget() is pane.unified
    assert "+VALUE = 100" in pane.unified.toPlainText()
    assert asked == []
    # The file list and the title count every file and hunk, loaded or not.
    assert pane.files_model.rowCount() == FILES
    assert pane.files_model.index(25, 2).data() == "+1 −1"
    assert pane.summary.text() == f"{FILES} files · {FILES} hunks · 0 accepted · 0 rejected · {FILES} pending"

    # Selecting a file that came as a summary shows "Loading…" until its hunks come.
    with qtbot.waitSignal(review.hunksReceived, timeout=TURN_TIMEOUT_MS):
        pane.select_file(25)
        assert pane.diff_pages.currentWidget() is pane.message and pane.message.text() == LOADING
        assert not pane.accept_button.isEnabled()
    assert asked == [["src/mod_25.py"]]
    assert pane.diff_pages.currentWidget() is pane.unified
    assert "+VALUE = 125" in pane.unified.toPlainText() and pane.accept_button.isEnabled()

    # j from the first screen's last file steps into the next one, which loads.
    pane.select_file(19, -1)
    with qtbot.waitSignal(review.hunksReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "j")
    assert (pane.state.current_file, pane.state.current_hunk) == (20, 0)
    assert "+VALUE = 120" in pane.unified.toPlainText()

    # Decisions on the hunks loaded later: the backend's answers (summaries) keep them loaded.
    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "a")  # accept file 20's hunk
    pane.select_file(25)
    assert "+VALUE = 125" in pane.unified.toPlainText()
    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "A", Qt.KeyboardModifier.ShiftModifier)  # accept file 25
    qtbot.waitUntil(lambda: pane.files_model.index(25, 3).data() == "accepted", timeout=TURN_TIMEOUT_MS)
    # Each decision moved on to the next file (21, then 26), which asked for its hunks; nothing twice.
    assert asked == [["src/mod_25.py"], ["src/mod_20.py"], ["src/mod_21.py"], ["src/mod_26.py"]]
    assert pane.apply_button.text() == "Apply 2 hunks in 2 files and commit"

    with qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS) as applied:
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    accepted = ["src/mod_20.py", "src/mod_25.py"]
    assert sorted(applied.args[0].batch.paths) == accepted
    for n in range(FILES):
        expected = n + 100 if n in (20, 25) else n
        assert (modules / "src" / f"mod_{n:02d}.py").read_text().startswith(f"VALUE = {expected}\n")
    assert sorted(git(modules, "show", "--name-only", "--format=", "HEAD").split()) == accepted
    qtbot.waitUntil(lambda: pane.files_model.rowCount() == FILES - 2, timeout=TURN_TIMEOUT_MS)
