"""The chat's config option selectors: a foreign agent's select and boolean options shown beside the chat,
a change sent to the agent, its updates followed, a refusal undone; Arbor's own model option beside its
mode and workflow boxes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox

from ide.app.chat.part import ChatDock
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

OPTIONS_AGENT = Path(__file__).parents[2] / "support" / "options_agent.py"


def _sets(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def test_a_foreign_agents_options_are_selectors_whose_changes_reach_it_and_follow_its_updates(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    record = tmp_path / "sets.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    window = make_window(workspace, command=[sys.executable, str(OPTIONS_AGENT), str(record)])
    wait_ready(qtbot, window)
    bar = window.part(ChatDock).panel.options
    qtbot.waitUntil(lambda: list(bar.selectors) == ["model", "fast"], timeout=TURN_TIMEOUT_MS)
    model, fast = bar.selectors["model"], bar.selectors["fast"]
    assert isinstance(model, QComboBox) and isinstance(fast, QCheckBox)
    assert bar.isVisible() and model.isEnabled()
    labels = [model.itemText(i) for i in range(model.count())]
    assert labels == [
        "Model: Local: Small",
        "Model: Local: Large",
        "Model: Remote: Cloud",
        "Model: Remote: Refused",
    ]
    assert model.currentData() == "small" and model.toolTip() == "The model answering"
    assert fast.text() == "Fast" and not fast.isChecked() and fast.toolTip() == "Answer quickly"

    # A change is sent; the agent's answer and update redraw the selectors with it.
    with qtbot.waitSignal(window.bridge.configOptionsChanged, timeout=TURN_TIMEOUT_MS):
        model.setCurrentIndex(1)
        model.activated.emit(1)
    qtbot.waitUntil(lambda: bar.selectors["model"].currentData() == "large", timeout=TURN_TIMEOUT_MS)
    assert _sets(record) == [{"id": "model", "value": "large"}]
    with qtbot.waitSignal(window.bridge.configOptionsChanged, timeout=TURN_TIMEOUT_MS):
        bar.selectors["fast"].click()
    qtbot.waitUntil(lambda: bar.selectors["fast"].isChecked(), timeout=TURN_TIMEOUT_MS)
    assert _sets(record)[-1] == {"id": "fast", "value": True}

    # The agent turns an option itself: its update redraws the checkbox.
    window.send_prompt("flip")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not bar.selectors["fast"].isChecked(), timeout=TURN_TIMEOUT_MS)

    # A refusal is said in the status bar and the selector goes back.
    model = bar.selectors["model"]
    with qtbot.waitSignal(window.bridge.configOptionRefused, timeout=TURN_TIMEOUT_MS) as refused:
        model.setCurrentIndex(3)
        model.activated.emit(3)
    assert "not available" in refused.args[0]
    qtbot.waitUntil(lambda: bar.selectors["model"].currentData() == "large", timeout=TURN_TIMEOUT_MS)
    assert "did not set the option" in window.statusBar().currentMessage()
    assert _sets(record)[-1] == {"id": "model", "value": "refused"}
    assert window.bridge.config_options[0].current_value == "large"


def test_arbors_own_backend_shows_its_model_selector_beside_the_mode_box(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace)
    wait_ready(qtbot, window)
    bar = window.part(ChatDock).panel.options
    qtbot.waitUntil(lambda: bool(bar.selectors), timeout=TURN_TIMEOUT_MS)
    assert list(bar.selectors) == ["model"], "mode and workflow have their own boxes"
    ids = [option.id for option in window.bridge.config_options]
    assert ids == ["mode", "model", "workflow"]
    model = bar.selectors["model"]
    assert isinstance(model, QComboBox) and model.count() >= 1 and model.isEnabled()
