"""Gemini CLI 0.61.0, a real ACP agent from npm, driven from the window (an ``[agents.gemini]`` entry with
its endpoint and key) against a scripted Gemini API endpoint: what its ``write_file`` writes through
``fs/write_text_file`` (served by the window's ReviewBackend) comes to the Review dock while the workspace
stays untouched, and Apply commits it. A new file is made and applied too."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.foreign.part import ForeignAgent
from ide.app.review.part import ReviewDock
from ide.client.agentproc import resolve_agent
from tests.support.fake_gemini import FakeGemini
from tests.support.gemini import (
    EDIT_TASK,
    EDITED_TEXT,
    MAKE_TASK,
    NEW_FILE,
    NEW_TEXT,
    GeminiScript,
    gemini_home,
    gemini_peers,  # noqa: F401 (a fixture)
    gemini_settings,
)
from tests.support.git import git, hello_repo
from tests.support.qwen import SHADOW_CWD
from tests.support.window import (  # noqa: F401
    TURN_TIMEOUT_MS,
    WindowFactory,
    make_window,
    qloop,
    qsettings_dir,
    session_qloop,
    wait_ready,
)

GEMINI_TURN_TIMEOUT_MS = 120_000
"""Gemini CLI starts node (and relaunches itself once) before its first answer."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


@pytest.mark.parametrize(
    ("task", "path", "text"),
    [
        pytest.param(MAKE_TASK, NEW_FILE, NEW_TEXT, id="new-file"),
        pytest.param(EDIT_TASK, "hello.py", EDITED_TEXT, id="edit"),
    ],
)
def test_what_gemini_writes_is_reviewed_and_applied_in_the_window(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    gemini_peers: Path,  # noqa: F811
    workspace: Path,
    tmp_path: Path,
    qtbot: Any,
    task: str,
    path: str,
    text: str,
) -> None:
    script = GeminiScript(SHADOW_CWD, task, path, text)
    with FakeGemini(side=script) as server:
        entry = gemini_settings(gemini_peers, server.url, gemini_home(tmp_path))
        window = make_window(workspace, agent=resolve_agent("gemini", {"gemini": entry}))
        asked: list[str] = []

        async def allow_once(session_id: str, tool_call: Any, options: list[Any]) -> str | None:
            asked.append(getattr(tool_call, "title", "") or "")
            return next(o.option_id for o in options if o.kind == "allow_once")

        window.bridge.permission_handler = allow_once
        backend = window.part(ForeignAgent).review  # type: ignore[attr-defined]
        try:
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=GEMINI_TURN_TIMEOUT_MS)
            shadow = Path(backend.shadow)
            views: list[Any] = []
            backend.changesetReceived.connect(views.append)
            window.send_prompt(task)
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=GEMINI_TURN_TIMEOUT_MS)
            (answer,) = script.responses
            assert "error" not in answer, answer
            assert asked == [f"Writing to {path}"]
            qtbot.waitUntil(
                lambda: bool(views) and [f.path for f in views[-1].files] == [path], timeout=TURN_TIMEOUT_MS
            )
            pane = window.part(ReviewDock).pane
            qtbot.waitUntil(lambda: pane.files_model.rowCount() == 1, timeout=TURN_TIMEOUT_MS)
            assert script.cwds == {str(shadow)}, "the agent was told the shadow, never the workspace"
            assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
            assert git(workspace, "status", "--porcelain") == ""

            review = window.part(ReviewDock).client
            with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
                pane.decide_all("accepted")
            with qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS) as applied:
                qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
            assert applied.args[0].conflicts == []
            assert git(workspace, "show", "--name-only", "--format=", "HEAD").split() == [path]
            assert (workspace / path).read_text() == text
            assert git(workspace, "status", "--porcelain") == ""
        finally:
            task_done = asyncio.ensure_future(backend.aclose())
            qtbot.waitUntil(task_done.done, timeout=15_000)
    assert not shadow.exists()
