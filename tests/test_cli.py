"""The `arbor` command: headless runs, doctor, and plain words for what is not there yet."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_ollama import FakeOllama
from tests.support.procs import children, group_alive

ARBOR = [sys.executable, "-m", "ide"]


def arbor(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ARBOR, *args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def test_run_streams_the_answer_to_stdout(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"thinking": "check the file", "tool_calls": [{"name": "grep", "args": {"pattern": "def "}}]},
            {"content": "There is one function: `greet`."},
        ]
    )
    done = arbor(
        "run",
        "--workspace",
        str(git_workspace),
        "which functions exist?",
        env={"ARBOR_MODEL": f"scripted:{script}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "There is one function: `greet`."
    assert "[thinking] check the file" in done.stderr
    assert "[tool] Grep 'def '" in done.stderr
    assert "[done] end_turn: 2 steps" in done.stderr


def test_run_fails_with_the_fix_when_the_model_is_missing(git_workspace: Path) -> None:
    with FakeOllama(responses=[]) as server:
        done = arbor(
            "run",
            "-w",
            str(git_workspace),
            "hi",
            env={"ARBOR_MODEL": "ollama:llama3.2:1b", "OLLAMA_HOST": server.url},
        )
    assert done.returncode == 1
    assert "ollama pull llama3.2:1b" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_fails_when_the_script_runs_out(git_workspace: Path, write_script: Callable) -> None:
    script = write_script([{"tool_calls": [{"name": "list_dir", "args": {}}]}])
    done = arbor("run", "-w", str(git_workspace), "go", env={"ARBOR_MODEL": f"scripted:{script}"})
    assert done.returncode == 1
    assert "ran out after 1 responses" in done.stderr


def test_doctor_prints_sources_and_fixes(git_workspace: Path) -> None:
    (git_workspace / ".arbor").mkdir()
    (git_workspace / ".arbor" / "config.toml").write_text("[lats]\nmax_depth = 4\n")
    with FakeOllama(responses=[], models={"qwen2.5-coder:7b": {"tools": False}}) as server:
        done = arbor(
            "doctor",
            "-w",
            str(git_workspace),
            env={
                "OLLAMA_HOST": server.url,
                "ARBOR_MODEL": "ollama:qwen2.5-coder:7b",
                "ARBOR_LATS_EXPANSION_MODEL": "ollama:missing:1b",
            },
        )
    out = done.stdout
    assert done.returncode == 1, out
    assert "lats.max_depth" in out and ".arbor/config.toml:2" in out
    assert "← env ARBOR_LATS_EXPANSION_MODEL" in out
    assert "llm.lats.selection" in out and "← default" in out
    assert "[ok  ] ollama:qwen2.5-coder:7b: model server reachable" in out
    assert "[FAIL] ollama:qwen2.5-coder:7b: model supports tools" in out
    assert 'fix: Run "ollama pull missing:1b"' in out
    assert "git present" in out


def _data_dir_row(out: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith("data_dir "))


def test_doctor_shows_the_data_dir_it_uses_and_where_it_comes_from(tmp_path: Path, user_config) -> None:
    env = {"ARBOR_MODEL": "scripted:/nowhere.jsonl"}
    done = arbor("doctor", "-w", str(tmp_path), env={**env, "ARBOR_DATA_DIR": str(tmp_path / "elsewhere")})
    row = _data_dir_row(done.stdout)
    assert row.split()[1:] == [str(tmp_path / "elsewhere"), "←", "env", "ARBOR_DATA_DIR"]

    home = {k: v for k, v in os.environ.items() if k != "ARBOR_DATA_DIR"}
    home.update(env, XDG_DATA_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    default = subprocess.run(
        [*ARBOR, "doctor", "-w", str(tmp_path)], capture_output=True, text=True, timeout=90, env=home
    )
    row = _data_dir_row(default.stdout)
    assert str(tmp_path / "xdg" / "arbor") in row and "← default" in row and "(unset)" not in row

    config = user_config(f'data_dir = "{tmp_path / "configured"}"\n')
    done = subprocess.run(
        [*ARBOR, "doctor", "-w", str(tmp_path)], capture_output=True, text=True, timeout=90, env=home
    )
    row = _data_dir_row(done.stdout)
    assert str(tmp_path / "configured") in row and f"← {config}:1" in row


def test_doctor_reports_a_bad_setting_plainly(tmp_path: Path) -> None:
    done = arbor("doctor", "-w", str(tmp_path), env={"ARBOR_AGENT_MAX_STEPS": "many"})
    assert done.returncode == 2
    assert "ARBOR_AGENT_MAX_STEPS" in done.stderr and "agent.max_steps" in done.stderr
    assert "Traceback" not in done.stderr


def test_mcp_refuses_a_workspace_that_is_not_there(tmp_path: Path) -> None:
    done = arbor("mcp", "--workspace", str(tmp_path / "nope"))
    assert done.returncode == 2
    assert "is not a directory" in done.stderr


def test_help_lists_the_commands() -> None:
    done = arbor("--help")
    assert done.returncode == 0
    for command in ("acp", "run", "doctor", "index", "symbols", "mcp", "workflows"):
        assert command in done.stdout


def test_help_names_open_and_agent_of_the_window() -> None:
    """`arbor --open` is the way to see a recorded tree or an eval report with no model: help says so."""
    done = arbor("--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--open" in text and ".arbor-tree.jsonl" in text and "report" in text
    assert "--agent" in text


def test_open_names_a_missing_tree_file(tmp_path: Path) -> None:
    done = arbor("--open", str(tmp_path / "run.arbor-tree.jsonl"))
    assert done.returncode == 2
    assert "run.arbor-tree.jsonl is not a file" in done.stderr


@pytest.mark.own_interpreter  # reads the backend's children from /proc
def test_sigterm_ends_a_run_and_leaves_no_backend_behind(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "list_dir", "args": {}}]},
            {"content": "never sent", "latency_ms": 60_000},  # the turn is mid-call when SIGTERM comes
        ]
    )
    run = subprocess.Popen(
        [*ARBOR, "run", "-w", str(git_workspace), "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ARBOR_MODEL": f"scripted:{script}"},
    )
    try:
        assert run.stderr is not None
        for line in run.stderr:  # the first tool call is shown: the session and its turn are under way
            if line.startswith("[tool]"):
                break
        backends = children(run.pid)
        assert backends, "arbor run has its backend"
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 130  # cancelled, as Ctrl-C
    finally:
        run.kill()
    assert not any(group_alive(pid) for pid in backends), "the backend's process group is gone"


def test_run_agent_flags_that_only_fit_one_kind_of_agent_are_refused(tmp_path: Path) -> None:
    done = arbor("run", "-w", str(tmp_path), "--allow-commands", "task")
    assert done.returncode == 2 and "--allow-commands is for another agent's commands" in done.stderr
    done = arbor("run", "-w", str(tmp_path), "--agent", sys.executable, "--mode", "lats", "task")
    assert done.returncode == 2 and "--mode" in done.stderr and "takes none" in done.stderr
    done = arbor("run", "-w", str(tmp_path), "--agent", "no-such-agent-program --acp", "task")
    assert done.returncode == 2 and "no program 'no-such-agent-program'" in done.stderr


def test_run_agent_needs_git_and_says_so_before_the_agent_starts(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    agent = f"{sys.executable} -c \"open('{marker}', 'w')\""
    done = arbor("run", "-w", str(tmp_path), "--agent", agent, "task")
    assert done.returncode == 1
    assert "git init" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()


def test_run_agent_that_dies_at_start_is_reported_and_its_shadow_removed(git_workspace: Path) -> None:
    agent = f"{sys.executable} -c \"import sys; sys.stderr.write('no key configured\\\\n'); sys.exit(3)\""
    done = arbor("run", "-w", str(git_workspace), "--agent", agent, "task")
    assert done.returncode == 1
    assert "stopped unexpectedly" in done.stderr and "no key configured" in done.stderr
    worktrees = subprocess.run(
        ["git", "worktree", "list"], cwd=git_workspace, capture_output=True, text=True, check=True
    ).stdout
    assert worktrees.count("\n") == 1


def test_the_arbor_process_freezes_what_is_left_before_it_exits(monkeypatch: Any) -> None:
    """Every way of starting ``arbor`` as a process goes through ``entry``, which runs the command and then
    moves what is still alive out of the collector's reach, so the interpreter's teardown does not walk it
    (0.6 s of CPU at every backend exit)."""
    import gc
    import tomllib

    from ide import cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 7)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    assert cli.entry() == 7
    assert calls == ["main", "freeze"]

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["arbor"] == "ide.cli:entry"
    for launcher in (root / "ide" / "__main__.py", root / "packaging" / "entry.py"):
        assert "raise SystemExit(entry())" in launcher.read_text(), launcher
