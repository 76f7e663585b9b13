"""`arbor acp` driven by the official ACP TypeScript SDK client (tests/interop/acp_client.mjs, SDK 1.9.0):
stopping after an edit keeps it pending, allowing writes it through the client's fs/write_text_file, rejecting
leaves disk and git untouched, and a client that did not opt in is sent no _arbor/* notification."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.git import git

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'
EDIT = {
    "tool_calls": [
        {
            "name": "edit_file",
            "args": {
                "path": "pkg/greet.py",
                "old_text": 'return f"Hello, {name}!"',
                "new_text": 'return f"Hi, {name}!"',
            },
        }
    ]
}


def drive(peers: Path, scenario: str, workspace: Path, script: Path) -> dict[str, Any]:
    """Run the TypeScript client against a real ``arbor acp``; what it saw."""
    done = subprocess.run(
        [
            "node",
            str(peers / "acp_client.mjs"),
            scenario,
            str(workspace),
            "--",
            sys.executable,
            "-m",
            "ide",
            "acp",
        ],
        cwd=peers,
        env={**os.environ, "ARBOR_MODEL": f"scripted:{script}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_stop_after_an_edit_keeps_it_pending_until_the_next_turn_asks(
    node_peers: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([EDIT, {"content": "thinking", "latency_ms": 60000}, {"content": "Nothing else."}])
    head = git(git_workspace, "rev-parse", "HEAD")
    seen = drive(node_peers, "cancel", git_workspace, script)
    first, second = seen["responses"]
    assert first["stopReason"] == "cancelled"
    assert first["meta"]["arbor"]["pending"] == ["pkg/greet.py"]
    # Asked once, at the end of the next turn, not after the stop (the SDK client says "discard").
    assert second["stopReason"] == "end_turn"
    [asked] = seen["permissions"]
    assert "1 file(s)" in asked["title"]
    assert seen["writes"] == []
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
    assert git(git_workspace, "rev-parse", "HEAD") == head
    assert seen["extNotifications"] == []


def test_allow_writes_through_the_clients_fs_and_commits_nothing(
    node_peers: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([EDIT, {"content": "Greet says Hi now."}])
    head = git(git_workspace, "rev-parse", "HEAD")
    seen = drive(node_peers, "allow", git_workspace, script)
    assert seen["responses"][0]["stopReason"] == "end_turn"
    assert [p["options"] for p in seen["permissions"]] == [["apply", "discard"]]
    assert seen["writes"] == [str(git_workspace / "pkg" / "greet.py")]
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET.replace("Hello", "Hi")
    assert git(git_workspace, "rev-parse", "HEAD") == head  # the client wrote it; Arbor committed nothing
    assert seen["extNotifications"] == []


def test_reject_leaves_disk_and_git_untouched(
    node_peers: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([EDIT, {"content": "Greet says Hi now."}])
    head = git(git_workspace, "rev-parse", "HEAD")
    status = git(git_workspace, "status", "--porcelain")
    seen = drive(node_peers, "reject", git_workspace, script)
    assert seen["agent"] == "arbor"
    assert len(seen["permissions"]) == 1 and seen["writes"] == []
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
    assert git(git_workspace, "rev-parse", "HEAD") == head
    assert git(git_workspace, "status", "--porcelain") == status


pytestmark = pytest.mark.timeout(180)
