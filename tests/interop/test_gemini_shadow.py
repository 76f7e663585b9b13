"""Gemini CLI 0.61.0, a real ACP agent from npm, driven by ``arbor run --agent gemini`` (an ``[agents]``
entry holding its endpoint and key, as a user writes it) against a scripted Gemini API endpoint: the file its
``write_file`` writes through ``fs/write_text_file`` is captured from the shadow workspace it was given and
printed as the change set while the workspace is untouched, and ``--apply`` commits it; without
``--allow-commands`` its write is refused with a note. A new file is made too (its read of the missing
file answered with empty text, as Zed answers it: tests/support/gemini.py says why)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.fake_gemini import FakeGemini
from tests.support.foreign_run import arbor_agent_run
from tests.support.gemini import (
    DONE,
    EDIT_TASK,
    EDITED_TEXT,
    MAKE_TASK,
    NEW_FILE,
    NEW_TEXT,
    GeminiScript,
    gemini_entry,
    gemini_home,
    gemini_peers,  # noqa: F401 (a fixture)
)
from tests.support.git import git, hello_repo
from tests.support.qwen import SHADOW_CWD

RUN_TIMEOUT_S = 180


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def arbor_run(
    peers: Path,
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
    script: GeminiScript,
    *flags: str,
) -> tuple[subprocess.CompletedProcess[str], FakeGemini]:
    home = gemini_home(tmp_path)
    with FakeGemini(side=script) as server:
        user_config(gemini_entry(peers, server.url))
        done = arbor_agent_run(
            workspace, "gemini", script.task, *flags, env={"HOME": str(home)}, timeout=RUN_TIMEOUT_S
        )
    return done, server


def test_a_new_file_by_gemini_is_captured_and_the_workspace_untouched(
    gemini_peers: Path,  # noqa: F811 (the fixture imported above)
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    script = GeminiScript(SHADOW_CWD)
    done, server = arbor_run(gemini_peers, workspace, tmp_path, user_config, script, "--allow-commands")
    assert done.returncode == 0, done.stderr
    assert all(request.method == "streamGenerateContent" for request in server.requests)
    (answer,) = script.responses
    assert "error" not in answer, answer
    assert f"+++ b/{NEW_FILE}" in done.stdout and f"+{NEW_TEXT}" in done.stdout
    assert f"{NEW_FILE} (added)" in done.stderr
    assert "nothing was written" in done.stderr
    assert sorted(os.listdir(workspace)) == [".git", "hello.py"]
    assert git(workspace, "status", "--porcelain") == ""


def test_apply_commits_the_new_file(
    gemini_peers: Path,  # noqa: F811 (the fixture imported above)
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    script = GeminiScript(SHADOW_CWD)
    done, _ = arbor_run(gemini_peers, workspace, tmp_path, user_config, script, "--allow-commands", "--apply")
    assert done.returncode == 0, done.stderr
    assert (workspace / NEW_FILE).exists(), script.responses
    assert "applied batch" in done.stderr
    assert git(workspace, "show", f"HEAD:{NEW_FILE}") == NEW_TEXT
    assert git(workspace, "log", "-1", "--format=%B").startswith(f"{MAKE_TASK}\n")
    assert git(workspace, "status", "--porcelain") == ""


def test_what_gemini_writes_is_captured_and_the_workspace_untouched(
    gemini_peers: Path,  # noqa: F811 (the fixture imported above)
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    script = GeminiScript(SHADOW_CWD, EDIT_TASK, "hello.py", EDITED_TEXT)
    done, server = arbor_run(gemini_peers, workspace, tmp_path, user_config, script, "--allow-commands")
    assert done.returncode == 0, done.stderr
    assert DONE in done.stdout
    # Its key and endpoint came from the [agents] entry; the model named on its command line was asked.
    assert {request.model for request in server.requests} == {"gemini-2.5-flash"}
    (answer,) = script.responses
    assert "error" not in answer and "Successfully" in answer, answer
    assert '-print("hello")' in done.stdout and f"+{EDITED_TEXT}" in done.stdout
    assert "Writing to hello.py: allowed once" in done.stderr
    assert "hello.py (modified)" in done.stderr and "nothing was written" in done.stderr
    assert "Traceback" not in done.stderr
    assert (workspace / "hello.py").read_text() == 'print("hello")\n'
    assert git(workspace, "status", "--porcelain") == ""
    # It worked in the shadow: the cwd it told the model, never the workspace; the shadow is gone after.
    assert len(script.cwds) == 1
    assert all(str(workspace) not in str(request.body) for request in server.requests)
    assert not Path(script.cwds.pop()).exists()


def test_without_allow_commands_its_write_is_refused_with_a_note(
    gemini_peers: Path,  # noqa: F811 (the fixture imported above)
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    script = GeminiScript(SHADOW_CWD, EDIT_TASK, "hello.py", EDITED_TEXT)
    done, _ = arbor_run(gemini_peers, workspace, tmp_path, user_config, script)
    assert done.returncode == 0, done.stderr
    assert "Writing to hello.py: refused (run with --allow-commands" in done.stderr
    assert "the agent changed nothing" in done.stderr
    assert (workspace / "hello.py").read_text() == 'print("hello")\n'


def test_apply_commits_what_gemini_wrote(
    gemini_peers: Path,  # noqa: F811 (the fixture imported above)
    workspace: Path,
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    script = GeminiScript(SHADOW_CWD, EDIT_TASK, "hello.py", EDITED_TEXT)
    done, _ = arbor_run(gemini_peers, workspace, tmp_path, user_config, script, "--allow-commands", "--apply")
    assert done.returncode == 0, done.stderr
    assert "applied batch" in done.stderr
    assert git(workspace, "show", "HEAD:hello.py") == EDITED_TEXT
    assert git(workspace, "log", "-1", "--format=%B").startswith(f"{EDIT_TASK}\n")
    assert git(workspace, "status", "--porcelain") == ""
