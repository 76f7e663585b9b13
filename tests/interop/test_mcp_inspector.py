"""`arbor mcp` driven by the official MCP inspector CLI (@modelcontextprotocol/inspector-cli, pinned in
package.json): it lists the tools, a call that succeeds says ``isError: false``, refusals (a path outside
the workspace, a secret, a missing file) and a failed run say ``isError: true``, and an analysis run's
summary counts the nodes and model calls of its real tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.backend.mcp_server import ANALYSES


def inspect(
    peers: Path, workspace: Path, *method: str, model: str = "scripted:/nonexistent"
) -> dict[str, Any]:
    """One inspector CLI call (``--cli --method ...``) against a real ``arbor mcp``; its JSON answer.

    The CLI 1.0.3 reads its own package.json at ``../package.json`` from its working directory, so it runs
    in ``node_modules`` (whose parent holds a package.json); the server is told its workspace.
    """
    done = subprocess.run(
        [
            str(peers / "node_modules" / ".bin" / "mcp-inspector-cli"),
            "--cli",
            sys.executable,
            "-m",
            "ide",
            "mcp",
            "--workspace",
            str(workspace),
            *method,
        ],
        cwd=peers / "node_modules",
        env={**os.environ, "ARBOR_MODEL": model},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def call(peers: Path, workspace: Path, tool: str, *args: str, **kw: Any) -> tuple[str, bool]:
    answer = inspect(
        peers,
        workspace,
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        *(["--tool-arg", *args] if args else []),
        **kw,
    )
    return "".join(c.get("text", "") for c in answer["content"]), answer["isError"]


@pytest.mark.long
def test_the_inspector_lists_the_tools_and_sees_answers_and_refusals(
    node_peers: Path, git_workspace: Path
) -> None:
    listed = inspect(node_peers, git_workspace, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"investigate", "analyze_file", "get_status", *ANALYSES} <= names

    text, error = call(node_peers, git_workspace, "analyze_file", "path=pkg/greet.py")
    assert not error and "def greet" in text

    (git_workspace / ".env").write_text("TOKEN=not-for-models\n")
    for path, says in (
        ("/etc/passwd", "outside the workspace"),
        (".env", "secret"),
        ("pkg/missing.py", "not a file"),
    ):
        text, error = call(node_peers, git_workspace, "analyze_file", f"path={path}")
        assert error and says in text, (path, text)
    assert "not-for-models" not in text


def test_an_analysis_run_reports_its_tree_and_a_failed_run_is_an_error(
    node_peers: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([{"role": "react", "content": "greet is at pkg/greet.py:1"}])
    text, error = call(node_peers, git_workspace, "code_search", "question=greet", model=f"scripted:{script}")
    assert not error and text.startswith("greet is at pkg/greet.py:1"), text
    summary = re.search(r"Search tree: (\d+) nodes, (\d+) model calls?\nBest path: (.+)", text)
    assert summary, text
    assert int(summary.group(1)) >= 2 and int(summary.group(2)) == 1
    assert summary.group(3).endswith("→ greet is at pkg/greet.py:1")

    empty = write_script([])
    text, error = call(node_peers, git_workspace, "code_search", "question=greet", model=f"scripted:{empty}")
    assert error and text.startswith("The run failed:") and "ran out" in text, text
