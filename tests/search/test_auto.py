"""``auto`` mode over real subprocess ACP: the orchestrator's answer decides which architecture runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from ide.protocol.tree import SearchTree
from ide.search.architectures import AUTO_CHOICES
from tests.support.acp_client import WANTS_TREE, acp_backend, tree_events
from tests.support.feature_workflow import done, orchestrator_line
from tests.support.lats_script import EDIT_WINS, LATS_ENV
from tests.support.plan_script import two_task_script
from tests.support.react_script import READ_THEN_ANSWER
from tests.support.tot_script import depth_lines, plan, synthesise


def orchestrator(architecture: str, reason: str) -> dict[str, Any]:
    return {"role": "orchestrator", "content": json.dumps({"architecture": architecture, "reason": reason})}


TOT_ANSWER = "Change `Hello` to `Hi` in pkg/greet.py:2."

RUNS: dict[str, tuple[list[dict[str, Any]], dict[str, str], str]] = {
    "react": (READ_THEN_ANSWER, {}, "Hello, NAME!"),
    "lats": (EDIT_WINS, LATS_ENV, "Changed the greeting to Hi."),
    "tot": (
        [
            plan("Read greet", "Guess the cause"),
            *depth_lines((8, 9, False), (4, 3, False)),
            synthesise(TOT_ANSWER),
        ],
        {"ARBOR_TOT_MAX_DEPTH": "1"},
        TOT_ANSWER,
    ),
    "plan": (two_task_script(), {}, "greet now says Hi"),
    "workflow": (
        [
            orchestrator_line("investigate", **{"2": False}),
            done("agent.analysis", "greet returns Hello, NAME!"),
        ],
        {},
        "greet returns Hello, NAME!",
    ),
}
"""Per choice: the script of that architecture's run, its settings, and text its answer holds."""


def test_auto_offers_every_architecture_and_the_workflow_mode() -> None:
    assert AUTO_CHOICES == ("react", "lats", "tot", "plan", "workflow") == tuple(RUNS)


@pytest.mark.parametrize("choice", list(RUNS))
async def test_the_orchestrators_choice_is_the_architecture_that_runs(
    choice: str, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    lines, settings, answer = RUNS[choice]
    script = write_script([orchestrator(choice, f"it fits {choice}"), *lines])
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "auto", **settings}
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("Make greet say Hi")]
        )
    assert response.stop_reason == "end_turn"
    assert f"Auto mode: {choice} — it fits {choice}" in backend.client.text("agent_thought_chunk")
    assert answer in backend.client.text()
    assert response.field_meta["arbor"]["architecture"] == choice
    tree = SearchTree(tree_events(backend.client))
    assert tree.architecture == choice and tree.finished


async def test_a_choice_that_is_not_a_mode_falls_back_to_react_and_says_why(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    lines = [orchestrator("auto", "recursion"), orchestrator("mcts", "still wrong"), *READ_THEN_ANSWER]
    script = write_script(lines)
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "auto"}
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What does greet return?")]
        )
    assert response.stop_reason == "end_turn"
    thoughts = backend.client.text("agent_thought_chunk")
    assert "Auto mode: react — the orchestrator's answer was unusable" in thoughts
    assert "using ReAct" in thoughts
    assert response.field_meta["arbor"]["architecture"] == "react"
    assert "Hello, NAME!" in backend.client.text()
