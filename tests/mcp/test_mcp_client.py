"""``session/new`` with MCP servers: their tools reach the agent; a failing server is reported, not fatal;
a tool without annotations asks the user first (shown as kind ``other``)."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import HttpMcpServer, McpServerStdio, ToolCallProgress

from ide.protocol import META_KEY
from tests.support.acp_client import RecordingClient, acp_backend

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "mcp_fixture.py"


async def test_a_session_offers_the_tools_of_its_mcp_servers_and_reports_one_that_fails(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "ticket_status", "args": {"ticket": "ARB-7"}}]},
            {"content": "ARB-7 is open and assigned to Ada."},
        ]
    )
    servers = [
        McpServerStdio(name="tickets", command=sys.executable, args=[str(FIXTURE)], env=[]),
        McpServerStdio(name="broken", command=str(git_workspace / "no-such-server"), args=[], env=[]),
    ]
    client = RecordingClient(permission_answer="allow")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=servers)
        mcp = session.field_meta[META_KEY]["mcp"]
        assert mcp["connected"] == ["tickets"] and mcp["tools"] == 1
        assert set(mcp["failed"]) == {"broken"}
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What is the status of ARB-7?")]
        )
        assert response.stop_reason == "end_turn"
    thoughts = client.text("agent_thought_chunk")
    assert "MCP servers connected: tickets (1 tools)" in thoughts
    assert "MCP server broken is not available:" in thoughts
    [(asked, options)] = client.permission_requests
    assert asked.kind == "other" and asked.raw_input == {"ticket": "ARB-7"}
    assert "ticket_status" in asked.title and "tickets" in asked.title
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow", "allow_once"),
        ("always", "allow_always"),
        ("reject", "reject_once"),
    ]
    result = next(u for _, u in client.updates if isinstance(u, ToolCallProgress))
    assert result.status == "completed"
    assert "ARB-7: open, assigned to Ada, due Friday" in result.raw_output["output"]
    assert client.text() == "ARB-7 is open and assigned to Ada."


async def test_an_http_mcp_server_works_the_same(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await asyncio.create_subprocess_exec(
        sys.executable, str(FIXTURE), "--http", str(port), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        for _attempt in range(200):  # bounded: up to ~10 s for the server to listen
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        script = write_script(
            [
                {"tool_calls": [{"name": "ticket_status", "args": {"ticket": "ARB-9"}}]},
                {"content": "ARB-9 is open."},
            ]
        )
        http = HttpMcpServer(type="http", name="tickets", url=f"http://127.0.0.1:{port}/mcp", headers=[])
        client = RecordingClient(permission_answer="allow")
        async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
            session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[http])
            assert session.field_meta[META_KEY]["mcp"]["connected"] == ["tickets"]
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("ARB-9?")])
        result = next(u for _, u in backend.client.updates if isinstance(u, ToolCallProgress))
        assert "ARB-9: open, assigned to Ada, due Friday" in result.raw_output["output"]
    finally:
        server.kill()
        await server.wait()
