"""Qwen Code, a real ACP agent from npm, driven from the window against a scripted OpenAI-compatible
endpoint: it works in a shadow of the workspace, the file it writes through ``fs/write_text_file`` and the
one its shell command writes both come to the Review dock while the workspace stays untouched; Apply
commits both, Roll back restores the workspace.

With ``TEST_SCREENSHOT_DIR`` set, the window is saved there as ``qwen-review.png`` once the review shows
both files (run under Xvfb with ``QT_QPA_PLATFORM=xcb`` to see what a user sees)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.foreign.part import ForeignAgent
from ide.app.review.part import ReviewDock
from ide.client.agentproc import resolve_agent
from tests.support.fake_openai import FakeOpenAI
from tests.support.git import git, hello_repo
from tests.support.qwen import (
    FS_FILE,
    FS_TEXT,
    LOOK_COMMAND,
    LOOK_TASK,
    MAKE_TASK,
    SHADOW_CWD,
    SHELL_FILE,
    SHELL_TEXT,
    QwenScript,
    qwen_command,
    tool_outputs,
)
from tests.support.window import (  # noqa: F401
    TURN_TIMEOUT_MS,
    WindowFactory,
    make_window,
    qloop,
    qsettings_dir,
    session_qloop,
    wait_ready,
)

USER_EDIT = 'print("hello")  # edited by the user between turns\n'
QWEN_TURN_TIMEOUT_MS = 180_000
"""Qwen Code starts node and makes several model calls (and side calls) per turn."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def test_qwen_codes_fs_and_shell_writes_are_reviewed_applied_and_rolled_back_in_the_window(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    node_peers: Path,
    workspace: Path,
    tmp_path: Path,
    qtbot: Any,
) -> None:
    home = tmp_path / "home"  # Qwen Code stops at start when $HOME does not exist
    home.mkdir()
    script = QwenScript(SHADOW_CWD)
    with FakeOpenAI(side=script) as server:
        agent = resolve_agent(qwen_command(node_peers, server.url), {})
        agent = dataclasses.replace(agent, env={"HOME": str(home)})
        window = make_window(workspace, agent=agent)
        asked: list[str] = []

        async def allow_once(session_id: str, tool_call: Any, options: list[Any]) -> str | None:
            asked.append(getattr(tool_call, "title", "") or "")
            return next(o.option_id for o in options if o.kind == "allow_once")

        window.bridge.permission_handler = allow_once
        backend = window.part(ForeignAgent).review  # type: ignore[attr-defined]
        try:
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=QWEN_TURN_TIMEOUT_MS)
            shadow = Path(backend.shadow)
            views: list[Any] = []
            backend.changesetReceived.connect(views.append)
            window.send_prompt(MAKE_TASK)
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=QWEN_TURN_TIMEOUT_MS)
            both = sorted([FS_FILE, SHELL_FILE])
            qtbot.waitUntil(
                lambda: bool(views) and sorted(f.path for f in views[-1].files) == both,
                timeout=TURN_TIMEOUT_MS,
            )
            pane = window.part(ReviewDock).pane
            qtbot.waitUntil(lambda: pane.files_model.rowCount() == 2, timeout=TURN_TIMEOUT_MS)
            # Reviewed here: its plain ACP diffs were never taken as "review them in the agent itself".
            assert not pane.note.isVisible() and pane.state.standard_changeset().files == []
            assert asked, "Qwen asked before its command"
            assert script.cwds == {str(shadow)}, "the agent was told the shadow, never the workspace"
            assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
            if shots := os.environ.get("TEST_SCREENSHOT_DIR"):
                window.part(ReviewDock).dock.raise_()  # type: ignore[attr-defined]
                pane.select_file(0)
                qtbot.wait(0)  # one event loop pass: the selection is painted
                window.grab().save(str(Path(shots) / "qwen-review.png"))

            review = window.part(ReviewDock).client
            with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
                pane.decide_all("accepted")
            with qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS) as applied:
                qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
            assert applied.args[0].conflicts == []
            assert sorted(git(workspace, "show", "--name-only", "--format=", "HEAD").split()) == both
            assert (workspace / FS_FILE).read_text() == FS_TEXT
            assert (workspace / SHELL_FILE).read_text() == SHELL_TEXT

            qtbot.waitUntil(lambda: pane.history_tree.topLevelItemCount() == 1, timeout=TURN_TIMEOUT_MS)
            pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
            qtbot.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)
            [roll_back] = [b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back"]
            with qtbot.waitSignal(review.rolledBack, timeout=TURN_TIMEOUT_MS):
                roll_back.click()
            assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
            assert git(workspace, "status", "--porcelain") == ""

            # A second turn after the user's own edit: the agent sees today's files, not what was rolled back.
            (workspace / "hello.py").write_text(USER_EDIT)
            window.send_prompt(LOOK_TASK)
            qtbot.waitUntil(
                lambda: bool(tool_outputs(server.bodies, LOOK_COMMAND)), timeout=QWEN_TURN_TIMEOUT_MS
            )
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=QWEN_TURN_TIMEOUT_MS)
            (seen,) = tool_outputs(server.bodies, LOOK_COMMAND)
            assert "edited by the user between turns" in seen
            assert FS_FILE not in seen and SHELL_FILE not in seen
        finally:
            task = asyncio.ensure_future(backend.aclose())
            qtbot.waitUntil(task.done, timeout=15_000)
    assert not shadow.exists()
