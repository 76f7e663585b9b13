"""The reference MCP filesystem server (npm, pinned) handed to ``session/new`` of a real ``arbor acp``: its
``write_file`` asks first with its arguments, its read-only tools do not, one process serves every call,
and a server killed between calls is started again once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import McpServerStdio

from tests.support.acp_client import acp_backend
from tests.support.asking import AskingClient, children, kill

pytestmark = pytest.mark.own_interpreter  # finds the MCP server among the backend's children in /proc

MARKER = "server-filesystem"

Script = Callable[[list[dict[str, Any]]], Path]


def write(path: Path, content: str) -> dict[str, Any]:
    # Our own write_file takes the name: the server's is fs__write_file.
    return {"tool_calls": [{"name": "fs__write_file", "args": {"path": str(path), "content": content}}]}


def filesystem(node_peers: Path, folder: Path) -> McpServerStdio:
    command = node_peers / "node_modules" / ".bin" / "mcp-server-filesystem"
    return McpServerStdio(name="fs", command=str(command), args=[str(folder)], env=[])


async def test_write_file_asks_with_its_arguments_and_read_only_tools_do_not(
    node_peers: Path, git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    script = write_script(
        [
            write(notes / "rejected.txt", "no"),
            write(notes / "once.txt", "one"),
            write(notes / "always.txt", "two"),
            write(notes / "unasked.txt", "three"),
            {"tool_calls": [{"name": "read_text_file", "args": {"path": str(notes / "once.txt")}}]},
            {"content": "done"},
        ]
    )
    servers_seen: list[list[int]] = []

    async def note_server(tool_call: Any) -> None:
        servers_seen.append(children(backend.proc.pid, MARKER))

    client = AskingClient(answers=["reject", "allow", "always"], before_answer=note_server)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        session = await backend.conn.new_session(
            cwd=str(git_workspace), mcp_servers=[filesystem(node_peers, notes)]
        )
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("write the notes")])
        servers_seen.append(children(backend.proc.pid, MARKER))

    asked = [tool_call for tool_call, _ in client.permission_requests]
    assert len(asked) == 3  # rejected, once, always; the call after "always" and the read are not asked
    assert asked[0].raw_input == {"path": str(notes / "rejected.txt"), "content": "no"}
    assert "write_file" in asked[0].title and "fs" in asked[0].title
    assert asked[0].kind == "delete"  # destructiveHint: it may overwrite a file
    results = [(start.kind, end.status, end.raw_output["output"]) for start, end in client.tool_calls()]
    assert results[0][:2] == ("delete", "failed")
    assert "the user did not allow write_file · MCP server fs: it did not run" in results[0][2]
    assert [status for _, status, _ in results[1:]] == ["completed"] * 4
    assert results[4][0] == "read" and results[4][2] == "one"
    assert not (notes / "rejected.txt").exists()
    assert [(notes / n).read_text() for n in ("once.txt", "always.txt", "unasked.txt")] == [
        "one",
        "two",
        "three",
    ]
    [first] = servers_seen[0]
    assert servers_seen == [[first]] * 4  # one process for every call


async def test_a_filesystem_server_killed_between_calls_is_started_again(
    node_peers: Path, git_workspace: Path, tmp_path: Path, write_script: Script
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    script = write_script([write(notes / "a.txt", "a"), write(notes / "b.txt", "b"), {"content": "done"}])
    killed: list[int] = []

    async def kill_before_the_second(tool_call: Any) -> None:
        if len(client.permission_requests) == 2:
            [server] = children(backend.proc.pid, MARKER)
            killed.append(server)
            await kill(server)

    client = AskingClient(answers=["allow", "allow"], before_answer=kill_before_the_second)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        session = await backend.conn.new_session(
            cwd=str(git_workspace), mcp_servers=[filesystem(node_peers, notes)]
        )
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("write")])
        [restarted] = children(backend.proc.pid, MARKER)
    assert restarted != killed[0]
    assert [end.status for _, end in client.tool_calls()] == ["completed", "completed"]
    assert (notes / "a.txt").read_text() == "a" and (notes / "b.txt").read_text() == "b"
