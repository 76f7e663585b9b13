"""What the window says of one state, it says once (issue 46, item 8): the start page's Model card and the
status bar read the same state of the backend and its model, and a turn's tree stops being active when the
turn ends — for an agent that is not Arbor, whose tree the window builds from its tool calls."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ide.app.start.part import StartPart
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from tests.support.window import ECHO_AGENT, REVIEW_AGENT, TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def card(window: MainWindow) -> str:
    return window.part(StartPart).page.verdict.text()


def status_bar(window: MainWindow) -> tuple[str, str]:
    """(the backend's state as the status bar says it, what its model element's tooltip says first)."""
    state = window.status.state.property("state")
    return state, window.status.health.toolTip().splitlines()[0]


def test_the_model_card_and_the_status_bar_say_the_same_of_a_foreign_agent(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, command=ECHO_AGENT)
    wait_ready(qtbot, window)
    qtbot.waitUntil(lambda: status_bar(window)[1] in card(window))
    state, said = status_bar(window)
    assert state == "ready"
    assert "not running" not in card(window), card(window)
    assert said == "This agent does not report whether its model can answer."


def test_the_model_card_says_the_backend_is_not_running_only_when_the_status_bar_does(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    qtbot.waitUntil(lambda: status_bar(window)[0] == "stopped", timeout=TURN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: "The backend is not running." in card(window))
    assert status_bar(window)[1] == "The backend is not running."


def test_a_foreign_agents_turn_leaves_no_node_of_its_tree_active(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    agent = [*REVIEW_AGENT, "--standard"]
    window = make_window(git_workspace, command=agent, env={"REVIEW_AGENT_LOG": str(log)})
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("edit 2")
    view = window.part(TreeDock).view
    qtbot.waitUntil(lambda: any(tree.finished for tree in view.runs.values()), timeout=TURN_TIMEOUT_MS)
    [tree] = view.runs.values()
    assert tree.architecture == "acp" and tree.root is not None
    assert tree.nodes[tree.root].status == "evaluated"
    assert [node.id for node in tree.nodes.values() if node.status == "active"] == []
