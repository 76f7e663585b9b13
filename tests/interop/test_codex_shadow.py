"""Codex (codex-acp 0.16.0, Zed's ACP adapter around the Codex Rust core), a real ACP agent, driven by
``arbor run --agent`` against a scripted Responses API server: it adds one file with its own ``apply_patch``
and one with a shell command, straight to disk. Both are captured from the shadow workspace it was given
and printed as the change set while the workspace is untouched (its path never reaches the model);
``--apply`` commits both."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.codex import (
    CODEX_ACP,
    CODEX_BINARY,
    DONE,
    MAKE_TASK,
    PATCH_FILE,
    PATCH_TEXT,
    SHELL_FILE,
    SHELL_TEXT,
    CodexScript,
    codex_command,
    tool_outputs,
)
from tests.support.fake_openai import FakeOpenAI
from tests.support.foreign_run import arbor_agent_run
from tests.support.git import git, hello_repo
from tests.support.qwen import SHADOW_CWD

RUN_TIMEOUT_S = 180


@pytest.fixture
def codex_peers(node_peers: Path) -> Path:
    if not (node_peers / CODEX_ACP).exists() or not (node_peers / CODEX_BINARY).exists():
        pytest.skip(
            "codex-acp's launcher or its linux-x64 binary (an optional npm dependency) is not installed: "
            "run npm install in tests/interop on linux x64"
        )
    return node_peers


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def arbor_run(
    peers: Path, workspace: Path, tmp_path: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], CodexScript, FakeOpenAI]:
    codex_home = tmp_path / "home" / ".codex"  # Codex stops at start when $CODEX_HOME does not exist
    codex_home.mkdir(parents=True, exist_ok=True)
    script = CodexScript(SHADOW_CWD)
    with FakeOpenAI(side=script) as server:
        done = arbor_agent_run(
            workspace,
            codex_command(peers, server.url),
            MAKE_TASK,
            *flags,
            env={"HOME": str(codex_home.parent), "CODEX_HOME": str(codex_home)},
            timeout=RUN_TIMEOUT_S,
        )
    return done, script, server


def test_what_codex_writes_by_patch_and_by_shell_is_captured_and_the_workspace_untouched(
    codex_peers: Path, workspace: Path, tmp_path: Path
) -> None:
    done, script, server = arbor_run(codex_peers, workspace, tmp_path, "--allow-commands")
    assert done.returncode == 0, done.stderr
    assert DONE in done.stdout
    for name, text in ((PATCH_FILE, PATCH_TEXT), (SHELL_FILE, SHELL_TEXT)):
        assert f"+++ b/{name}" in done.stdout
        assert f"+{text}" in done.stdout
    assert "Traceback" not in done.stderr
    # Captured after each tool call, so the call that made each file is named: the patch is an edit.
    assert f"{PATCH_FILE} (added)" in done.stderr and f"{SHELL_FILE} (added)" in done.stderr
    assert re.search(rf"\[review\] Edit /\S+/{PATCH_FILE}: {PATCH_FILE} \(added\)", done.stderr)
    assert "nothing was written" in done.stderr
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
    assert git(workspace, "status", "--porcelain") == ""
    # Codex ran both for real: the patch's own report and the command's exit code came back to the model.
    patched, ran = tool_outputs(server.response_bodies)
    assert f"A {PATCH_FILE}" in patched and "exited with code 0" in ran
    # It worked in the shadow: the cwd it told the model, never the workspace.
    assert len(script.cwds) == 1
    assert all(str(workspace) not in str(body) for body in server.response_bodies)
    assert git(workspace, "worktree", "list").count("\n") == 1
    assert not Path(script.cwds.pop()).exists()


def test_apply_commits_both_files(codex_peers: Path, workspace: Path, tmp_path: Path) -> None:
    done, _, _ = arbor_run(codex_peers, workspace, tmp_path, "--allow-commands", "--apply")
    assert done.returncode == 0, done.stderr
    assert "applied batch" in done.stderr
    assert git(workspace, "show", f"HEAD:{PATCH_FILE}") == PATCH_TEXT
    assert git(workspace, "show", f"HEAD:{SHELL_FILE}") == SHELL_TEXT
    assert git(workspace, "log", "-1", "--format=%B").startswith(f"{MAKE_TASK}\n")
    assert git(workspace, "status", "--porcelain") == ""
