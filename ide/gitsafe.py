"""Git that runs nothing from the repository: the argv every git call of Arbor starts with.

A repository is input, not configuration. Its ``.git/config`` (a cloned tarball's, or one a ``.git`` file
points at) can name programs git runs on its own: ``core.fsmonitor`` on any index refresh, hooks on
commits and ref updates, clean/smudge filter drivers on ``update-index``/``hash-object``/checkout,
textconv and external diff drivers on ``diff``/``log -G``, ``gpg.program`` when ``commit.gpgSign`` is on.
Every git Arbor runs gets ``-c core.fsmonitor=false -c core.hooksPath=<an empty directory>`` and, for
each such driver the repository's own (local or worktree) config defines, an empty override — which git
treats as unset. Drivers from the user's global config (git-lfs, say) stay honoured.

Qt-free and dependency-free: the window's file list runs git through it too.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

BASE_CONFIG = ("core.fsmonitor=false", "core.untrackedCache=false", "protocol.allow=never")
"""Always: no fsmonitor hook, no cache refresh that could start one, and no fetching anywhere."""

_COMMAND_KEYS = re.compile(
    r"^(?:filter\..+\.(?:clean|smudge|process)"
    r"|diff\..+\.(?:textconv|command)"
    r"|merge\..+\.driver"
    r"|diff\.external"
    r"|core\.(?:sshcommand|pager|editor|askpass|alternaterefscommand)"
    r"|credential\..*helper"
    r"|sequence\.editor)$",
    re.IGNORECASE,
)
"""Config keys whose value is a program git may run; blanked when the repository itself sets them."""
_GPG_KEYS = re.compile(r"^gpg\.(?:[^.]+\.)?program$", re.IGNORECASE)


def hooks_dir() -> str:
    """An empty directory for ``core.hooksPath`` (made once per process, never inside a repository)."""
    return _hooks_dir()


@lru_cache(maxsize=1)
def _hooks_dir() -> str:
    # One per user, reused; checked to be ours and empty, since /tmp is shared with other users.
    path = Path(tempfile.gettempdir()) / f"arbor-no-hooks-{os.getuid() if hasattr(os, 'getuid') else 0}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
        mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
        if mine and path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
            return str(path)
    except OSError:
        pass
    fallback = tempfile.mkdtemp(prefix="arbor-no-hooks-")
    atexit.register(shutil.rmtree, fallback, True)
    return fallback


def _flags(config: tuple[str, ...]) -> list[str]:
    return [part for item in config for part in ("-c", item)]


def base_argv() -> list[str]:
    """``git`` with the settings that hold in any directory (used to read the repository's config)."""
    return ["git", *_flags((*BASE_CONFIG, f"core.hooksPath={hooks_dir()}"))]


def repository_overrides(cwd: str | Path) -> list[str]:
    """``-c KEY=`` for every program-naming key the repository's own config sets (none outside git)."""
    config = _local_config(str(cwd))
    if config is None:
        return []
    try:
        mtime = os.stat(config).st_mtime_ns
    except OSError:
        mtime = 0
    return list(_overrides(str(cwd), config, mtime))


def _read_git(cwd: str, *args: str) -> str | None:
    """Stdout of a git command that only reads (config, paths), or None when it fails."""
    try:
        done = subprocess.run(
            [*base_argv(), *args], cwd=cwd, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _local_config(cwd: str) -> str | None:
    """The repository's own config file, looked up every time: a ``.git`` file may appear meanwhile."""
    found = _read_git(cwd, "rev-parse", "--path-format=absolute", "--git-path", "config")
    return (found or "").strip() or None


@lru_cache(maxsize=64)
def _overrides(cwd: str, config: str, mtime: int) -> tuple[str, ...]:
    """Keyed by the config file's mtime: an edited repository config is read again."""
    del config, mtime
    listing = _read_git(cwd, "config", "--list", "--show-scope", "--name-only", "--includes")
    if listing is None:
        return ()
    overrides: dict[str, None] = {}
    gpg = False
    for line in listing.splitlines():
        scope, _, key = line.partition("\t")
        if scope not in ("local", "worktree"):
            continue
        if _COMMAND_KEYS.match(key):
            overrides.setdefault(f"{key}=", None)
        elif _GPG_KEYS.match(key):
            gpg = True
    flags = _flags(tuple(overrides))
    if gpg:
        # A repository that names its own signing program would run it on our commit: Arbor's commits
        # in such a repository are left unsigned rather than signed by an unknown program.
        flags += ["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"]
    return tuple(flags)


def git_argv(cwd: str | Path, *args: str) -> list[str]:
    """The full argv of ``git ARGS`` run in ``cwd``: nothing in the repository can make it run a program."""
    return [*base_argv(), *repository_overrides(cwd), *args]
