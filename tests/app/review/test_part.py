"""The Review dock over a real ACP connection: a fake agent serving ``_arbor/review/*``, and one without."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from ide.app.review.part import ReviewDock
from ide.app.window import MainWindow
from ide.protocol.review import HistoryParams
from tests.support.window import REVIEW_AGENT, TURN_TIMEOUT_MS, WindowFactory, review_agent_env, wait_ready

pytestmark = pytest.mark.window


def requests(log: Path, method: str) -> list[dict[str, Any]]:
    """The params of every ``method`` request the fake agent received."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [line["params"] for line in lines if line["method"] == method]


def review_turn(qtbot: Any, window: MainWindow, files: int) -> None:
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt(f"edit {files}")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)


def test_keyboard_review_and_apply_go_over_the_wire(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    log = tmp_path / "agent.jsonl"
    env = review_agent_env(log, REVIEW_AGENT_CONFLICT="src/mod_002.py")
    window = make_window(git_workspace, command=REVIEW_AGENT, env=env)
    wait_ready(qtbot, window)
    pane = window.part(ReviewDock).pane
    assert pane.state.interactive and not pane.note.isVisible()
    review_turn(qtbot, window, 50)
    assert window.part(ReviewDock).dock.isVisible()
    assert pane.files_model.rowCount() == 50
    files = pane.state.changeset.files  # type: ignore[union-attr]

    none, shift = Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "a", none)  # accept hunk 1 of file 0
    qtbot.keyClick(pane.unified, "r", none)  # reject hunk 2
    qtbot.keyClick(pane.file_list, "A", shift)  # accept all of file 0, move to file 1
    qtbot.keyClick(pane.unified, "R", shift)  # reject file 1, move to file 2
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClick(pane.unified, "A", shift)  # accept file 2 (the one that will conflict)
    qtbot.waitUntil(lambda: len(requests(log, "arbor/review/decide")) == 5, timeout=TURN_TIMEOUT_MS)
    decided = requests(log, "arbor/review/decide")
    assert [(d["decision"], d["hunk_ids"], d["paths"]) for d in decided] == [
        ("accepted", [files[0].hunks[0].id], []),
        ("rejected", [files[0].hunks[1].id], []),
        ("accepted", [], ["src/mod_000.py"]),
        ("rejected", [], ["src/mod_001.py"]),
        ("accepted", [], ["src/mod_002.py"]),
    ]
    # What the pane shows now is the backend's answer, not only its own guess.
    qtbot.waitUntil(lambda: pane.files_model.index(2, 3).data() == "accepted", timeout=TURN_TIMEOUT_MS)
    assert [pane.files_model.index(row, 3).data() for row in range(4)] == [
        "accepted",
        "rejected",
        "accepted",
        "pending",
    ]

    with qtbot.waitSignal(window.part(ReviewDock).client.applied, timeout=TURN_TIMEOUT_MS) as applied:
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    result = applied.args[0]
    assert result.batch.paths == ["src/mod_000.py"]
    assert requests(log, "arbor/review/apply") == [{"session_id": window.bridge.session_id, "message": None}]
    assert "Applied 1 file as batch b1" in pane.result_label.text()
    assert "1 file changed on disk meanwhile and was not written" in pane.result_label.text()
    assert pane.conflict_list.isVisible() and pane.conflict_list.count() == 1
    assert pane.conflict_list.item(0).text() == "src/mod_002.py — changed on disk"
    pane.conflict_list.setCurrentRow(0)
    assert pane.diff_pages.currentWidget() is pane.merged_view
    assert "<<<<<<< yours" in pane.merged_view.toPlainText()
    # The remaining change set: the conflicted file and 47 untouched ones; file 1 was rejected entirely.
    paths = [file.path for file in pane.state.changeset.files]  # type: ignore[union-attr]
    assert paths[0] == "src/mod_002.py" and len(paths) == 48
    assert pane.files_model.index(0, 3).data() == "conflict"


def test_history_and_roll_back(qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path):
    log = tmp_path / "agent.jsonl"
    window = make_window(git_workspace, command=REVIEW_AGENT, env=review_agent_env(log))
    wait_ready(qtbot, window)
    pane = window.part(ReviewDock).pane
    review_turn(qtbot, window, 3)
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        pane.accept_all_button.click()
    with qtbot.waitSignal(window.part(ReviewDock).client.historyReceived, timeout=TURN_TIMEOUT_MS):
        pane.apply_button.click()  # a successful apply refreshes the history
    assert pane.history_tree.topLevelItemCount() == 1
    assert pane.history_tree.topLevelItem(0).text(4) == "applied"

    pane.tabs.setCurrentIndex(1)
    assert pane.rollback_button.isEnabled()
    # Roll back asks first, naming what it restores; Cancel sends nothing.
    qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)
    confirm = pane.rollback_confirm
    assert confirm is not None and confirm.isVisible()
    assert "Roll back batch b1? It restores 3 files" in confirm.text()
    batch = pane.state.batches.batches[0]
    assert all(path in confirm.text() for path in batch.paths)
    confirm.button(QMessageBox.StandardButton.Cancel).click()
    assert requests(log, "arbor/review/rollback") == []

    qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)
    [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
    with qtbot.waitSignal(window.part(ReviewDock).client.rolledBack, timeout=TURN_TIMEOUT_MS):
        roll_back.click()
    assert requests(log, "arbor/review/rollback") == [{"cwd": str(git_workspace.resolve()), "batch_id": "b1"}]
    assert "restored 3 files." in pane.history_label.text()
    item = pane.history_tree.topLevelItem
    qtbot.waitUntil(lambda: item(0).text(4) == "rolled back", timeout=TURN_TIMEOUT_MS)
    assert not pane.rollback_button.isEnabled()


def test_a_refused_review_request_shows_a_banner_and_reverts(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    window = make_window(git_workspace, command=REVIEW_AGENT, env=review_agent_env(tmp_path / "log"))
    wait_ready(qtbot, window)
    pane = window.part(ReviewDock).pane
    review_turn(qtbot, window, 1)
    pane.state.changeset.session_id = "not-a-session"  # type: ignore[union-attr]
    refused = window.part(ReviewDock).client.failed
    decide = "arbor/review/decide"
    with qtbot.waitSignal(
        refused, timeout=TURN_TIMEOUT_MS, check_params_cb=lambda method, _info: method == decide
    ):
        pane.decide_hunk("accepted")
        assert pane.files_model.index(0, 3).data() == "partly"  # optimistic
    assert window.banner.isVisible() and "unknown session not-a-session" in window.banner.title.text()
    assert "Traceback" not in window.banner.title.text() + window.banner.details.text()
    assert pane.files_model.index(0, 3).data() == "pending"

    window.banner.dismiss()
    window.bridge.agent_meta.extensions.remove("arbor/review/decide")  # type: ignore[union-attr]
    pane.decide_hunk("accepted")
    assert window.banner.isVisible() and "could not be sent" in window.banner.title.text()
    assert pane.files_model.index(0, 3).data() == "pending"


def test_a_change_set_answer_overtaken_by_a_turn_does_not_blank_the_review(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    """The session's startup change-set query is answered (empty) only after the turn's change set
    arrived: the older answer must not replace it (it did, and emptied the review, under load)."""
    env = review_agent_env(tmp_path / "log", REVIEW_AGENT_LATE_CHANGESET="1")
    window = make_window(git_workspace, command=REVIEW_AGENT, env=env)
    wait_ready(qtbot, window)
    pane, review = window.part(ReviewDock).pane, window.part(ReviewDock).client
    review_turn(qtbot, window, 2)
    # The late answer was written before the history answer; once that is in, the late one was handled.
    with qtbot.waitSignal(review.historyReceived, timeout=TURN_TIMEOUT_MS):
        pane.historyRequested.emit(HistoryParams(cwd=str(git_workspace)))
    assert pane.files_model.rowCount() == 2
    assert pane.files_model.index(0, 0).data() == "src/mod_000.py"


def test_standard_acp_diffs_are_shown_read_only(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
):
    log = tmp_path / "agent.jsonl"
    window = make_window(git_workspace, command=[*REVIEW_AGENT, "--standard"], env=review_agent_env(log))
    wait_ready(qtbot, window)
    pane = window.part(ReviewDock).pane
    # Each diff is shown as it streams in (changesShown once per file): the turn's end says all three came.
    with qtbot.waitSignals([pane.changesShown, window.bridge.turnFinished], timeout=TURN_TIMEOUT_MS):
        window.send_prompt("edit 3")
    assert not pane.state.interactive and pane.note.isVisible()
    assert window.part(ReviewDock).dock.isVisible()
    assert [pane.files_model.index(row, 0).data() for row in range(3)] == [
        "src/mod_000.py",
        "src/mod_001.py",
        "src/mod_002.py",
    ]  # relative to the workspace, though ACP sends absolute paths
    assert pane.files_model.index(0, 2).data() == "+8 −8"
    assert "+def f0(x, y=0):" in pane.unified.toPlainText()
    for button in (pane.accept_button, pane.accept_all_button, pane.apply_button):
        assert not button.isEnabled()
    qtbot.keyClick(pane.unified, "a")
    assert pane.files_model.index(0, 3).data() == "pending"

    # Comments still reach the agent, as a refinement turn.
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    qtbot.keyClicks(pane.comment_edit, "use keyword-only y")
    qtbot.keyClick(pane.comment_edit, Qt.Key.Key_Return)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.feedback_button, Qt.MouseButton.LeftButton)
    prompts = [params["text"] for params in requests(log, "session/prompt")]
    assert prompts[-1] == "Feedback on your changes:\n- src/mod_000.py:@@ -1,5 +1,5 @@: use keyword-only y"
    assert requests(log, "arbor/review/decide") == []  # nothing sent that the agent does not serve
