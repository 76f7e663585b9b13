"""One live connection per MCP server for the session's life: started once, asked before calls that
change things, restarted once when it dies, ended with the backend (a real stateful stdio/SSE server)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import EnvVariable, McpServerStdio, SseMcpServer

from tests.support.acp_client import acp_backend
from tests.support.asking import AskingClient, children, exited, kill

COUNTER = Path(__file__).resolve().parent / "counter_server.py"

Script = Callable[[list[dict[str, Any]]], Path]


def counter(pids: Path) -> McpServerStdio:
    return McpServerStdio(
        name="counter",
        command=sys.executable,
        args=[str(COUNTER)],
        env=[EnvVariable(name="COUNTER_PIDS", value=str(pids))],
    )


def calls(*names: str) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": name, "args": {}}]} for name in names] + [{"content": "done"}]


async def run(script: Path, server: Any, workspace: Path, client: AskingClient) -> int:
    """One prompt turn over ``server``; returns the backend's pid (the server's parent)."""
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        session = await backend.conn.new_session(cwd=str(workspace), mcp_servers=[server])
        response = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        assert response.stop_reason == "end_turn"
        return backend.proc.pid


def outputs(client: AskingClient) -> list[tuple[str, str]]:
    return [(end.status or "", end.raw_output["output"]) for _, end in client.tool_calls()]


async def test_three_calls_use_one_server_process_and_always_is_asked_once(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    pids = tmp_path / "pids"
    client = AskingClient(answers=["always"])
    await run(write_script(calls("bump", "bump", "peek")), counter(pids), git_workspace, client)
    [(asked, _options)] = client.permission_requests
    assert asked.kind == "edit" and asked.raw_input == {}
    assert "bump" in asked.title and "counter" in asked.title
    [pid] = pids.read_text().split()
    assert outputs(client) == [
        ("completed", f"count=1 pid={pid}"),
        ("completed", f"count=2 pid={pid}"),  # the same process: its state is kept
        ("completed", f"count=2 pid={pid}"),  # read-only: not asked
    ]
    assert [start.kind for start, _ in client.tool_calls()] == ["edit", "edit", "read"]
    await exited(int(pid))  # the backend ended it when it closed


async def test_a_rejected_call_does_not_run_and_allow_once_asks_again(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    client = AskingClient(answers=["reject", "allow", "allow"])
    await run(
        write_script(calls("bump", "bump", "bump", "peek")), counter(tmp_path / "p"), git_workspace, client
    )
    assert len(client.permission_requests) == 3
    results = outputs(client)
    assert results[0][0] == "failed"
    assert "the user did not allow bump · MCP server counter: it did not run" in results[0][1]
    assert [r[1].split()[0] for r in results[1:]] == ["count=1", "count=2", "count=2"]


async def test_a_client_that_cannot_be_asked_means_no(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    client = AskingClient()  # refuses session/request_permission with an error
    await run(write_script(calls("bump", "peek")), counter(tmp_path / "p"), git_workspace, client)
    (status, output), (_, peeked) = outputs(client)
    assert status == "failed" and "could not be asked for permission to run bump" in output
    assert peeked.startswith("count=0 ")


@pytest.mark.own_interpreter  # reads the backend's children from /proc
async def test_a_server_killed_between_calls_is_started_again_and_the_call_goes_on(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    pids = tmp_path / "pids"
    backend_pid: list[int] = []

    async def kill_it(tool_call: Any) -> None:
        if len(client.permission_requests) == 2:  # the second bump: the server dies before it runs
            [server] = children(backend_pid[0], str(COUNTER))
            await kill(server)

    client = AskingClient(answers=["allow", "allow"], before_answer=kill_it)
    script = write_script(calls("bump", "bump"))
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        backend_pid.append(backend.proc.pid)
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[counter(pids)])
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    first, second = pids.read_text().split()
    assert outputs(client) == [
        ("completed", f"count=1 pid={first}"),
        ("completed", f"count=1 pid={second}"),  # a new process: the old one's state is gone
    ]


async def test_a_server_that_dies_again_after_its_restart_fails_the_call_saying_so(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    pids = tmp_path / "pids"
    client = AskingClient()
    await run(write_script(calls("crash", "peek")), counter(pids), git_workspace, client)
    (status, output), (peek_status, peeked) = outputs(client)
    assert status == "failed"
    assert "MCP server counter stopped again after it was restarted" in output
    assert peek_status == "completed" and peeked.startswith("count=0 ")  # the next call starts it anew
    assert len(pids.read_text().split()) == 3  # first start, the one restart, the next call's start


async def test_an_sse_server_keeps_one_connection(
    git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pids = tmp_path / "pids"
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        str(COUNTER),
        "--sse",
        str(port),
        env={**os.environ, "COUNTER_PIDS": str(pids)},
        stderr=asyncio.subprocess.DEVNULL,
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
        sse = SseMcpServer(type="sse", name="counter", url=f"http://127.0.0.1:{port}/sse", headers=[])
        client = AskingClient(answers=["always"])
        await run(write_script(calls("bump", "bump", "peek")), sse, git_workspace, client)
        assert [o.split()[0] for _, o in outputs(client)] == ["count=1", "count=2", "count=2"]
        assert len(client.permission_requests) == 1
    finally:
        server.kill()
        await server.wait()
