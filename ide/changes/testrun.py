"""Run a workspace's tests against a change set, in a scratch worktree, with a timeout.

The command is split like a shell would (``shlex``) and run as an argument list, never through a shell.
It runs in its own process session under the keeper (so a timeout, a cancel or the end of the backend kills
everything it started: :mod:`ide.lifetime`), with the
allow-listed environment of :mod:`ide.childenv` (never Arbor's keys), its output is captured, and the
worktree is removed afterwards — also when the caller is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ide import childenv
from ide.changes.overlay import ChangeSet
from ide.changes.worktree import scratch_worktree
from ide.lifetime import kept

OUTPUT_CAP = 64_000
"""Bytes of test output kept (the tail: that is where failures are summarised)."""


@dataclass
class TestRun:
    __test__ = False  # not a pytest class

    command: str
    passed: bool
    exit_code: int | None
    output: str
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def summary(self) -> str:
        """One line: exit status or timeout, plus the output's last line."""
        if self.timed_out:
            return f"timed out after {self.seconds:g} s"
        lines = [line.strip() for line in self.output.strip().splitlines() if line.strip()]
        tail = lines[-1][:300] if lines else ""
        return f"exit status {self.exit_code}" + (f": {tail}" if tail else "")


def detect_test_command(root: Path) -> str | None:
    """The test command a workspace most likely uses, or None: pytest, npm test, go test, cargo test."""
    root = Path(root)
    pyproject = root / "pyproject.toml"
    has_py_tests = any((root / d).is_dir() for d in ("tests", "test")) or any(root.glob("test_*.py"))
    if (pyproject.is_file() and "pytest" in pyproject.read_text(errors="replace")) or (
        has_py_tests and any(root.glob("**/*.py"))
    ):
        return "python -m pytest -q"
    if (root / "setup.cfg").is_file() or (root / "tox.ini").is_file() or (root / "pytest.ini").is_file():
        return "python -m pytest -q"
    package = root / "package.json"
    if package.is_file():
        with contextlib.suppress(ValueError, OSError):
            scripts = json.loads(package.read_text()).get("scripts", {})
            if isinstance(scripts, dict) and scripts.get("test"):
                return "npm test --silent"
    if (root / "go.mod").is_file():
        return "go test ./..."
    if (root / "Cargo.toml").is_file():
        return "cargo test"
    return None


def command_env(
    environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """The environment a test run or an agent's command gets: the allow-listed base set of ``environ``
    (default: ours), :func:`ide.childenv.command_env` — an allowed test run executes the repository's
    code: it gets what it needs to run, not the keys Arbor uses to reach model servers, a database URL
    with its password, nor the SSH agent that would let it push as the user."""
    return childenv.command_env(cwd=cwd, environ=environ)


async def run_tests(changeset: ChangeSet, command: str, timeout_s: float) -> TestRun:
    """Run ``command`` in a scratch worktree holding ``changeset``; cancellation kills it and cleans up."""
    worktree = scratch_worktree(changeset)
    entering = asyncio.ensure_future(asyncio.to_thread(worktree.__enter__))
    try:
        workdir = await asyncio.shield(entering)
    except asyncio.CancelledError:
        # The checkout goes on in its thread; remove it once it is there.
        entering.add_done_callback(
            lambda done: done.exception() is None and worktree.__exit__(None, None, None)
        )
        raise
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return TestRun(command, False, None, f"cannot split the command into arguments: {exc}")
        if not argv:
            return TestRun(command, False, None, "the test command is empty")
        env = command_env(cwd=workdir)
        try:
            # An argv list, never a shell: the command line cannot smuggle in pipes, && or $(…).
            process = await asyncio.create_subprocess_exec(
                *kept(argv, env, workdir),
                cwd=workdir,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return TestRun(command, False, None, f"cannot run {argv[0]}: {exc.strerror or exc}")
        try:
            async with asyncio.timeout(timeout_s):
                output, _ = await process.communicate()
        except TimeoutError:
            return TestRun(command, False, None, "", timed_out=True, seconds=timeout_s)
        finally:
            if process.returncode is None:
                kill_group(process)
                await process.wait()
        text = output.decode("utf-8", errors="replace")[-OUTPUT_CAP:]
        return TestRun(
            command,
            process.returncode == 0,
            process.returncode,
            text,
            seconds=round(loop.time() - started, 3),
        )
    finally:
        await asyncio.to_thread(worktree.__exit__, None, None, None)


def kill_group(process: asyncio.subprocess.Process | subprocess.Popen[bytes]) -> None:
    """Kill a command and anything it started (it runs in its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
