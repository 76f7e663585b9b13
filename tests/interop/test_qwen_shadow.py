"""Qwen Code 0.24.4, a real ACP agent, driven by ``arbor run --agent`` against a scripted OpenAI-compatible
server: it writes one file through ``fs/write_text_file`` and one with a shell command, straight to disk.
Both are captured from the shadow workspace it was given and printed as the change set, the workspace
is untouched (and its path never reaches the model); ``--apply`` commits both; without
``--allow-commands`` the command is refused with a note; a command that writes into the real workspace
is reported as written outside review. Over two turns, a file the user rejected is gone
from the shadow and the user's edit is there when the agent looks next."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from ide.client import agentconn
from ide.client.agentproc import resolve_agent
from ide.headless.foreign import ForeignRun
from ide.protocol.review import DECIDE, DecideParams
from tests.support.fake_openai import FakeOpenAI
from tests.support.foreign_run import arbor_agent_run
from tests.support.git import git, hello_repo
from tests.support.qwen import (
    DONE,
    FS_FILE,
    FS_TEXT,
    LOOK_COMMAND,
    LOOK_TASK,
    MAKE_TASK,
    SHADOW_CWD,
    SHELL_FILE,
    SHELL_TEXT,
    QwenScript,
    qwen_command,
    tool_outputs,
)

RUN_TIMEOUT_S = 300
USER_EDIT = 'print("hello, edited by the user between turns")\n'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def arbor_run(
    node_peers: Path, workspace: Path, tmp_path: Path, *flags: str, script: QwenScript | None = None
) -> tuple[subprocess.CompletedProcess[str], QwenScript, FakeOpenAI]:
    home = tmp_path / "home"  # Qwen Code stops at start when $HOME does not exist
    home.mkdir(exist_ok=True)
    script = script or QwenScript(SHADOW_CWD)
    with FakeOpenAI(side=script) as server:
        command = qwen_command(node_peers, server.url)
        done = arbor_agent_run(
            workspace, command, MAKE_TASK, *flags, env={"HOME": str(home)}, timeout=RUN_TIMEOUT_S
        )
    return done, script, server


def test_what_qwen_writes_by_fs_and_by_shell_is_captured_and_the_workspace_untouched(
    node_peers: Path, workspace: Path, tmp_path: Path
) -> None:
    done, script, server = arbor_run(node_peers, workspace, tmp_path, "--allow-commands")
    assert done.returncode == 0, done.stderr
    assert DONE in done.stdout
    for name, text in ((FS_FILE, FS_TEXT), (SHELL_FILE, SHELL_TEXT)):
        assert f"+++ b/{name}" in done.stdout
        assert f"+{text}" in done.stdout
    assert "allowed once" in done.stderr
    assert "nothing was written" in done.stderr
    assert "Traceback" not in done.stderr  # Qwen's own notifications are ignored quietly
    # Captured after each tool call, so the call that made each file is named.
    assert f"{FS_FILE} (added)" in done.stderr and f"{SHELL_FILE} (added)" in done.stderr
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
    assert git(workspace, "status", "--porcelain") == ""
    # The agent worked in the shadow: that is the cwd it told the model, never the workspace.
    assert len(script.cwds) == 1
    assert all(str(workspace) not in str(body) for body in server.bodies)
    # The shadow is gone with the run.
    assert git(workspace, "worktree", "list").count("\n") == 1
    assert not Path(script.cwds.pop()).exists()


def test_apply_commits_both_files(node_peers: Path, workspace: Path, tmp_path: Path) -> None:
    done, _, _ = arbor_run(node_peers, workspace, tmp_path, "--allow-commands", "--apply")
    assert done.returncode == 0, done.stderr
    assert "applied batch" in done.stderr
    assert git(workspace, "show", f"HEAD:{FS_FILE}") == FS_TEXT
    assert git(workspace, "show", f"HEAD:{SHELL_FILE}") == SHELL_TEXT
    message = git(workspace, "log", "-1", "--format=%B")
    assert message.startswith("make two files\n") and "Made by qwen-code in a shadow workspace" in message
    assert (workspace / SHELL_FILE).read_text() == SHELL_TEXT
    assert git(workspace, "status", "--porcelain") == ""


def test_without_allow_commands_the_command_is_refused_with_a_note(
    node_peers: Path, workspace: Path, tmp_path: Path
) -> None:
    done, _, _ = arbor_run(node_peers, workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "refused (run with --allow-commands" in done.stderr
    assert f"+++ b/{FS_FILE}" in done.stdout
    assert SHELL_FILE not in done.stdout
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]


async def test_the_next_turn_sees_the_rejection_and_the_users_edit(
    node_peers: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    script = QwenScript(SHADOW_CWD)
    with FakeOpenAI(side=script) as server:
        agent = resolve_agent(qwen_command(node_peers, server.url), {})
        async with ForeignRun(
            str(workspace), agent, io.StringIO(), io.StringIO(), allow_commands=True
        ) as run:
            _, first = await run.turn(MAKE_TASK)
            assert sorted(f.path for f in first.changeset.files) == [FS_FILE, SHELL_FILE]
            rejected = DecideParams(session_id=run.review_id, decision="rejected", paths=[SHELL_FILE])
            await agentconn.call(run.review, DECIDE, rejected)
            (workspace / "hello.py").write_text(USER_EDIT)
            _, second = await run.turn(LOOK_TASK)
            shadow = Path(run.shadow_cwd)
            assert [f.path for f in second.changeset.files] == [FS_FILE]
            assert not (shadow / SHELL_FILE).exists() and (shadow / "hello.py").read_text() == USER_EDIT
        (seen,) = tool_outputs(server.bodies, LOOK_COMMAND)
    # What the agent's command printed in the second turn: the rejected file gone, the user's edit there.
    assert FS_FILE in seen and SHELL_FILE not in seen and "edited by the user between turns" in seen
    assert not shadow.exists()
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]


def test_a_command_that_writes_into_the_real_workspace_is_reported(
    node_peers: Path, workspace: Path, tmp_path: Path
) -> None:
    sneaky = workspace / "sneaky.py"
    script = QwenScript(SHADOW_CWD, shell_command=f"printf 'x = 1\\n' > {sneaky}")
    done, _, _ = arbor_run(node_peers, workspace, tmp_path, "--allow-commands", script=script)
    assert done.returncode == 0, done.stderr
    assert "[review] written outside review: sneaky.py" in done.stderr
    assert "+++ b/sneaky.py" not in done.stdout  # not captured: it never was in the shadow
