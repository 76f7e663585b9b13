"""Confining another agent with bubblewrap (``bwrap``): it writes only its shadow workspace.

The shadow makes a cooperative agent's turn reviewable; a command it runs can still write anywhere the
user can. With ``review.confine_agents`` the agent's process is started under ``bwrap``:

- Files: the whole file system read-only (the workspace too, ``/proc/sys`` as well), ``/dev`` of its own,
  and writable only the shadow, a private scratch directory given as ``TMPDIR``, and the directories
  ``review.agent_writable`` names (its own config and caches; one holding the workspace is refused). The
  shared temp directories (``/tmp``, ``/var/tmp``, Python's) are an empty tmpfs: other programs' files and
  sockets there are not seen, however they come and go; bound back read-only are only the workspace, the
  user's git objects the shadow reads through its alternates, the agent's own ``HOME`` and the files its
  command line names, with their folders (a link in one that leads elsewhere in a temp directory is not
  followed: an agent installed there must be named by its real path).
- Processes: a PID namespace and ``/proc`` of its own, so no host process is visible — a host process's
  ``/proc/PID/root`` led back to the writable host file system. Its own IPC and hostname, a new session
  (no controlling terminal to push keystrokes into with TIOCSTI) and no capabilities: run as root, bwrap
  keeps them all, and with ``CAP_SYS_ADMIN`` the agent could remount ``/`` writable. Without
  capabilities root's uid still owns ``/proc/sys`` (``kernel.core_pattern`` runs a program on the host),
  hence its read-only bind. It ends with Arbor (``--die-with-parent``), its whole namespace with it.
- Sockets: a read-only mount does not stop ``connect()``, so Unix sockets are hidden. ``$XDG_RUNTIME_DIR``
  and the directory of every socket a variable names (``SSH_AUTH_SOCK``, ``GPG_AGENT_INFO``,
  ``DBUS_SESSION_BUS_ADDRESS``, ``DOCKER_HOST``…) get an empty tmpfs; a directory that holds more than
  sockets (a top one, the home, a sticky one like ``/tmp``, one holding the workspace, the shadow or a
  writable directory) keeps its files and only its sockets are covered with ``/dev/null``, as are the
  daemons' sockets found under ``/run`` (docker, systemd, the D-Bus system bus: each runs commands
  outside for a caller of the right uid); those in the temp directories (tmux's) went with their tmpfs.
  The variables that named them are unset.

Not confined: the network (the agent needs its model, so localhost services stay reachable), reading
whatever the user can read, abstract Unix sockets (they belong to the network namespace: an X display,
some buses), and sockets elsewhere (the home's) or made after the start. Mounts apply in the order
given: the hiding comes after ``--ro-bind / /`` (which would cover it) and before the writable binds; a
tmpfs never goes over a directory holding one of them or the workspace.
Where ``bwrap`` is missing or cannot make such a sandbox (no user or PID namespaces), a confined start is
refused with the reason — the probe uses the same namespaces as a real start — never run unconfined.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

BWRAP = "bwrap"
PROBE_TIMEOUT_S = 10.0
INSTALL = "apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)"
ISOLATION = (
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--new-session",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
)
"""Everything but the network, which the agent needs for its model."""
READ_ONLY = (
    *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"),
    *("--ro-bind-try", "/proc/sys", "/proc/sys"),  # bwrap leaves it writable by root's uid
)
DAEMON_SOCKETS = (("/run", 4),)
"""Where daemons keep their sockets, and how deep to look (the temp directories are hidden whole)."""
WALK_LIMIT = 20_000
"""Entries looked at under DAEMON_SOCKETS at most (a start costs a few ms)."""
PATHLIKE = re.compile(r"/[^\s:;,=]+")
COVERS = (
    "writes: only the shadow, its TMPDIR and review.agent_writable (all else read-only, /proc/sys too)",
    "processes: its own PID namespace and /proc (no host process to reach through), IPC and hostname; "
    "a new session (no terminal to inject keystrokes into); no capabilities, even as root",
    "sockets hidden: ssh and gpg agents', every one a variable names, $XDG_RUNTIME_DIR's "
    "and the daemons' under /run (docker, systemd, D-Bus); /tmp and /var/tmp are empty for it (tmux)",
)
NOT_COVERED = (
    "the network: open, for the model (services on localhost too)",
    "reading: whatever you can read, except the hidden socket directories",
    "abstract Unix sockets (shared with the network: an X display, some buses), "
    "sockets elsewhere (your home) or made after the agent started",
)


class ConfineError(OSError):
    """The agent cannot be started confined (an OSError: as a command that cannot be run); says why."""


def bwrap_status() -> tuple[bool, str]:
    """Whether ``bwrap`` can confine a process here — the same namespaces and kinds of mount as a real
    start — with its version, or why it cannot."""
    path = shutil.which(BWRAP)
    if path is None:
        return False, "bwrap is not installed"
    try:
        probe = subprocess.run(
            [path, *ISOLATION, *READ_ONLY, "--tmpfs", "/tmp", "true"],
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
    command: Sequence[str],
    shadow: str,
    scratch: str,
    workspace: Path,
    writable: Sequence[str],
    readable: Sequence[str] = (),
) -> list[str]:
    """``command`` as run under ``bwrap`` in ``shadow``, with ``scratch`` its ``TMPDIR`` (see the module
    docstring); ``readable``: more paths it reads that may sit in a temp directory (its ``HOME``).
    ConfineError says why it cannot be."""
    ok, said = bwrap_status()
    if not ok:
        raise ConfineError(f"review.confine_agents is on, but {said} ({INSTALL})")
    root = workspace.resolve()
    binds = [os.path.realpath(shadow), os.path.realpath(scratch)]
    for entry in writable:
        path = Path(entry).expanduser().resolve()
        if not path.is_dir():
            raise ConfineError(f"review.agent_writable: {entry} is not a directory")
        if path == root or path in root.parents:
            raise ConfineError(
                f"review.agent_writable: {entry} holds the workspace {root}: a confined agent could write it"
            )
        binds.append(str(path))
    temps = temp_dirs()
    back = _bound_back(temps, [str(root), *_alternates(shadow), *readable, *_paths_in(command)])
    # What lies in a temp directory and is not bound back is gone with its tmpfs: no mount needed.
    gone = [t for t in temps if not any(_under(b, t) for b in back)] + [
        p for t in temps for p in _children(t) if not any(_under(b, p) or _under(p, b) for b in back)
    ]
    hide, unset = hidden_sockets(os.environ, keep=[str(root), *binds], bound=[*binds, *gone])
    argv = [shutil.which(BWRAP) or BWRAP, *ISOLATION, *READ_ONLY]
    argv += [arg for temp in temps for arg in ("--tmpfs", temp)]
    argv += [arg for path in back for arg in ("--ro-bind", path, path)]
    argv += hide  # after the binds back: a socket in a bound-back directory is covered too
    argv += ["--bind", shadow, shadow, "--bind", scratch, scratch]
    for path in binds[2:]:
        argv += ["--bind", path, path]
    for name in unset:
        argv += ["--unsetenv", name]
    return [*argv, "--setenv", "TMPDIR", scratch, "--chdir", shadow, "--", *command]


def temp_dirs() -> list[str]:
    """The shared temp directories (``/tmp``, ``/var/tmp``, Python's temp dir): each is an empty tmpfs for a
    confined agent, so no other program's files or sockets there reach it, however they come and go."""
    found = []
    for candidate in ("/tmp", "/var/tmp", tempfile.gettempdir()):
        path = os.path.realpath(candidate)
        home = os.path.realpath(os.path.expanduser("~"))
        if os.path.isdir(path) and path.count("/") >= 1 and path not in ("/", home) and path not in found:
            found.append(path)
    return found


def _bound_back(temps: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The paths of ``wanted`` that lie in one of ``temps`` (each an empty tmpfs for the agent) and are
    bound back read-only: the workspace, the user's git objects the shadow reads, the agent's home, the
    programs on its command line — files and directories only, outermost first."""
    back: list[str] = []
    for path in wanted:
        real = os.path.realpath(path)
        if any(_under(real, temp) for temp in temps) and real not in temps and _file_or_dir(real):
            back.append(real)
    return [p for p in dict.fromkeys(back) if not any(_under(p, o) and p != o for o in back)]


def _file_or_dir(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _children(folder: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(folder)]
    except OSError:
        return []


def _alternates(shadow: str) -> list[str]:
    """The object directories the shadow's git reads through ``objects/info/alternates`` (the user's)."""
    folder = Path(shadow)
    for _depth in range(64):
        listing = folder / ".git" / "objects" / "info" / "alternates"
        if listing.is_file():
            lines = listing.read_text(encoding="utf-8", errors="replace").splitlines()
            return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        if (folder / ".git").exists() or folder.parent == folder:
            return []
        folder = folder.parent
    return []


def _paths_in(command: Sequence[str]) -> list[str]:
    """What the arguments of ``command`` that name an existing file or directory need: the directory, or
    the file with its neighbours (a script imports the modules beside it, node its ``node_modules``) —
    the file alone when its folder is a temp directory itself."""
    found = []
    for word in command:
        if word.startswith("/") and _file_or_dir(word):
            real = os.path.realpath(word)
            folder = real if os.path.isdir(real) else os.path.dirname(real)
            found += [real, folder]
    return found


def hidden_sockets(
    environ: Mapping[str, str], keep: Sequence[str], bound: Sequence[str]
) -> tuple[list[str], list[str]]:
    """bwrap's arguments that hide the host's Unix sockets (see the module docstring), and the variables
    that named them. ``keep``: directories whose files the agent still sees (the workspace and the bound
    ones); ``bound``: the agent's own writable directories, whose sockets are its own."""
    home = os.path.realpath(environ.get("HOME") or os.path.expanduser("~"))
    named: dict[str, list[str]] = {}
    for name, value in environ.items():
        found = [s for s in _sockets_in(value) if not any(_under(s, b) for b in bound)]
        if found:
            named[name] = found
    runtime = os.path.realpath(environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}")
    dirs: list[str] = []
    loose: list[str] = []
    if os.path.isdir(runtime):
        if _holds_more_than_sockets(runtime, keep, home):
            loose += _walk_sockets(runtime, 2, bound)
        else:
            dirs.append(runtime)
    for socket in (s for found in named.values() for s in found):
        folder = os.path.dirname(socket)
        if _holds_more_than_sockets(folder, keep, home):
            loose.append(socket)
        else:
            dirs.append(folder)
    for top, depth in DAEMON_SOCKETS:
        loose += _walk_sockets(top, depth, [*bound, *dirs])
    # A directory inside another hidden one, or a socket inside a hidden or bound one, needs no mount.
    dirs = [d for d in dict.fromkeys(dirs) if not any(_under(d, o) and d != o for o in dirs)]
    loose = [s for s in dict.fromkeys(loose) if not any(_under(s, d) for d in [*dirs, *bound])]
    args = [arg for d in dirs for arg in ("--tmpfs", d)]
    args += [arg for s in loose for arg in ("--ro-bind", "/dev/null", s)]
    return args, sorted(named)


def _sockets_in(value: str) -> list[str]:
    """The existing sockets a variable's value names (a path, ``path:pid:1``, ``unix:path=…``,
    ``unix://…``), resolved."""
    found = []
    for candidate in PATHLIKE.findall(value):
        try:
            if stat.S_ISSOCK(os.stat(candidate).st_mode):
                found.append(os.path.realpath(candidate))
        except (OSError, ValueError):
            continue
    return found


def _holds_more_than_sockets(folder: str, keep: Sequence[str], home: str) -> bool:
    """Whether an empty tmpfs over ``folder`` would hide more than an agent's sockets: a top directory,
    the home, a sticky one (``/tmp``, ``/var/tmp``, ``/dev/shm``) or one holding a kept directory."""
    if folder.count("/") <= 1 or folder == home or any(_under(path, folder) for path in keep):
        return True
    try:
        return bool(os.stat(folder).st_mode & stat.S_ISVTX)
    except OSError:
        return True


def _walk_sockets(top: str, depth: int, skip: Sequence[str]) -> Iterator[str]:
    """The sockets under ``top`` down to ``depth`` levels (no link followed, ``skip`` and its subtrees
    not entered, WALK_LIMIT entries at most)."""
    pending = [(top, 1)]
    seen = 0
    while pending and seen < WALK_LIMIT:
        folder, level = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        if level < depth and not any(_under(entry.path, s) for s in skip):
                            pending.append((entry.path, level + 1))
                    elif not entry.is_file(follow_symlinks=False) and _is_socket(entry):
                        yield entry.path
        except OSError:
            continue


def _is_socket(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
