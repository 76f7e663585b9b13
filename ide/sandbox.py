"""Confining another agent with bubblewrap (``bwrap``): it then writes only its shadow workspace.

The shadow makes a cooperative agent's turn reviewable; a command it runs can still write anywhere the
user can. With ``review.confine_agents`` the agent's process is started under ``bwrap``: the whole file
system read-only (the workspace and ``/tmp`` too), ``/dev`` and ``/proc`` of its own, and writable only
the shadow, a private scratch directory given as ``TMPDIR``, and the directories
``review.agent_writable`` names (its own config and caches; one holding the workspace is refused). The
network is left as it is — the agent needs its model — and so are processes (``--die-with-parent``: it
ends with Arbor). Where ``bwrap`` is missing or cannot make a sandbox (no user namespaces), a confined
start is refused with the reason, never run unconfined.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

BWRAP = "bwrap"
PROBE_TIMEOUT_S = 10.0
INSTALL = "apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)"


class ConfineError(OSError):
    """The agent cannot be started confined (an OSError: as a command that cannot be run); says why."""


def bwrap_status() -> tuple[bool, str]:
    """Whether ``bwrap`` can confine a process here, with its version, or why it cannot."""
    path = shutil.which(BWRAP)
    if path is None:
        return False, "bwrap is not installed"
    try:
        probe = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not be run: {exc}"
    if probe.returncode != 0:
        said = probe.stderr.strip().splitlines()[-1:] or [f"exit {probe.returncode}"]
        return False, f"bwrap cannot make a sandbox here: {said[0]}"
    return True, version or path


def confined(
    command: Sequence[str], shadow: str, scratch: str, workspace: Path, writable: Sequence[str]
) -> list[str]:
    """``command`` as run under ``bwrap`` in ``shadow``, with ``scratch`` its ``TMPDIR`` (see the module
    docstring); ConfineError says why it cannot be."""
    ok, said = bwrap_status()
    if not ok:
        raise ConfineError(f"review.confine_agents is on, but {said} ({INSTALL})")
    root = workspace.resolve()
    argv = [shutil.which(BWRAP) or BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--bind", shadow, shadow, "--bind", scratch, scratch, "--setenv", "TMPDIR", scratch]
    for entry in writable:
        path = Path(entry).expanduser().resolve()
        if not path.is_dir():
            raise ConfineError(f"review.agent_writable: {entry} is not a directory")
        if path == root or path in root.parents:
            raise ConfineError(
                f"review.agent_writable: {entry} holds the workspace {root}: a confined agent could write it"
            )
        argv += ["--bind", str(path), str(path)]
    return [*argv, "--die-with-parent", "--chdir", shadow, "--", *command]
