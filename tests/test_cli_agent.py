"""A CLI agent (``protocol = "cli"``, or a command line with ``{prompt}``) under ``arbor run --agent``: run
once in a shadow of the workspace with the task as one argument, its output streamed, and whatever it
wrote — with its own file writes or a shell command — captured and printed as a change set, the workspace
untouched until ``--apply``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.git import git, hello_repo

RUN_TIMEOUT_S = 120
TASK = "add two files; $(touch pwned) `touch pwned2` && echo 'quoted'"
AGENT = textwrap.dedent(
    """
    import subprocess, sys
    task = sys.argv[sys.argv.index("--message") + 1]
    print("agent got:", task, flush=True)
    open("task.txt", "w").write(task + "\\n")
    subprocess.run("printf 'x = 1\\\\n' > made_by_shell.py", shell=True, check=True)
    print("agent warns on stderr", file=sys.stderr, flush=True)
    sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
    """
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def run(workspace: Path, agent: str, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, *flags, TASK]
    return subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


def agent_line(tmp_path: Path, *extra: str) -> str:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    return shlex.join([sys.executable, str(script), "--message", "{prompt}", *extra])


def test_a_cli_agents_writes_are_captured_in_its_shadow_and_the_workspace_untouched(
    workspace: Path, tmp_path: Path
) -> None:
    done = run(workspace, agent_line(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"agent got: {TASK}" in done.stdout  # its output, streamed; the task one argument, as written
    assert "agent warns on stderr" in done.stderr and "[done] exit 0" in done.stderr
    assert "+++ b/made_by_shell.py" in done.stdout and "+x = 1" in done.stdout
    assert "+++ b/task.txt" in done.stdout and f"+{TASK}" in done.stdout
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]  # nothing written, no shell injection
    assert "nothing was written" in done.stderr
    assert git(workspace, "worktree", "list").count("\n") == 1  # the shadow is gone


def test_with_apply_head_holds_what_the_cli_agent_wrote(workspace: Path, tmp_path: Path) -> None:
    done = run(workspace, agent_line(tmp_path), "--apply")
    assert done.returncode == 0, done.stderr
    assert sorted(git(workspace, "show", "--name-only", "--format=", "HEAD").split()) == [
        "made_by_shell.py",
        "task.txt",
    ]
    assert (workspace / "task.txt").read_text() == TASK + "\n"
    assert git(workspace, "status", "--porcelain") == ""


def test_a_cli_agent_that_fails_says_so_and_applies_nothing(workspace: Path, tmp_path: Path) -> None:
    done = run(workspace, agent_line(tmp_path, "3"), "--apply")
    assert done.returncode != 0
    assert "[done] exit 3" in done.stderr
    assert "not applied: the agent did not finish its turn (it exited with code 3)" in done.stderr
    assert "+++ b/made_by_shell.py" in done.stdout  # shown, for the record
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]


def test_a_configured_cli_agent_is_named_by_its_table(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    user_config(  # type: ignore[operator]
        f'[agents.scripted]\ncommand = "{sys.executable}"\nargs = ["{script}", "--message", "{{prompt}}"]\n'
        'protocol = "cli"\n'
    )
    done = run(workspace, "scripted")
    assert done.returncode == 0, done.stderr
    assert "+++ b/made_by_shell.py" in done.stdout


def test_the_commit_says_the_task_and_the_agents_name_never_its_command_line(
    workspace: Path, tmp_path: Path
) -> None:
    """Issue 46 item 4: an agent's argv (an API key in it) went into the commit message."""
    key = "sk-SECRET-12345"
    done = run(workspace, agent_line(tmp_path, "--api-key", key), "--apply")
    assert done.returncode == 0, done.stderr
    message = git(workspace, "log", "-1", "--format=%B")
    subject = message.splitlines()[0]
    assert subject == "add two files; $(touch pwned) `touch pwned2` && echo 'quoted'"
    assert "Made by agent in a shadow workspace" in message
    assert "Arbor-Session: " in message
    assert key not in message and "--api-key" not in message and "--message" not in message


def test_a_configured_agents_commit_names_its_table_entry(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    user_config(  # type: ignore[operator]
        f'[agents.scripted]\ncommand = "{sys.executable}"\n'
        f'args = ["{script}", "--api-key", "sk-SECRET-67890", "--message", "{{prompt}}"]\nprotocol = "cli"\n'
    )
    done = run(workspace, "scripted", "--apply")
    assert done.returncode == 0, done.stderr
    message = git(workspace, "log", "-1", "--format=%B")
    assert "Made by scripted in a shadow workspace" in message and "sk-SECRET" not in message


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (
            ["node", "/x/node_modules/@qwen-code/qwen-code/cli.js", "--openai-api-key", "sk-1", "--acp"],
            "qwen-code",
        ),
        (["fake_cli_agent.sh", "--api-key", "sk-SECRET-12345", "{prompt}"], "fake_cli_agent"),
        (["python3", "-m", "aider", "--message", "{prompt}"], "aider"),
        (["node", "/n/@google/gemini-cli/dist/index.js", "--experimental-acp"], "gemini-cli"),
        (["env", "OPENAI_API_KEY=sk-2", "claude", "-p", "{prompt}"], "claude"),
    ],
)
def test_an_agent_given_as_a_command_line_is_named_by_its_program(argv: list[str], name: str) -> None:
    from ide.client.agentproc import command_name

    assert command_name(argv) == name
