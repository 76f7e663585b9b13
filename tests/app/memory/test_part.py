"""The Memory dock: what a turn taught the memory shows up with its provenance, reads, deletes and
exports; a note the agent stored is counted in the dock's title, filtered as unreviewed, and kept."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from ide.app.memory.part import MemoryDock
from ide.app.review.part import ReviewDock
from ide.protocol.memory import MEMORY_DELETE
from ide.protocol.workflow import WORKFLOWS_LIST
from tests.support.window import REVIEW_AGENT, TURN_TIMEOUT_MS, WindowFactory, review_agent_env, wait_ready

pytestmark = pytest.mark.window


def test_the_memory_dock_searches_reads_deletes_and_exports(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "react.jsonl"
    lines = [
        {"tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}]},
        {"content": "greet returns Hello, NAME! (pkg/greet.py:2)"},
    ]
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    panel = window.part(MemoryDock).panel
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("What does greet return?")

    with qtbot.waitSignal(window.docks["memory"].memoryReceived, timeout=TURN_TIMEOUT_MS):
        panel.query.setText("greet")
    titles = [panel.list.item(i).text() for i in range(panel.list.count())]
    learned = "[investigations] What does greet return?   · learned"
    assert learned in titles
    assert "investigations 1" in panel.counts.text() and "patterns 1" in panel.counts.text()
    panel.list.setCurrentRow(titles.index(learned))
    assert "greet returns Hello, NAME!" in panel.detail.toPlainText()
    assert f"Learned by Arbor from a finished run in session {window.bridge.session_id[:8]}" in (
        panel.detail.toPlainText()
    )
    assert panel.delete_button.isEnabled() and not panel.keep_button.isEnabled()

    target = tmp_path / "memory.json"
    with qtbot.waitSignal(window.docks["memory"].memoryExported, timeout=TURN_TIMEOUT_MS):
        window.docks["memory"].export(str(target))
    exported = json.loads(target.read_text())
    assert {entry["namespace"] for entry in exported} == {"investigations", "patterns"}
    assert {(e["author"], e["provenance"], e["session_id"]) for e in exported} == {
        ("arbor", "arbor", window.bridge.session_id)
    }

    with qtbot.waitSignal(window.docks["memory"].memoryReceived, timeout=TURN_TIMEOUT_MS):
        panel.delete_button.click()
    qtbot.waitUntil(lambda: panel.list.count() == len(titles) - 1, timeout=TURN_TIMEOUT_MS)
    assert "investigations 0" in panel.counts.text()


def test_an_agent_written_note_waits_in_the_dock_to_be_kept(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "store.jsonl"
    lines = [
        {"tool_calls": [{"name": "store_insight", "args": {"title": "tip", "content": "greet is in pkg"}}]},
        {"content": "Noted."},
    ]
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    panel = window.part(MemoryDock).panel
    # The turn stored a note: the dock's title (its tab next to the chat) says there is one to review.
    with qtbot.waitSignal(panel.unreviewedChanged, timeout=TURN_TIMEOUT_MS) as changed:
        window.send_prompt("remember where greet lives")
    assert changed.args == [1]
    assert window.part(MemoryDock).dock.windowTitle() == "Memory (1 to review)"
    assert panel.unreviewed_only.text() == "Unreviewed (1)" and "1 to review" in panel.counts.text()

    with qtbot.waitSignal(window.docks["memory"].memoryReceived, timeout=TURN_TIMEOUT_MS):
        panel.unreviewed_only.setChecked(True)
    titles = [panel.list.item(i).text() for i in range(panel.list.count())]
    assert titles == ["[insights] tip   · agent-written · unreviewed"]
    panel.list.setCurrentRow(0)
    detail = panel.detail.toPlainText()
    assert f"Written by the agent (store_insight) in session {window.bridge.session_id[:8]}" in detail
    assert "Unreviewed: it stays out of later prompts until you keep it." in detail
    assert panel.keep_button.isEnabled() and panel.delete_button.isEnabled()

    with qtbot.waitSignal(panel.unreviewedChanged, timeout=TURN_TIMEOUT_MS) as kept:
        panel.keep_button.click()
    assert kept.args == [0] and window.part(MemoryDock).dock.windowTitle() == "Memory"
    assert panel.unreviewed_only.text() == "Unreviewed"
    qtbot.waitUntil(lambda: panel.list.count() == 0, timeout=TURN_TIMEOUT_MS)

    with qtbot.waitSignal(window.docks["memory"].memoryReceived, timeout=TURN_TIMEOUT_MS):
        panel.unreviewed_only.setChecked(False)
    titles = [panel.list.item(i).text() for i in range(panel.list.count())]
    assert "[insights] tip   · agent-written · kept" in titles
    panel.list.setCurrentRow(titles.index("[insights] tip   · agent-written · kept"))
    assert "kept by you on " in panel.detail.toPlainText() and not panel.keep_button.isEnabled()


def test_the_panel_keeps_the_selected_entry_across_a_refresh(qtbot: Any) -> None:
    from ide.app.memory.part import MemoryPanel
    from ide.protocol.memory import MemoryEntry, MemoryList

    panel = MemoryPanel()
    qtbot.addWidget(panel)
    note = MemoryEntry(id=7, namespace="insights", title="tip", content="x", author="agent", reviewed=False)
    learned = MemoryEntry(id=3, namespace="investigations", title="run", content="y", session_id="abcdef0123")
    panel.set_entries(MemoryList(entries=[note, learned], unreviewed=1))
    panel.list.setCurrentRow(0)
    assert panel.keep_button.isEnabled() and "in an unrecorded session" in panel.detail.toPlainText()
    kept = note.model_copy(update={"reviewed": True, "kept_at": 1.0e9, "provenance": "user"})
    panel.set_entries(MemoryList(entries=[kept, learned], unreviewed=0))
    assert panel.list.currentItem().text() == "[insights] tip   · agent-written · kept"
    assert not panel.keep_button.isEnabled() and panel.delete_button.isEnabled()
    day = datetime.datetime.fromtimestamp(1.0e9).strftime("%Y-%m-%d")  # in the machine's time zone
    assert f"kept by you on {day}" in panel.detail.toPlainText()
    panel.set_entries(MemoryList(entries=[learned]))
    assert panel.list.currentItem() is None and panel.detail.toPlainText() == ""
    assert not panel.delete_button.isEnabled()


def test_a_failed_memory_or_workflow_request_leaves_the_review_alone(
    qtbot: Any,
    make_window: WindowFactory,
    git_workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    window = make_window(git_workspace, command=REVIEW_AGENT, env=review_agent_env(tmp_path / "log"))
    wait_ready(qtbot, window)
    review, memory = window.part(ReviewDock).client, window.docks["memory"]
    with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("edit 1")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    pane = window.part(ReviewDock).pane
    state = pane.files_model.index(0, 3).data()
    reverted: list[bool] = []
    failed: list[str] = []
    monkeypatch.setattr(pane, "revert", lambda: reverted.append(True))
    review.failed.connect(lambda method, _info: failed.append(method))
    # The fake agent serves only the review: advertised anyway, these requests are refused.
    window.bridge.agent_meta.extensions.extend([MEMORY_DELETE, WORKFLOWS_LIST])  # type: ignore[union-attr]

    memory.delete(7)
    assert memory.deleting == 7 and not memory.panel.delete_button.isEnabled()
    qtbot.waitUntil(lambda: memory.deleting is None, timeout=TURN_TIMEOUT_MS)
    assert window.banner.isVisible() and "refused" in window.banner.title.text()
    assert reverted == [] and failed == []

    window.banner.dismiss()
    with qtbot.waitSignal(window.bridge.errorRaised, timeout=TURN_TIMEOUT_MS):
        assert window.docks["workflows"].request()
    assert window.banner.isVisible()
    assert reverted == [] and failed == []
    assert pane.files_model.index(0, 3).data() == state
