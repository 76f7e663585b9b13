"""A ReAct turn is recorded as a search tree, streamed in `_arbor/tree`, stored, and replayed on load."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import text_block

from ide.protocol.tree import SearchTree
from tests.support.acp_client import WANTS_TREE, acp_backend, tree_events
from tests.support.react_script import READ_THEN_ANSWER


async def test_a_react_turn_streams_its_chain_as_a_tree_and_load_replays_it(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(READ_THEN_ANSWER)
    env = {"ARBOR_MODEL": f"scripted:{script}"}
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What does greet return?")]
        )
        live = tree_events(backend.client)

    assert [e.seq for e in live] == list(range(1, len(live) + 1))
    tree = SearchTree(live)
    path = [tree.nodes[i] for i in tree.best_path]
    assert [n.kind for n in path] == ["root", "thought", "action", "thought", "answer"]
    assert path[0].label == "What does greet return?"
    assert path[1].thought == "The greeting lives in pkg/greet.py."
    assert path[2].action is not None and path[2].action.tool == "read_file"
    assert path[2].action.args == {"path": "pkg/greet.py"}
    assert "Hello" in (path[2].observation or "")
    assert path[3].output_tokens > 0 and path[3].model == f"scripted:{script}"
    assert path[4].status == "solution"
    assert live[-1].kind == "finished"
    assert live[-1].figures["stop_reason"] == "end_turn"
    assert live[-1].figures["steps"] == 2 and live[-1].figures["tool_calls"] == 1

    async with acp_backend(env, WANTS_TREE) as backend:
        await backend.conn.load_session(cwd=str(git_workspace), session_id=session.session_id, mcp_servers=[])
        replayed = tree_events(backend.client)
    assert replayed == live


async def test_a_client_that_did_not_ask_gets_no_tree_notifications(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(READ_THEN_ANSWER)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    assert tree_events(backend.client) == []


async def test_cancel_keeps_the_tree_and_closes_it(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]},
            {"latency_ms": 60000, "content": "late"},
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        turn = asyncio.ensure_future(
            backend.conn.prompt(session_id=session.session_id, prompt=[text_block("list")])
        )
        await backend.client.wait_for("tool_call_update")
        await backend.conn.cancel(session_id=session.session_id)
        assert (await asyncio.wait_for(turn, 5)).stop_reason == "cancelled"
        events = tree_events(backend.client)
    assert events[-1].kind == "finished" and events[-1].figures["stop_reason"] == "cancelled"
    tree = SearchTree(events)
    assert tree.nodes[tree.best_path[-1]].status == "terminated_early"
    [action] = [n for n in tree.nodes.values() if n.kind == "action"]
    assert action.action is not None and action.action.tool == "list_dir"
    assert "README.md" in (action.observation or "")
