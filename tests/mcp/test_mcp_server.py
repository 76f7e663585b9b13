"""``arbor mcp`` driven by the official MCP client over stdio: every tool listed and called, the model
behind the agent runs answered by a scripted model; and the Claude Code configuration in the README."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ide.backend.mcp_server import ANALYSES

README = Path(__file__).resolve().parents[2] / "README.md"
PLAIN_TOOLS = {
    "get_status",
    "search_memory",
    "get_insights",
    "store_insight",
    "analyze_file",
    "parallel_search",
    "find_symbol",
    "definition",
    "references",
    "repo_map",
}


def documented_config() -> dict[str, Any]:
    """The ``.mcp.json`` block the README gives for Claude Code."""
    text = README.read_text()
    block = re.search(r"```json\n(\{\n  \"mcpServers\".*?)\n```", text, re.S)
    assert block, "the README shows an .mcp.json for Claude Code"
    return json.loads(block.group(1))["mcpServers"]["arbor"]


async def test_every_tool_over_stdio_with_the_documented_configuration(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    runs = ["investigate", *ANALYSES]
    lines: list[dict[str, Any]] = [
        # investigate runs LATS: one expansion that answers, one evaluation that accepts it
        {"role": "lats.expansion", "content": "greet returns Hello, NAME! (pkg/greet.py:2)"},
        {
            "role": "lats.evaluation",
            "content": '{"score": 9, "reflection": "cites the line", "is_solution": true}',
        },
        *({"role": "react", "content": f"{name}: pkg/greet.py:1 defines greet"} for name in ANALYSES),
    ]
    script = write_script(lines)
    config = documented_config()
    assert config["command"] == "arbor" and config["args"][:1] == ["mcp"]
    # The same arguments as documented, started as this interpreter's module (no PATH lookup in tests).
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ide", *config["args"]],
        cwd=str(git_workspace),
        env={
            **os.environ,
            "ARBOR_MODEL": f"scripted:{script}",
            "ARBOR_LATS_MAX_ITERATIONS": "1",
            "ARBOR_LATS_EXPANSION_WIDTH": "1",
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert listed == PLAIN_TOOLS | set(runs)

        async def call(name: str, **args: Any) -> str:
            result = await session.call_tool(name, args)
            assert not result.isError, result
            return "".join(getattr(c, "text", "") for c in result.content)

        status = json.loads(await call("get_status"))
        assert status["workspace"] == str(git_workspace.resolve()) and status["architecture"] == "react"
        assert "stored as insight #" in await call(
            "store_insight", title="Greeting", content="lives in pkg/greet.py"
        )
        assert "Greeting" in await call("get_insights")
        assert "Greeting" in await call("search_memory", query="greeting")
        assert "def greet" in await call("analyze_file", path="pkg/greet.py")
        found = await call("parallel_search", queries=["greet", "Hello"])
        assert "## greet" in found and "## Hello" in found and "pkg/greet.py" in found
        assert "pkg/greet.py" in await call("find_symbol", query="greet")
        assert "pkg/greet.py" in await call("definition", symbol="greet")
        assert "pkg/greet.py" in await call("references", symbol="greet")
        assert await call("repo_map")
        investigated = await call("investigate", task="What does greet return?")
        assert "Hello, NAME!" in investigated and "Search tree:" in investigated
        for name in ANALYSES:
            answer = await call(name, question="greet")
            assert answer.startswith(f"{name}: pkg/greet.py:1 defines greet"), answer
    assert (
        git_workspace / "pkg" / "greet.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'


async def test_investigate_runs_no_test_command_since_mcp_cannot_ask_first(
    git_workspace: Path, tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    marker = tmp_path / "tests-ran"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    edit = {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
    script = write_script(
        [
            {"role": "lats.expansion", "content": "I change the greeting.", "tool_calls": [edit]},
            {"role": "lats.evaluation", "content": '{"score": 6, "reflection": "ok", "is_solution": false}'},
            {"role": "lats.expansion", "content": "greet now says Hi."},
            {"role": "lats.evaluation", "content": '{"score": 9, "reflection": "done", "is_solution": true}'},
        ]
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ide", "mcp", "--workspace", str(git_workspace)],
        env={
            **os.environ,
            "ARBOR_MODEL": f"scripted:{script}",
            "ARBOR_LATS_MAX_ITERATIONS": "2",
            "ARBOR_LATS_EXPANSION_WIDTH": "1",
            "ARBOR_LATS_TEST_COMMAND": f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}",
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("investigate", {"task": "Make greet say Hi"})
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert not result.isError and "greet now says Hi." in text and "pkg/greet.py" in text
    assert not marker.exists()  # the branch had edits, but nobody could be asked to allow the command
    assert "Hello" in (git_workspace / "pkg" / "greet.py").read_text()
