"""``review.confine_agents``: another agent under bubblewrap writes only its shadow. A CLI agent that
writes into the real workspace by its absolute path is stopped by the file system (read-only), where
unconfined the same write lands and is reported as written outside review; a confined start that cannot
be (no bwrap, a writable directory holding the workspace) is refused with the reason, never run
unconfined."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ide import sandbox
from tests.support.git import hello_repo

RUN_TIMEOUT_S = 120
AGENT = textwrap.dedent(
    """
    import sys
    workspace = sys.argv[1]
    open("in_shadow.py", "w").write("x = 1\\n")
    try:
        open(workspace + "/sneaky.py", "w").write("y = 2\\n")
        print("wrote the workspace")
    except OSError as exc:
        print("refused:", exc.strerror)
    """
)
BWRAP_OK, BWRAP_SAID = sandbox.bwrap_status()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"{BWRAP_SAID} ({sandbox.INSTALL})")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def run_agent(workspace: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = shlex.join([sys.executable, str(script), str(workspace), "{prompt}"])
    argv = [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, "go"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


@needs_bwrap
def test_a_confined_agent_cannot_write_the_workspace_and_its_shadow_work_is_captured(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    user_config("[review]\nconfine_agents = true\n")  # type: ignore[operator]
    done = run_agent(workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "confined with bwrap" in done.stderr
    assert "refused: Read-only file system" in done.stdout
    assert "+++ b/in_shadow.py" in done.stdout
    assert not (workspace / "sneaky.py").exists()
    assert "written outside review" not in done.stderr


def test_unconfined_the_same_write_lands_and_is_reported(workspace: Path, tmp_path: Path) -> None:
    done = run_agent(workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote the workspace" in done.stdout and (workspace / "sneaky.py").exists()
    assert "[review] written outside review: sneaky.py" in done.stderr


@needs_bwrap
def test_a_writable_directory_holding_the_workspace_is_refused(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    user_config(f'[review]\nconfine_agents = true\nagent_writable = ["{tmp_path}"]\n')  # type: ignore[operator]
    done = run_agent(workspace, tmp_path)
    assert done.returncode != 0
    assert f"review.agent_writable: {tmp_path} holds the workspace" in done.stderr
    assert not (workspace / "sneaky.py").exists()


def test_without_bwrap_a_confined_start_is_refused_with_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert sandbox.bwrap_status() == (False, "bwrap is not installed")
    with pytest.raises(sandbox.ConfineError, match=r"bwrap is not installed \(apt-get install bubblewrap"):
        sandbox.confined(["agent"], str(tmp_path), str(tmp_path), tmp_path, [])


def test_doctor_says_whether_agents_can_be_confined(monkeypatch: pytest.MonkeyPatch) -> None:
    from ide.doctor import confine_check

    if BWRAP_OK:
        assert confine_check(required=True).ok is True
        assert "can be confined" in confine_check(required=False).detail
    monkeypatch.setattr(shutil, "which", lambda name: None)
    missing = confine_check(required=True)
    assert missing.ok is False and missing.fix is not None and "apt-get install bubblewrap" in missing.fix
    assert confine_check(required=False).ok is None  # optional while the setting is off
