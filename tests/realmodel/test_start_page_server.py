"""The start page's OpenAI-compatible Test against a real llama-server: the window's backend restarts on
that server and model, and the probe's verdict on it shows on the page (issue 31, item 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.start.part import StartPart
from tests.support.realmodel import RealServer
from tests.support.window import (  # noqa: F401
    BACKEND_START_TIMEOUT_MS,
    WindowFactory,
    make_window,
    qloop,
    qsettings_dir,
    session_qloop,
    wait_ready,
)

pytestmark = pytest.mark.window
NOWHERE = "http://127.0.0.1:9"
"""The discard port: no Ollama answers, as on a machine that has none."""
PROBE_TIMEOUT_MS = 110_000
"""One tool-call and one structured request to a 270M model on two shared cores."""


def test_test_on_the_start_page_switches_to_the_server_and_shows_the_probes_verdict(
    qtbot: Any,
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    git_workspace: Path,
    real_server: RealServer,
) -> None:
    env = {"ARBOR_MODEL": "ollama:qwen3:8b", "OLLAMA_HOST": NOWHERE, "ARBOR_LLM_MAX_ANSWER_TOKENS": "64"}
    window = make_window(git_workspace, env=env)
    wait_ready(qtbot, window)
    page = window.part(StartPart).page
    page.openai_url.setText("localhost:8080")
    qtbot.mouseClick(page.openai_test, Qt.MouseButton.LeftButton)
    assert "Give the server's URL" in page.model_note.text()  # a bad URL is said, nothing restarts

    page.openai_url.setText(real_server.url)
    page.openai_model.setText(real_server.model)
    spec = f"openai:{real_server.model}"
    qtbot.mouseClick(page.openai_test, Qt.MouseButton.LeftButton)
    shown = page.probe_label
    qtbot.waitUntil(lambda: spec in shown.text(), timeout=BACKEND_START_TIMEOUT_MS + PROBE_TIMEOUT_MS)
    # The probe's own line, whatever a 270M model on this machine earned (its speed varies with the load).
    assert shown.text().startswith((f"[✓] {spec}", f"[⚠] {spec}", f"[✗] {spec}")) and shown.isVisibleTo(page)
    assert window.bridge.agent_meta is not None and window.bridge.agent_meta.model == spec
    assert page.model_label.text() == f"This window's model: {spec}"
    assert f'openai_base_url = "{real_server.url}"' in page.model_note.text()
