"""Git that runs nothing from the repository: the argv and environment of every git call Arbor makes.

A repository is input, not configuration. Its ``.git/config`` (a cloned tarball's, one a ``.git`` file
points at, or a worktree file it includes) can name programs git runs on its own: ``core.fsmonitor`` on
any index refresh, hooks on commits and ref updates, clean/smudge filter drivers on
``update-index``/``hash-object``/checkout, textconv and external diff drivers on ``diff``/``log -G``,
``gpg.program`` when ``commit.gpgSign`` is on, and a remote helper or an ``ext::`` command when a promisor
remote lazily "fetches" a missing object. Git 2.39 cannot be told to skip the repository's config, and
a blacklist of known keys misses the next one, so the guard is by construction:

- **No transport at all.** ``GIT_ALLOW_PROTOCOL`` is set to the empty list — git then treats every
  protocol (``file``, ``ssh``, ``ext``, any ``<helper>::``) as ``never``, overriding the repository's
  ``protocol.*.allow``; ``protocol.allow=never`` and every ``protocol.*.allow`` the repository sets are
  forced to ``never`` too, ``GIT_NO_LAZY_FETCH=1`` stops lazy fetches on git ≥ 2.44 and
  ``GIT_TERMINAL_PROMPT=0`` any prompt. Arbor never fetches, so every remote-shaped key (``url``,
  ``insteadOf``, ``promisor``, ``uploadpack``, proxies, ``core.sshCommand``, ``remote.*.vcs``) is inert
  whatever its value. (``file`` is not allowed either: a local "fetch" runs ``upload-pack`` in another
  repository, under that repository's config.)
- **Program-naming keys blanked by shape.** Every key of the repository's own (local or worktree) scope,
  and of the files those include, whose variable name says it holds a program — ``clean``, ``smudge``,
  ``process``, ``textconv``, ``driver``, ``external``, anything ending in ``cmd``, ``command``,
  ``program``, ``helper``, ``editor``, ``pager``, ``askpass``, ``proxy``, ``fsmonitor``, ``hookspath``,
  plus all of ``pager.*`` and ``filter.*.required`` — is set to the empty value, which git treats as
  unset, whatever its section or subsection. Drivers from the user's global config (git-lfs) are kept.
- Always ``core.fsmonitor=false``, ``core.untrackedCache=false`` and ``core.hooksPath=<an empty
  directory>``.

Keys are passed exactly with ``--config-env=KEY=VAR`` (git splits that at the *last* ``=``; ``-c KEY=``
splits at the first, so ``-c filter.a=b.clean=`` set the wrong key). The variables live in
:func:`git_env`: a git started from :func:`git_argv` without that environment stops with "missing
environment variable" instead of running unguarded. Filters cannot also be switched off by attribute on
git 2.39 (``--attr-source`` is 2.40+); Arbor hashes and commits bytes itself (``--no-filters``).

The repository's config is read once per config state: the git-dir lookup is cached by the ``stat`` of
the places git's discovery looks at, and the overrides by the ``stat`` (mtime, size, inode) of every
file of the include chain — a file an accepted edit fills later is read again, an unchanged one costs
only stats. :func:`git_env` also leaves out the caller's API keys, tokens and passwords.

Other modules run git through :func:`run_git`, which builds the two together
(``tests/test_gitsafe_run.py`` fails on a module of ``ide/`` that pairs them by hand). Qt-free and
dependency-free: the window's file list runs git through it too.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal, overload

UNSET_VAR = "ARBOR_GIT_UNSET"
"""Holds the empty value the program-naming keys of the repository get (git reads empty as unset)."""
NEVER_VAR = "ARBOR_GIT_NEVER"
"""Holds ``never``: protocol.allow, and every protocol.*.allow the repository sets."""

BASE_CONFIG = ("core.fsmonitor=false", "core.untrackedCache=false")
"""Always: no fsmonitor hook, and no cache refresh that could start one."""

HARDENED_ENV = {
    UNSET_VAR: "",
    NEVER_VAR: "never",
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_TERMINAL_PROMPT": "0",
}
"""What every git Arbor starts has in its environment (see the module docstring)."""

_PROGRAM_VARIABLE = re.compile(
    r"(?:clean|smudge|process|textconv|driver|external"
    r"|.*(?:cmd|command|program|helper|editor|pager|askpass|proxy|fsmonitor|hookspath))",
    re.IGNORECASE,
)
"""Variable names (the part after the last dot) that hold a program git may run."""
_GPG = re.compile(r"^gpg\.(?:.*\.)?program$", re.IGNORECASE)

SECRET_NAME = re.compile(
    r"(?i)(api_?key|token|secret|passw(or)?d|credential|private_?key|session_?key|^aws_|_auth$|^auth_|^ssh_auth_sock$|^gpg_agent)"
)
"""Environment variable names a command from the workspace (a test run, an agent's command, git itself)
is not given: it gets what it needs to run, not the keys Arbor uses to reach model servers, nor the SSH
agent that would let it push as the user."""


def without_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: ours) without API keys, tokens and passwords."""
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items() if not SECRET_NAME.search(name)}


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a git of :func:`git_argv`: ``environ`` (default: ours) without secrets, plus
    the hardening variables. Without it such a git refuses to start."""
    return {**without_secrets(environ), **HARDENED_ENV}


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


def base_argv() -> list[str]:
    """``git`` with the settings that hold in any directory (run it with :func:`git_env`)."""
    flags = [part for item in BASE_CONFIG for part in ("-c", item)]
    # protocol.allow comes from the environment: a call without git_env() fails instead of running.
    return ["git", *flags, "-c", f"core.hooksPath={hooks_dir()}", f"--config-env=protocol.allow={NEVER_VAR}"]


def git_argv(cwd: str | Path, *args: str) -> list[str]:
    """The full argv of ``git ARGS`` run in ``cwd`` with :func:`git_env`: nothing in the repository can
    make it run a program."""
    overrides = repository_overrides(cwd)
    # The repository's blanks first: the fixed settings after them win where both name a key.
    return ["git", *overrides, *base_argv()[1:], *args]


@overload
def run_git(
    cwd: str | Path,
    *args: str,
    input: bytes | None = None,
    env_extra: Mapping[str, str] | None = None,
    check: bool = False,
    timeout: float | None = None,
    text: Literal[False] = False,
    overrides: bool = True,
) -> subprocess.CompletedProcess[bytes]: ...


@overload
def run_git(
    cwd: str | Path,
    *args: str,
    input: str | None = None,
    env_extra: Mapping[str, str] | None = None,
    check: bool = False,
    timeout: float | None = None,
    text: Literal[True],
    errors: str | None = None,
    overrides: bool = True,
) -> subprocess.CompletedProcess[str]: ...


def run_git(
    cwd: str | Path,
    *args: str,
    input: bytes | str | None = None,
    env_extra: Mapping[str, str] | None = None,
    check: bool = False,
    timeout: float | None = None,
    text: bool = False,
    errors: str | None = None,
    overrides: bool = True,
) -> subprocess.CompletedProcess[bytes] | subprocess.CompletedProcess[str]:
    """Run ``git ARGS`` in ``cwd`` as every git of Arbor runs: :func:`git_argv` with :func:`git_env`
    (plus ``env_extra``), messages untranslated (``LC_ALL=C``), output captured.

    ``text``, ``errors``, ``check`` and ``timeout`` are :func:`subprocess.run`'s, and so are its
    exceptions (``OSError``, ``TimeoutExpired``, ``CalledProcessError``, and ``ValueError`` for an
    argument holding a NUL). ``overrides=False`` leaves out the repository's blanks (the fixed
    settings still hold): for the reads that compute them, and for a git that needs no repository
    (``merge-file`` in a directory of its own)."""
    argv = git_argv(cwd, *args) if overrides else [*base_argv(), *args]
    return subprocess.run(
        argv,
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**git_env(), "LC_ALL": "C", **(env_extra or {})},
        check=check,
        timeout=timeout,
        text=text,
        errors=errors,
    )


def repository_overrides(cwd: str | Path) -> list[str]:
    """``--config-env`` flags neutralising every program-naming key the repository's own config sets."""
    found = _repository(str(cwd))
    if found is None:
        return []
    return list(_overrides(str(cwd), found))


_Stat = tuple[int, int, int, int] | None
_lock = threading.Lock()
_lookups: dict[tuple[object, ...], tuple[str, ...] | None] = {}
_states: dict[tuple[str, ...], _State] = {}
_DISCOVERY_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
)
_DISCOVERY_NAMES = (".git", ".git/commondir", "HEAD", "objects", "refs", "commondir")
"""What git's discovery looks at in each directory from ``cwd`` up (a ``.git`` entry, or a bare repo;
``commondir`` moves where a repository's config lives)."""


def _stat(path: str) -> _Stat:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_mode)


def _entry(path: str) -> _Stat:
    """What identifies a discovery entry: a file's full stat, a directory's inode (its mtime moves with
    every file git adds or removes inside, such as index.lock)."""
    found = _stat(path)
    if found is not None and stat.S_ISDIR(found[3]):
        return (0, 0, found[2], found[3])
    return found


def _discovery_key(cwd: str) -> tuple[object, ...]:
    here = os.path.abspath(cwd)
    parts: list[object] = [here, *(os.environ.get(name) for name in _DISCOVERY_ENV)]
    while True:
        parts.append(_entry(here))
        parts.extend(_entry(os.path.join(here, name)) for name in _DISCOVERY_NAMES)
        parent = os.path.dirname(here)
        if parent == here:
            return tuple(parts)
        here = parent


def _repository(cwd: str) -> tuple[str, ...] | None:
    """(config, config.worktree, HEAD) of the repository git finds from ``cwd``, or None outside git;
    looked up again whenever anything git's discovery reads changed (a ``.git`` file may appear)."""
    key = _discovery_key(cwd)
    with _lock:
        if key in _lookups:
            return _lookups[key]
    names = ("config", "config.worktree", "HEAD")
    listing = _read_git(
        cwd, "rev-parse", "--path-format=absolute", *(a for n in names for a in ("--git-path", n))
    )
    lines = tuple(line for line in (listing or "").splitlines() if line)
    found = lines if len(lines) == 3 else None
    with _lock:
        if len(_lookups) > 256:
            _lookups.clear()
        _lookups[key] = found
    return found


def _read_git(cwd: str, *args: str) -> str | None:
    """Stdout of a git command that only reads (config, paths), or None when it fails."""
    try:
        done = run_git(cwd, *args, text=True, errors="surrogateescape", timeout=20, overrides=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _overrides(cwd: str, repository: tuple[str, ...]) -> tuple[str, ...]:
    """The flags for ``repository``, read again only when a file of its config chain changed."""
    with _lock:
        known = _states.get(repository)
    if known is not None and known.holds():
        return known.flags
    files = tuple(repository)
    for _attempt in range(4):
        # Files are looked at before git reads them: a change after this is seen by the next call.
        state = _State.of(files)
        listing = _read_git(cwd, "config", "--list", "--show-origin", "--show-scope", "--includes", "-z")
        if listing is None:
            return ()
        chain, state.flags = _parse(cwd, listing)
        now = tuple(dict.fromkeys((*repository, *chain)))
        if now == files:
            with _lock:
                if len(_states) > 256:  # each scratch worktree has its own config.worktree path
                    _states.clear()
                _states[repository] = state
            return state.flags
        files = now  # an include appeared: look at it too, then read again
    return state.flags


RACY_S = 2.0
"""A file changed this recently can change again within the same mtime tick, unseen by ``stat``."""


class _State:
    """The config chain's files as last read: their ``stat`` and, for a file modified within ``RACY_S``
    of that read (where a second write may keep mtime and size), its bytes."""

    def __init__(self, files: tuple[str, ...], stats: tuple[_Stat, ...], contents: tuple[bytes | None, ...]):
        self.files, self.stats, self.contents = files, stats, contents
        self.flags: tuple[str, ...] = ()

    @classmethod
    def of(cls, files: tuple[str, ...]) -> _State:
        stats = tuple(map(_stat, files))
        recent = time.time_ns() - int(RACY_S * 1e9)
        contents = tuple(
            _read(f) if s is not None and s[0] > recent else None for f, s in zip(files, stats, strict=True)
        )
        return cls(files, stats, contents)

    def holds(self) -> bool:
        """No file of the chain changed since it was read."""
        if tuple(map(_stat, self.files)) != self.stats:
            return False
        racy = [(f, c) for f, c in zip(self.files, self.contents, strict=True) if c is not None]
        if not racy:
            return True
        if any(_read(f) != c for f, c in racy):
            return False
        recent = time.time_ns() - int(RACY_S * 1e9)
        if all(s is None or s[0] <= recent for s in self.stats):
            # Old enough now that any further write moves mtime: stats alone decide from here on.
            self.contents = tuple(None for _ in self.files)
        return True


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _parse(cwd: str, listing: str) -> tuple[list[str], tuple[str, ...]]:
    """The files of the repository's config chain (origins and include targets, existing or not), and
    the override flags for its program-naming keys."""
    fields = listing.split("\0")
    chain: list[str] = []
    overrides: dict[str, None] = {}
    gpg = False
    for index in range(0, len(fields) - 2, 3):
        scope, origin, entry = fields[index : index + 3]
        if scope not in ("local", "worktree"):
            continue
        key, _, value = entry.partition("\n")
        source = origin.removeprefix("file:")
        if origin.startswith("file:"):
            chain.append(os.path.join(cwd, source))
        lowered = key.lower()
        variable = lowered.rpartition(".")[2]
        if lowered == "include.path" or (lowered.startswith("includeif.") and variable == "path"):
            target = os.path.expanduser(value)
            chain.append(os.path.join(os.path.dirname(os.path.join(cwd, source)), target))
        elif lowered.startswith("protocol.") and variable == "allow":
            overrides.setdefault(f"--config-env={key}={NEVER_VAR}", None)
        elif (
            _PROGRAM_VARIABLE.fullmatch(variable)
            or lowered.startswith("pager.")
            or (lowered.startswith("filter.") and variable == "required")
        ):
            overrides.setdefault(f"--config-env={key}={UNSET_VAR}", None)
        if _GPG.match(key):
            gpg = True
    flags = list(overrides)
    if gpg:
        # A repository that names its own signing program or key would sign our commit with them:
        # Arbor's commits in such a repository are left unsigned rather than signed by an unknown program.
        flags += ["-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false"]
    return [os.path.normpath(path) for path in chain], tuple(flags)


GIT_IDENTITY = {
    "user.name": ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME", "Your Name"),
    "user.email": ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL", "you@example.com"),
}
"""git's identity keys: the variables that stand in for each (author's and committer's), and an example."""


def missing_identity(workspace: str | Path | None) -> list[str] | None:
    """The identity keys (``user.name``, ``user.email``) a commit in ``workspace`` would lack: set neither
    in its repository's config nor the global one, nor by git's GIT_AUTHOR_*/GIT_COMMITTER_* variables.
    None when git could not be asked. ``git config --get`` reads config only: it runs nothing."""
    where = ["git", "-C", str(workspace)] if workspace is not None else ["git"]
    missing = []
    for key, (author, committer, _example) in GIT_IDENTITY.items():
        if os.environ.get(author) and os.environ.get(committer):
            continue
        try:
            done = subprocess.run(
                [*where, "config", "--get", key], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if not done.stdout.strip():
            missing.append(key)
    return missing


def identity_fix(missing: list[str]) -> str:
    """The one line that sets the ``missing`` identity keys globally, with example values to replace."""
    return " && ".join(f'git config --global {key} "{GIT_IDENTITY[key][2]}"' for key in missing)
