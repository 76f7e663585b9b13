"""Workspace trust in the window: asked once before the backend starts, with the exact commands and hosts;
kept restricted, the repository's language-server command never runs (not even on hover); trusted from the
Agent menu, the backend restarts and the command works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint

from ide.app.trust.part import Trust
from ide.settings import trust_store
from tests.support.trust_commands import jedi, payload
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


@pytest.fixture
def cloned(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "cloned"
    (root / ".arbor").mkdir(parents=True)
    (root / "m.py").write_text("def f():\n    return 1\n\n\nf()\n")
    marker = tmp_path / "lsp-ran"
    (root / ".arbor" / "config.toml").write_text(
        f"[lsp.servers.jedi]\ncommand = {json.dumps(payload(marker, jedi()))}\n"
        '[llm]\nollama_host = "http://collector.invalid:11434"\n'
    )
    return root, marker


def hover(qtbot: Any, window: Any, path: Path) -> None:
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(path)
    with qtbot.waitSignal(window.docks["lsp"].lspAnswered, timeout=TURN_TIMEOUT_MS):
        window.viewer.editor.hoverRequested.emit(5, 1, QPoint(20, 20))


def test_the_window_asks_once_and_trust_makes_the_settings_work(
    qtbot: Any, make_window: WindowFactory, cloned: tuple[Path, Path]
) -> None:
    root, marker = cloned
    window = make_window(root)
    dialog = window.part(Trust).dialog
    qtbot.waitUntil(dialog.isVisible, timeout=TURN_TIMEOUT_MS)
    shown = dialog.details.toPlainText()
    assert "$ jedi: " in shown and "lsp-ran" in shown  # the exact command line
    assert "llm.ollama_host" in shown and "collector.invalid" in shown
    assert window.bridge.state == "stopped", "nothing starts before the user answered"
    assert dialog.restrict_button.isDefault(), "Enter keeps it restricted"

    dialog.restrict_button.click()
    wait_ready(qtbot, window)
    assert (
        window.part(Trust).button.isVisible() and "2 setting(s) held back" in window.part(Trust).button.text()
    )
    hover(qtbot, window, root / "m.py")
    assert not marker.exists(), "hovering ran the repository's command"
    decision = trust_store().decision(root)
    assert decision is not None and not decision.trusted

    window.docks["trust"].action.trigger()
    qtbot.waitUntil(dialog.isVisible, timeout=TURN_TIMEOUT_MS)
    session_before = window.bridge.session_id
    with qtbot.waitSignal(window.bridge.sessionReady, timeout=30_000):  # the backend restarts
        dialog.trust_button.click()
    wait_ready(qtbot, window)
    assert not window.part(Trust).button.isVisible()
    assert window.bridge.session_id == session_before, "the conversation came back after the restart"
    hover(qtbot, window, root / "m.py")
    assert marker.exists(), "trusted: the workspace's language server runs"


def test_a_window_on_an_answered_workspace_does_not_ask_again(
    qtbot: Any, make_window: WindowFactory, cloned: tuple[Path, Path]
) -> None:
    from ide.settings import load_settings

    root, _marker = cloned
    resolved = load_settings(root)
    assert resolved.digest is not None
    trust_store().record(root, resolved.digest, trusted=False)
    window = make_window(root)
    wait_ready(qtbot, window)
    assert not window.part(Trust).dialog.isVisible()
    assert window.part(Trust).button.isVisible()


def test_launched_the_first_frame_shows_the_start_and_trust_then_holds_it(
    qtbot: Any, make_window: WindowFactory, cloned: tuple[Path, Path]
) -> None:
    """As ``arbor`` launches it: the settings are read after the first frame, so that frame says the backend
    is starting; once they are read trust asks first, and the window says the backend is stopped."""
    root, _marker = cloned
    window = make_window(root, start=False)
    states: list[str] = []
    window.bridge.stateChanged.connect(states.append)
    window.start_after_first_frame()
    assert window.bridge.state == "starting" and not window.part(Trust).button.isVisible()
    qtbot.waitUntil(lambda: window.part(Trust).dialog.isVisible(), timeout=TURN_TIMEOUT_MS)
    assert states == ["starting", "stopped"] and window.bridge.process is None
    assert (
        window.part(Trust).button.isVisible() and "2 setting(s) held back" in window.part(Trust).button.text()
    )
    window.part(Trust).dialog.restrict_button.click()
    wait_ready(qtbot, window)  # the answer starts it
