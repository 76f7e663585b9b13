"""The window drives an ACP agent that is not Arbor (tests/interop/foreign_agent.mjs, on the official
TypeScript SDK's AgentSideConnection) in a shadow of the workspace and reviews its edits with Arbor's own
backend: its fs write and its shell-like write land in the Review dock and not on disk, Apply commits them,
Roll back restores; a rejected hunk is reverted in the shadow before the next turn; a read outside is
refused with a clear error; the tool calls form a tree; closing the permission dialog rejects."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide import sandbox
from ide.app.chat.part import ChatDock
from ide.app.foreign.part import ForeignAgent
from ide.app.review.part import ReviewDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.client.agentproc import command_name, resolve_agent
from tests.support.git import HELLO, git, hello_repo
from tests.support.window import (  # noqa: F401
    ECHO_AGENT,
    TURN_TIMEOUT_MS,
    WindowFactory,
    make_window,
    qloop,
    qsettings_dir,
    session_qloop,
    wait_ready,
)

ORIGINAL = HELLO
EDITED = ORIGINAL + 'print("edited by the foreign agent")\n'
REVIEW_START_TIMEOUT_MS = 60_000
"""The first write starts Arbor's own backend (LangGraph and friends) for the review."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "outside.txt").write_text("not yours\n")
    return hello_repo(tmp_path)


def foreign_window(factory: WindowFactory, node_peers: Path, workspace: Path) -> MainWindow:
    # What `arbor --agent "node foreign_agent.mjs"` resolves to.
    agent = resolve_agent(f"node {shlex.quote(str(node_peers / 'foreign_agent.mjs'))}", {})
    assert agent.command[0] == "node" and agent.name == "foreign_agent" and agent.works_in_shadow
    return factory(workspace, agent=agent)


def chat_text(window: MainWindow) -> str:
    window.part(ChatDock).panel.flush()
    return "\n".join(view.plain_text() for view in window.part(ChatDock).panel.views())


def stop_review_backend(qtbot: Any, window: MainWindow) -> None:
    review = window.part(ForeignAgent).review  # type: ignore[attr-defined]
    task = asyncio.ensure_future(review.aclose())
    qtbot.waitUntil(task.done, timeout=15_000)


def test_a_foreign_agents_edit_is_reviewed_applied_and_rolled_back(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    qtbot: Any,
) -> None:
    window = foreign_window(make_window, node_peers, workspace)
    try:
        wait_ready(qtbot, window)
        assert window.bridge.agent_meta is None and window.bridge.agent_name == "Foreign agent"
        # Its edits are reviewed here (from its shadow), so the pane never shows its plain ACP diffs as
        # "does not support Arbor review … accept or reject them in the agent itself".
        assert (
            window.part(ReviewDock).pane.state.interactive
            and not window.part(ReviewDock).pane.note.isVisible()
        )
        head = git(workspace, "rev-parse", "HEAD").strip()
        review = window.part(ReviewDock).client

        views: list[Any] = []
        review.changesetReceived.connect(views.append)
        window.send_prompt("edit hello.py")
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
        # Captured after each tool call (the read changed nothing) and at the turn's end.
        qtbot.waitUntil(lambda: bool(views) and bool(views[-1].files), timeout=REVIEW_START_TIMEOUT_MS)
        changeset = views[-1]
        assert changeset.session_id == window.part(ForeignAgent).review.session_id != window.bridge.session_id
        assert [file.path for file in changeset.files] == ["hello.py"]
        pane = window.part(ReviewDock).pane
        assert pane.state.interactive and pane.files_model.rowCount() == 1
        # Reviewed here, so never "does not support Arbor review … accept or reject them in the agent".
        assert not pane.note.isVisible() and pane.state.standard_changeset().files == []
        assert (workspace / "hello.py").read_text() == ORIGINAL, "nothing on disk before Apply"

        text = chat_text(window)
        assert "fs offered: read=true write=true" in text
        run = next(tree for tree in window.part(TreeDock).view.runs.values() if "tool:read-2" in tree.nodes)
        qtbot.waitUntil(lambda: run.finished, timeout=TURN_TIMEOUT_MS)  # after the turn's capture
        assert run.figures == {"stop_reason": "end_turn", "tool_calls": 3}
        read, write, outside = (run.nodes[f"tool:{name}"] for name in ("read-1", "write-1", "read-2"))
        assert (read.label, read.status) == ("Read hello.py", "evaluated")
        assert read.observation == '{"content": "print(\\"hello\\")\\n"}'
        assert write.status == "evaluated" and write.action is not None and write.action.tool == "edit"
        assert outside.status == "failed"
        assert "fs/read_text_file" in (outside.observation or "")
        assert "is outside the workspace" in (outside.observation or "")
        assert "not yours" not in (outside.observation or "")
        assert [run.nodes[n].status for n in run.children("plan")] == ["evaluated"] * 3

        with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
            pane.decide_file("accepted")
        with (
            qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS) as applied,
            qtbot.waitSignal(review.historyReceived, timeout=TURN_TIMEOUT_MS),
        ):
            qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
        result = applied.args[0]
        assert result.conflicts == [] and result.batch.paths == ["hello.py"]
        assert (workspace / "hello.py").read_text() == EDITED
        assert git(workspace, "rev-parse", "HEAD~1").strip() == head
        assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == ["hello.py"]
        message = git(workspace, "log", "-1", "--format=%B")  # the prompt and the agent's name, no argv
        assert message.startswith("edit hello.py\n") and "Made by foreign_agent in a shadow" in message
        assert "node" not in message and ".mjs" not in message

        assert pane.history_tree.topLevelItemCount() == 1
        pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
        qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)  # asks first
        [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
        with qtbot.waitSignal(review.rolledBack, timeout=TURN_TIMEOUT_MS) as rolled:
            roll_back.click()
        assert rolled.args[0].refused == [] and rolled.args[0].restored == ["hello.py"]
        assert (workspace / "hello.py").read_text() == ORIGINAL
        assert git(workspace, "status", "--porcelain") == ""
    finally:
        stop_review_backend(qtbot, window)


def test_closing_the_permission_dialog_rejects_the_foreign_agents_edit(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    qtbot: Any,
) -> None:
    window = foreign_window(make_window, node_peers, workspace)
    try:
        wait_ready(qtbot, window)
        dialog = window.permission_dialog
        window.send_prompt("ask before you edit")
        qtbot.waitUntil(dialog.isVisible, timeout=TURN_TIMEOUT_MS)
        assert dialog.title.text() == "Edit hello.py"
        assert '+print("edited by the foreign agent")' in dialog.details.toPlainText()
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=REVIEW_START_TIMEOUT_MS)
        text = chat_text(window)
        assert 'permission: {"optionId":"reject","outcome":"selected"}' in text
        assert (
            window.part(ForeignAgent).review.session_id is not None
        )  # its reads went through the review backend
        assert (workspace / "hello.py").read_text() == ORIGINAL
        # The refused edit's proposed diff is not shown once the pane caught up (it was, 50 ms later).
        qtbot.waitUntil(lambda: not window.part(ReviewDock).pane.refresh_pending, timeout=TURN_TIMEOUT_MS)
        assert window.part(ReviewDock).pane.files_model.rowCount() == 0
    finally:
        stop_review_backend(qtbot, window)


def test_the_agent_menu_switches_to_a_configured_agent(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    qtbot: Any,
    user_config: Any,
) -> None:
    script = str(node_peers / "foreign_agent.mjs")
    user_config(f'[agents.foreign]\ncommand = "node"\nargs = [{json.dumps(script)}]\n')
    window = make_window(workspace, command=ECHO_AGENT)
    try:
        wait_ready(qtbot, window)
        picker = window.docks["agents"]
        names = [action.text() for action in picker.menu.actions()]
        echo = command_name(ECHO_AGENT)
        assert echo == "echo_agent" and names == ["Arbor", "foreign", echo]
        assert picker.actions[echo].isChecked() and window.bridge.agent_name == "echo"
        echo_session = window.bridge.session_id
        assert picker.actions["foreign"].toolTip() == f"node {shlex.quote(script)}"

        with qtbot.waitSignal(window.bridge.sessionReady, timeout=TURN_TIMEOUT_MS) as ready:
            picker.actions["foreign"].trigger()
        assert ready.args == [window.bridge.session_id, False] and window.bridge.session_id != echo_session
        assert window.bridge.agent_name == "Foreign agent" and picker.actions["foreign"].isChecked()
        assert window.bridge.choice.command == ["node", script]
        assert not picker.switch("foreign"), "already the current agent"
    finally:
        stop_review_backend(qtbot, window)


def test_a_foreign_agent_in_a_shadow_has_its_shell_writes_reviewed_and_sees_what_was_rejected(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    qtbot: Any,
) -> None:
    window = foreign_window(make_window, node_peers, workspace)
    try:
        wait_ready(qtbot, window)
        backend = window.part(ForeignAgent).review  # type: ignore[attr-defined]
        shadow = Path(backend.shadow)
        assert window.bridge.agent_dir == shadow and workspace not in shadow.parents and shadow != workspace
        assert "works in a shadow of the workspace" in chat_text(window)
        views: list[Any] = []
        backend.changesetReceived.connect(views.append)
        pane = window.part(ReviewDock).pane

        def held() -> list[str]:
            return sorted(f.path for f in views[-1].files) if views else []

        window.send_prompt("edit hello.py, then run the shell")
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
        qtbot.waitUntil(lambda: held() == ["hello.py", "made_by_shell.py"], timeout=TURN_TIMEOUT_MS)
        # Written in the shadow: nothing in the workspace before Apply.
        assert (shadow / "made_by_shell.py").read_text() == "print(1)\n"
        assert not (workspace / "made_by_shell.py").exists()
        assert (workspace / "hello.py").read_text() == ORIGINAL
        # The shell's file is put on its tool call (and on any that ran while that capture was made).
        run = next(tree for tree in window.part(TreeDock).view.runs.values() if "tool:shell-1" in tree.nodes)
        qtbot.waitUntil(
            lambda: "made_by_shell.py (added)" in (run.nodes["tool:shell-1"].reflection or ""),
            timeout=TURN_TIMEOUT_MS,
        )
        # The read is never blamed alone; it shares the file only when it was reported while the shell's
        # capture ran (the agent does not wait for it), and then the note says it was one of the two.
        read_note = run.nodes["tool:read-1"].reflection or ""
        if "made_by_shell.py" in read_note:
            assert (
                "by one of the tool calls that ran meanwhile" in read_note
                and "Read ../outside.txt" in read_note
            )
            assert "made_by_shell.py" in read_note.split("meanwhile:", 1)[1]  # the shell call named beside it
        qtbot.waitUntil(lambda: run.finished, timeout=TURN_TIMEOUT_MS)  # the turn's last capture is in
        qtbot.waitUntil(lambda: pane.files_model.rowCount() == 2, timeout=TURN_TIMEOUT_MS)

        # Reject hello.py's edit, accept the shell's file, apply: one commit holding that file alone.
        review = window.part(ReviewDock).client
        paths = [f.path for f in pane.state.changeset.files]
        pane.select_file(paths.index("hello.py"))
        with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
            pane.decide_file("rejected")
        pane.select_file(paths.index("made_by_shell.py"))
        with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
            pane.decide_file("accepted")
        with qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS) as applied:
            qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
        assert applied.args[0].conflicts == [] and applied.args[0].batch.paths == ["made_by_shell.py"]
        assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == ["made_by_shell.py"]
        assert (workspace / "hello.py").read_text() == ORIGINAL

        # The next turn starts from what the user decided: its read of hello.py sees the edit reverted.
        window.send_prompt("edit hello.py again")
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
        second = [tree for tree in window.part(TreeDock).view.runs.values() if "tool:read-1" in tree.nodes][
            -1
        ]
        assert second is not run
        assert second.nodes["tool:read-1"].observation == '{"content": "print(\\"hello\\")\\n"}'
        assert "Written outside review" not in chat_text(window)
    finally:
        stop_review_backend(qtbot, window)
    assert not shadow.exists(), "the shadow is removed with the review backend"


@pytest.mark.skipif(
    not sandbox.bwrap_status()[0], reason="bwrap cannot confine here (apt-get install bubblewrap)"
)
def test_a_confined_foreign_agent_cannot_write_the_workspace(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    qtbot: Any,
    user_config: Any,
) -> None:
    user_config("[review]\nconfine_agents = true\n")
    agent = resolve_agent(f"node {shlex.quote(str(node_peers / 'foreign_agent.mjs'))}", {})
    agent = dataclasses.replace(agent, env={"ESCAPE_TO": str(workspace)})
    window = make_window(workspace, agent=agent)
    try:
        wait_ready(qtbot, window)
        assert "Confined with bwrap" in chat_text(window)
        window.send_prompt("escape")
        qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
        run = next(tree for tree in window.part(TreeDock).view.runs.values() if "tool:escape-1" in tree.nodes)
        escape = run.nodes["tool:escape-1"]
        assert escape.status == "failed" and "EROFS" in (escape.observation or "")
        assert not (workspace / "sneaky.py").exists()
    finally:
        stop_review_backend(qtbot, window)
