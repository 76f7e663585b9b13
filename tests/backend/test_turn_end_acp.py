"""Every turn ends its tree: a model error or an unreachable model server closes the run as ``error``
with the reason, and leaves no node ``active``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from ide.protocol.tree import SearchTree
from tests.support.acp_client import WANTS_TREE, acp_backend, tree_events
from tests.support.net import closed_port


async def failed_tree(env: dict[str, str], workspace: Path) -> tuple[RequestError, SearchTree]:
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as raised:
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("hello?")])
        events = tree_events(backend.client)
    return raised.value, SearchTree(events)


def assert_failed_with(tree: SearchTree, reason: str) -> None:
    assert tree.finished
    assert tree.figures["stop_reason"] == "error"
    assert reason in tree.figures["error"]
    assert list(tree.figures)[:2] == ["stop_reason", "error"]  # the summary line shows them first
    assert tree.root is not None and reason in (tree.nodes[tree.root].observation or "")
    statuses = {node.id: node.status for node in tree.nodes.values()}
    assert "active" not in statuses.values(), statuses
    assert "failed" in statuses.values()


async def test_a_model_error_closes_the_tree_as_failed_with_its_reason(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([{"content": "x", "tool_calls": [{"name": "no_such_tool", "args": {}}]}])
    error, tree = await failed_tree({"ARBOR_MODEL": f"scripted:{script}"}, git_workspace)
    assert "no_such_tool" in str(error.data)
    assert_failed_with(tree, 'calls tool "no_such_tool"')
    assert "remove its tool_calls" in tree.figures["error"]  # the fix travels with the message


async def test_an_unreachable_model_server_closes_the_tree_as_failed_with_its_reason(
    git_workspace: Path,
) -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    _error, tree = await failed_tree({"ARBOR_MODEL": "ollama:x", "OLLAMA_HOST": host}, git_workspace)
    assert_failed_with(tree, f"Ollama is not reachable at {host}")
    assert "ollama serve" in tree.figures["error"]
