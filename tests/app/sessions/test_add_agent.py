"""Agent → Add Agent…: the dialog lists a local registry feed's agents with their distributions, shows the
``[agents]`` entry of the chosen one with a Copy button and where to paste it, and says a bad feed while the
list read before stays. The picker only reads the feed when the user asks."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtGui import QGuiApplication

from ide.app.sessions.add_agent import AddAgentDialog
from ide.app.sessions.part_agents import AgentPicker
from ide.settings import Settings
from tests.support.window import ECHO_AGENT, WindowFactory

FEED = {
    "version": "1.0.0",
    "agents": [
        {
            "id": "qwen-code",
            "name": "Qwen Code",
            "version": "0.9.1",
            "description": "Alibaba's Qwen coding assistant",
            "distribution": {"npx": {"package": "@qwen-code/qwen-code@0.9.1", "args": ["--acp"]}},
        },
        {
            "id": "arbor",
            "name": "Arbor",
            "version": "0.1.0",
            "description": "Search over edits",
            "distribution": {"uvx": {"package": "arbor-ide==0.1.0", "args": ["acp"]}},
        },
    ],
    "extensions": [],
}


def dialog(qtbot: Any, tmp_path: Path, feed: Path) -> AddAgentDialog:
    shown = AddAgentDialog(
        str(feed),
        tmp_path / "data",
        tmp_path / "user" / "config.toml",
        tmp_path / "ws" / ".arbor" / "config.toml",
    )
    qtbot.addWidget(shown)
    with qtbot.waitSignal(shown.loaded, timeout=10_000):
        shown.load()
    return shown


def test_the_dialog_lists_agents_and_gives_the_entry_to_copy(qtbot: Any, tmp_path: Path) -> None:
    feed = tmp_path / "registry.json"
    feed.write_text(json.dumps(FEED))
    shown = dialog(qtbot, tmp_path, feed)
    rows = [shown.agents.item(i).text() for i in range(shown.agents.count())]
    assert rows == ["Arbor 0.1.0  ·  uvx", "Qwen Code 0.9.1  ·  npx"]
    assert "2 agents, read from" in shown.status.text()
    assert shown.distribution.currentText() == "uvx arbor-ide==0.1.0"
    shown.agents.setCurrentRow(1)
    entry = shown.entry.toPlainText()
    assert tomllib.loads(entry)["agents"]["qwen-code"]["args"] == [
        "-y",
        "@qwen-code/qwen-code@0.9.1",
        "--acp",
    ]
    Settings.model_validate(tomllib.loads(entry))
    assert (
        str(tmp_path / "user" / "config.toml") in shown.findChild(type(shown.status), "registryWhere").text()
    )
    shown.copy_button.click()
    assert QGuiApplication.clipboard().text() == entry


def test_a_bad_feed_is_said_and_the_list_stays(qtbot: Any, tmp_path: Path) -> None:
    feed = tmp_path / "registry.json"
    feed.write_text(json.dumps(FEED))
    shown = dialog(qtbot, tmp_path, feed)
    feed.write_text("{not json")
    with qtbot.waitSignal(shown.loaded, timeout=10_000):
        shown.load(refresh=True)
    assert "not JSON" in shown.status.text() and "showing the copy read before" in shown.status.text()
    assert shown.agents.count() == 2 and shown.refresh_button.isEnabled()


def test_no_feed_at_all_is_explained(qtbot: Any, tmp_path: Path) -> None:
    shown = dialog(qtbot, tmp_path, tmp_path / "missing.json")
    assert shown.status.text().startswith("Could not read the registry: cannot read")
    assert shown.agents.count() == 0 and not shown.copy_button.isEnabled()


def test_the_agent_menu_opens_the_dialog_on_the_configured_feed(
    qtbot: Any, make_window: WindowFactory, user_config: Callable[[str], Path], tmp_path: Path
) -> None:
    feed = tmp_path / "registry.json"
    feed.write_text(json.dumps(FEED))
    user_config(f"[registry]\nurl = {json.dumps(feed.as_uri())}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    window = make_window(workspace, command=ECHO_AGENT, start=False)
    picker = window.part(AgentPicker)
    assert picker.add_action in picker.ctx.menus["agent"].actions() and picker.add_dialog is None
    assert not list(tmp_path.rglob("registry/*.json")), "nothing is read before the user asks"
    picker.add_action.trigger()
    shown = picker.add_dialog
    assert shown is not None and shown.url == feed.as_uri()
    qtbot.waitUntil(lambda: shown.agents.count() == 2, timeout=10_000)
    assert shown.isVisible() and shown.entry.toPlainText().startswith("[agents.arbor]")
    shown.close()
