"""Real models in the window: a tool call written as text still edits, the status bar shows how full the
turn's latest request was, Agent → Test Model reports what each model does, and a model that cannot
call tools is said before the first turn (from the cached test), in the status bar and the start page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.start.part import StartPart
from ide.app.status.part_model import ModelProbe
from tests.support.fake_ollama import TEXT_SHAPES, FakeOllama
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

EDIT = {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
STRUCTURED_ANSWER = {"content": '{"language": "Python", "year": 1991}'}


@pytest.mark.parametrize("shape", TEXT_SHAPES)
def test_a_text_tool_call_edits_and_the_context_fill_shows(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, shape: str
) -> None:
    with FakeOllama(
        responses=[{"tool_calls": [EDIT]}, {"content": "Changed it to Hi."}], text_tool_calls=shape
    ) as server:
        window = make_window(
            git_workspace, env={"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        )
        wait_ready(qtbot, window)
        with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
            window.send_prompt("say Hi instead of Hello")
        qtbot.waitUntil(
            lambda: (
                window.part(ReviewDock).pane.state.changeset is not None
                and bool(window.part(ReviewDock).pane.state.changeset.files)
            )
        )
    assert [f.path for f in window.part(ReviewDock).pane.state.changeset.files] == ["pkg/greet.py"]
    assert window.status.context.text().startswith("ctx ") and window.status.context.text().endswith("/ 16k")
    assert "1 tool call(s) recovered from text" in window.status.usage.text()
    transcript = window.part(ChatDock).panel.transcript()
    assert (
        "edit_file" not in transcript.replace("Edit pkg/greet.py", "") and "recovered from text" in transcript
    )


def test_test_model_reports_and_a_model_that_cannot_act_is_said_before_the_first_turn(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    answers = [{"content": "I would read README.md."}, STRUCTURED_ANSWER]
    with FakeOllama(responses=answers) as server:
        env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        window = make_window(git_workspace, env=env)
        wait_ready(qtbot, window)
        assert window.part(ModelProbe).action.isEnabled()
        window.part(ModelProbe).action.trigger()
        qtbot.waitUntil(window.part(ModelProbe).dialog.isVisible, timeout=TURN_TIMEOUT_MS)
        report = window.part(ModelProbe).dialog.text()
        assert "[✗] ollama:qwen2.5-coder:7b" in report and "cannot act" in report
        # Said in the status bar's model element and the start page, not over the work.
        status = window.status
        assert status.health.property("level") == "warning" and "did not call a tool" in status.health.text()
        assert "cannot act" in window.part(StartPart).page.probe_label.text()
        assert not window.banner.wanted

        # A second window on the workspace reads the cached result and warns before any turn.
        second = make_window(git_workspace, env=env)
        wait_ready(qtbot, second)
        health = second.status.health
        qtbot.waitUntil(lambda: health.property("level") == "warning", timeout=TURN_TIMEOUT_MS)
        assert "did not call a tool" in health.text() and "Pick a model that calls tools" in health.toolTip()
        assert "cannot act" in second.part(StartPart).page.probe_label.text() and not second.banner.wanted
