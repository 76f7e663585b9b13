"""A model server that refuses, fails, stalls, cuts its stream or sends a broken tool call: the user gets a
clear error with the fix over real ACP, and the same session answers the next prompt."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ToolCallProgress

from ide.protocol import error_info_from_data
from tests.support.acp_client import acp_backend
from tests.support.fake_ollama import FakeOllama

FINE = {"content": "All good now."}


PERSISTENT_500 = {"status": 500, "error": "llama runner process has terminated"}


@pytest.mark.parametrize(
    ("faults", "words"),
    [
        # A 5xx is retried once; one that persists is reported.
        ([PERSISTENT_500, PERSISTENT_500], "llama runner process has terminated"),
        ([{"content": "partial", "stream_error": "unexpected EOF"}], "unexpected EOF"),
        ([{"content": "partial", "garbage": True}], "could not be read"),
        ([{"content": "late", "latency_ms": 4000}], "sent nothing within"),
    ],
    ids=["http-500", "cut-stream", "garbage-line", "stall"],
)
async def test_a_model_fault_is_reported_and_the_session_goes_on(
    git_workspace: Path, faults: list[dict[str, Any]], words: str
) -> None:
    with FakeOllama(responses=[*faults, FINE]) as server:
        env = {
            "ARBOR_MODEL": "ollama:qwen2.5-coder:7b",
            "OLLAMA_HOST": server.url,
            "ARBOR_LLM_REQUEST_TIMEOUT_S": "1",
            "ARBOR_LLM_FIRST_TOKEN_TIMEOUT_S": "1",
            "ARBOR_LLM_RETRY_BACKOFF_S": "0",
        }
        async with acp_backend(env) as backend:
            session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
            with pytest.raises(RequestError) as caught:
                await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("hello?")])
            info = error_info_from_data(caught.value.data)
            assert info is not None, caught.value.data
            assert words.lower() in info.text().lower(), info.text()
            assert info.fix and "Traceback" not in info.text()
            again = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("and now?")])
            assert again.stop_reason == "end_turn"
            assert backend.client.text().endswith("All good now.")


async def test_a_refused_connection_says_how_to_start_ollama_and_the_backend_stays_up(
    git_workspace: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": dead}
    async with acp_backend(env) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("hello?")])
        info = error_info_from_data(caught.value.data)
        assert info is not None and info.kind == "model_unreachable" and "ollama serve" in (info.fix or "")
        # The session still works for everything that needs no model.
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("/workflow")])
        assert "feature_with_iterative_testing" in backend.client.text()


async def test_a_broken_tool_call_is_a_failed_tool_the_model_can_read(git_workspace: Path) -> None:
    responses = [
        {"tool_calls": [{"name": "read_file", "args": {"path": 5, "start_line": "first"}}]},
        {"tool_calls": [{"name": "no_such_tool", "args": {}}]},
        FINE,
    ]
    with FakeOllama(responses=responses) as server:
        env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        async with acp_backend(env) as backend:
            session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
            done = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("read it")])
        assert done.stop_reason == "end_turn"
        results = [u for _, u in backend.client.updates if isinstance(u, ToolCallProgress)]
        assert [r.status for r in results] == ["failed", "failed"]
        assert "bad arguments for read_file" in results[0].raw_output["output"]
        assert "there is no tool 'no_such_tool'" in results[1].raw_output["output"]
        # What the model was told about its mistakes, in the next request.
        follow_up = str(server.chat_bodies[1]["messages"])
        assert "bad arguments for read_file" in follow_up
