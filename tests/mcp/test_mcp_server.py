"""``arbor mcp`` driven by the official MCP client over stdio: every tool listed and called, the model
behind the agent runs answered by a scripted model; the server introduces itself with Arbor's version;
failed runs and model timeouts are errors; a test command runs only when the client's user allows it
(elicitation); and the Claude Code configuration in the README."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.context import RequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from ide import __version__
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
        hello = await session.initialize()
        assert (hello.serverInfo.name, hello.serverInfo.version) == ("arbor", __version__)
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
            # the run's own tree: root, the model's step, the answer; the one model call it made
            assert "Search tree: 3 nodes, 1 model call\nBest path: " in answer, answer
            assert answer.endswith(f"→ {name}: pkg/greet.py:1 defines greet"), answer
    assert (
        git_workspace / "pkg" / "greet.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'


def elicitation(action: str, asked: list[str]) -> Callable[..., Any]:
    """A client user who answers every elicitation with ``action``, noting what was asked."""

    async def answer(
        context: RequestContext[ClientSession, Any], params: ElicitRequestParams
    ) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action=action, content={} if action == "accept" else None)

    return answer


@pytest.mark.parametrize(
    ("client_answers", "runs", "says"),
    [
        (None, False, "this MCP client cannot be asked first (it does not support elicitation)"),
        ("accept", True, "allowed by the client's user"),
        ("decline", False, "not allowed by the client's user"),
    ],
    ids=["no-elicitation", "accepted", "declined"],
)
async def test_investigate_asks_the_client_before_its_test_command(
    git_workspace: Path,
    tmp_path: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    client_answers: str | None,
    runs: bool,
    says: str,
) -> None:
    marker = tmp_path / "tests-ran"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
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
            "ARBOR_LATS_TEST_COMMAND": command,
        },
    )
    asked: list[str] = []
    callback = elicitation(client_answers, asked) if client_answers else None
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=callback) as session,
    ):
        await session.initialize()
        result = await session.call_tool("investigate", {"task": "Make greet say Hi"})
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert not result.isError and "greet now says Hi." in text and "pkg/greet.py" in text
    assert f"`{command}`" in text and says in text, text
    assert marker.exists() == runs
    # asked once, naming the command, when the client can be asked
    assert len(asked) == (0 if client_answers is None else 1) and all(command in m for m in asked)
    assert "Hello" in (git_workspace / "pkg" / "greet.py").read_text()


@pytest.fixture
def silent_model_server() -> Iterator[str]:
    """An "Ollama" on 127.0.0.1 that takes every request and never answers: a model that times out."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # the listener was shut down: the test is over
                return

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    listener.close()
    for conn in held:
        conn.close()
    thread.join(timeout=5)
    assert not thread.is_alive()


@pytest.mark.long
async def test_failed_runs_and_model_timeouts_are_errors_with_what_happened(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path], silent_model_server: str
) -> None:
    # investigate: the expansion answers, then the script has nothing for the evaluation
    ran_out = write_script([{"role": "lats.expansion", "content": "greet says hello"}])
    # an analysis whose model answers for the wrong role
    mismatch = write_script([{"role": "lats.evaluation", "content": "{}"}])
    cases = [
        (f"scripted:{ran_out}", "investigate", {"task": "What does greet say?"}, "ran out after 1 responses"),
        (f"scripted:{mismatch}", "code_search", {"question": "greet"}, 'is for role "lats.evaluation"'),
        ("ollama:qwen3:8b", "semantic_question", {"question": "What is greet?"}, "sent nothing within 0.5 s"),
    ]
    for model, tool, args, says in cases:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ide", "mcp", "--workspace", str(git_workspace)],
            env={
                **os.environ,
                "ARBOR_MODEL": model,
                "ARBOR_OLLAMA_HOST": silent_model_server,
                "ARBOR_LLM_FIRST_TOKEN_TIMEOUT_S": "0.5",
                "ARBOR_LLM_RETRY_BACKOFF_S": "0",
                "ARBOR_LATS_MAX_ITERATIONS": "1",
                "ARBOR_LATS_EXPANSION_WIDTH": "1",
            },
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            assert result.isError and text.startswith("The run failed: ") and says in text, (tool, text)
            assert "Traceback" not in text
            # the server goes on answering after a failed run
            assert not (await session.call_tool("get_status", {})).isError
