"""`arbor acp` as a real subprocess, driven by the ACP SDK's own client connection: a turn's stream, cancel,
a restart, malformed lines, a backend killed mid-turn (the agent's answers alone are in test_agent.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ToolCallProgress, ToolCallStart

from ide.protocol import ERROR_CODE, META_KEY, AgentMeta, TurnMeta, error_info_from_data
from ide.protocol.model import USAGE_NOTIFICATION
from tests.support.acp_client import BACKEND, WANTS_TREE, RecordingClient, acp_backend
from tests.support.fake_ollama import FakeOllama
from tests.support.react_script import READ_THEN_ANSWER


async def test_prompt_turn_streams_thoughts_tool_calls_and_answer_in_order(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(READ_THEN_ANSWER)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}) as backend:
        caps = backend.init.agent_capabilities
        assert backend.init.protocol_version == 1
        assert caps is not None and caps.load_session is True
        meta = AgentMeta.model_validate(caps.field_meta[META_KEY])
        assert meta.model == f"scripted:{script}"
        assert meta.architectures == ["react", "lats", "tot", "plan", "workflow", "auto"]

        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "react"
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What does greet return?")]
        )

    assert response.stop_reason == "end_turn"
    kinds = backend.client.kinds()
    # the slash commands on the session's first turn, then thoughts, the tool call and its result, more
    # thoughts, then the streamed answer
    assert kinds.pop(0) == "available_commands_update"
    first_tool = kinds.index("tool_call")
    assert set(kinds[:first_tool]) == {"agent_thought_chunk"}
    assert kinds[first_tool + 1] == "tool_call_update"
    assert kinds[-1] == "agent_message_chunk"
    assert kinds.count("agent_message_chunk") > 1, "the answer should stream in several chunks"
    assert backend.client.text() == "`greet` returns **Hello, NAME!** (pkg/greet.py:2)."
    assert "It formats a string." in backend.client.text("agent_thought_chunk")

    start = next(u for _, u in backend.client.updates if isinstance(u, ToolCallStart))
    done = next(u for _, u in backend.client.updates if isinstance(u, ToolCallProgress))
    assert start.kind == "read"
    assert start.title == "Read pkg/greet.py"
    assert start.raw_input == {"path": "pkg/greet.py"}
    assert start.locations is not None
    assert Path(start.locations[0].path) == (git_workspace / "pkg" / "greet.py").resolve()
    assert done.tool_call_id == start.tool_call_id
    assert done.status == "completed"
    assert 'return f"Hello, {name}!"' in done.raw_output["output"]

    turn = TurnMeta.model_validate(response.field_meta[META_KEY])
    assert turn.steps == 2
    assert turn.usage["react"].calls == 2
    assert turn.usage["react"].output_tokens > 0


def _model_calls_started(client: RecordingClient) -> int:
    """Model calls of the session so far, as its ``_arbor/usage`` reports count them (sent as each starts)."""
    reports = [p for m, p in client.notifications if m == USAGE_NOTIFICATION]
    return sum(role["calls"] for role in reports[-1]["usage"].values()) if reports else 0


async def test_cancel_cuts_the_model_call_and_the_session_goes_on(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]},
            {"latency_ms": 3_600_000, "content": "too late"},  # an hour: only a cancel that cuts it ends it
            {"content": "Still here."},
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        turn = asyncio.ensure_future(
            backend.conn.prompt(session_id=session.session_id, prompt=[text_block("list it slowly")])
        )
        await backend.client.wait_until(lambda: _model_calls_started(backend.client) == 2)
        await backend.conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(turn, timeout=60)  # a guard against a hang, not a measure
        assert response.stop_reason == "cancelled"
        # The call the cancel cut is counted as spent; its answer never came.
        assert TurnMeta.model_validate(response.field_meta[META_KEY]).usage["react"].calls == 2
        assert "too late" not in backend.client.text()

        again = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("still there?")])
        assert again.stop_reason == "end_turn"
        assert backend.client.text().endswith("Still here.")


async def test_load_replays_history_and_continues_the_conversation(
    git_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [{"content": "First answer."}, {"content": "Second answer."}]
    with FakeOllama(responses=answers) as server:
        env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        async with acp_backend(env) as backend:
            session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("First question")])

        async with acp_backend(env) as backend:
            listed = await backend.conn.list_sessions(cwd=str(git_workspace))
            assert [s.session_id for s in listed.sessions] == [session.session_id]
            assert listed.sessions[0].title == "First question"

            loaded = await backend.conn.load_session(
                cwd=str(git_workspace), session_id=session.session_id, mcp_servers=[]
            )
            assert loaded is not None
            # the history, then the slash commands the agent offers
            assert backend.client.kinds() == [
                "user_message_chunk",
                "agent_message_chunk",
                "available_commands_update",
            ]
            assert backend.client.text("user_message_chunk") == "First question"
            assert backend.client.text() == "First answer."

            response = await backend.conn.prompt(
                session_id=session.session_id, prompt=[text_block("Second question")]
            )
            assert response.stop_reason == "end_turn"

    # the model saw the first exchange again: the conversation survived the restart
    second = server.chat_bodies[1]["messages"]
    contents = [m["content"] for m in second]
    assert "First question" in contents
    assert "First answer." in contents
    assert contents[-1] == "Second question"
    assert server.chat_bodies[1]["options"]["num_ctx"] == 16384


async def test_unreachable_model_is_a_classified_error_with_the_fix(
    git_workspace: Path, unused_tcp_port: int
) -> None:
    env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": f"http://127.0.0.1:{unused_tcp_port}"}
    async with acp_backend(env) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        assert backend.proc.returncode is None, "the backend must survive a model failure"
    assert caught.value.code == ERROR_CODE
    info = error_info_from_data(caught.value.data)
    assert info is not None
    assert info.kind == "model_unreachable"
    assert f"127.0.0.1:{unused_tcp_port}" in info.message
    assert "ollama serve" in (info.fix or "")


async def test_malformed_lines_get_json_rpc_errors_and_the_backend_keeps_serving() -> None:
    proc = await asyncio.create_subprocess_exec(
        *BACKEND,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        b'not json at all\n[1, 2]\n{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}\n'
    )
    proc.stdin.write(
        b'{"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": 1}}\n'
    )
    await proc.stdin.drain()
    replies = [json.loads(await asyncio.wait_for(proc.stdout.readline(), 30)) for _ in range(4)]
    proc.stdin.close()
    await asyncio.wait_for(proc.wait(), 10)
    assert replies[0]["error"]["code"] == -32700
    assert replies[1]["error"]["code"] == -32600
    assert replies[2]["id"] == 7 and replies[2]["error"]["code"] == -32602  # protocolVersion missing
    assert replies[3]["id"] == 8 and replies[3]["result"]["protocolVersion"] == 1
    assert proc.returncode == 0


async def test_a_backend_killed_mid_turn_still_replays_the_question_and_finished_tool_calls(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "read_file", "args": {"path": "README.md"}}]},
            {"latency_ms": 60000, "content": "never said"},
        ]
    )
    env = {"ARBOR_MODEL": f"scripted:{script}"}
    async with acp_backend(env) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        turn = asyncio.ensure_future(
            backend.conn.prompt(session_id=session.session_id, prompt=[text_block("Summarise the README")])
        )
        await backend.client.wait_for("tool_call_update")
        backend.proc.kill()
        await backend.proc.wait()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(turn, 10)

    async with acp_backend(env) as backend:
        await backend.conn.load_session(cwd=str(git_workspace), session_id=session.session_id, mcp_servers=[])
        assert backend.client.kinds() == [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "available_commands_update",
        ]
        assert backend.client.text("user_message_chunk") == "Summarise the README"
