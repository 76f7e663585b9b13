"""How long a child process lives: none that Arbor starts outlives the process that started it.

Every child ends when its parent ends, by any signal, SIGKILL included (issue 51):

- **A parent-death signal** (Linux ``PR_SET_PDEATHSIG``): :func:`dies_with_parent` is the ``preexec_fn``
  of a child that is Arbor itself (``arbor acp`` under the window, ``arbor run``, ``arbor eval`` and the
  review backend): the kernel SIGKILLs it when its parent ends. The kernel sends it when the parent
  *thread* that forked the child ends, not the process: Arbor spawns from its event loop's thread, which
  lives as long as the process (asyncio forks in the thread that asks it to), or from a worker thread that
  waits for the child it started (``arbor eval``'s checks), which therefore cannot end first.
- **The keeper** (:func:`kept`): a child that runs another program — another agent, a CLI agent, a test
  run, a language server, an eval check — may start children of its own (codex-acp's node launcher starts
  a native ``codex-acp``, pyright starts node), which no parent-death signal reaches. It runs under a
  keeper: this module run as a script (``python -I -S lifetime.py PARENT COMMAND…``: the standard library
  only, ~20 ms). The keeper leads the process group and starts the command in it (the command dies with
  the keeper); it waits for the command and ends as the command ended, after SIGKILLing whatever the
  command left in the group; and when its parent ends (its own parent-death signal, SIGTERM, which it
  catches) it SIGKILLs the whole group, itself included. A stop still signals the group
  (``ide.client.process.signal_group``): the command gets the signal itself and the keeper waits for it.
- **The process group ended on the parent's way out** (:func:`end_group`): after a child is reaped, what
  is left in its group (a backend's index workers) is SIGKILLed.

A scratch or shadow directory is named with the pid of the process that made it (:func:`scratch_prefix`),
so the next start removes one a killed process left (``ide.changes.worktree.prune_stale_worktrees``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

PR_SET_PDEATHSIG = 1
KEEPER_COMMAND = "__keep__"
"""``arbor __keep__ PARENT COMMAND…``: the packaged app's keeper (it has no Python to run this file with)."""
KEEPER_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""What the keeper catches: its parent-death signal (SIGTERM), and a stop sent to its group, which it leaves
to the command."""
LEFTOVER_ROUNDS = 50
SCRATCH_PREFIX = "arbor-scratch-"
"""How the temporary directories Arbor makes begin; the maker's pid follows."""


def scratch_prefix(kind: str) -> str:
    """The ``tempfile.mkdtemp`` prefix of a scratch directory of this process: ``arbor-scratch-PID-KIND-``."""
    return f"{SCRATCH_PREFIX}{os.getpid()}-{kind}-"


def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up now (never in a child between fork and exec); None but on Linux."""
    if sys.platform != "linux":
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def dies_with_parent(sig: signal.Signals = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` after which the kernel sends the child ``sig`` when this process's spawning thread
    ends (see the module's docstring); None where there is no such thing (not Linux).

    It calls only a function looked up before the fork, so it needs no lock another thread could hold."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # it ended between the fork and prctl: nothing will tell us
            os._exit(1)

    return preexec


def keeper_command() -> list[str]:
    """The argv that starts the keeper (before its parent's pid and the command)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, KEEPER_COMMAND]
    # -I: no PYTHON* variables, user site or script folder; -S: no site (the standard library is enough).
    return [sys.executable, "-I", "-S", os.path.abspath(__file__)]


def kept(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> list[str]:
    """``command`` as started under the keeper on Linux (elsewhere as it is), to be run in a new session.

    Raises what starting ``command`` itself would (FileNotFoundError, PermissionError) when its program
    cannot be found or run with ``env``'s PATH in ``cwd``: the keeper's own start would hide that."""
    argv = list(command)
    if not argv:
        raise ValueError("an empty command line")
    _check_runnable(argv[0], env, cwd)
    if sys.platform != "linux":
        return argv
    return [*keeper_command(), str(os.getpid()), *argv]


def _check_runnable(program: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> None:
    import shutil

    if os.sep in program:
        path = os.path.join(os.fspath(cwd) if cwd is not None else os.getcwd(), program)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        return
    search = os.get_exec_path(dict(env) if env is not None else None)
    if shutil.which(program, path=os.pathsep.join(search)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def end_group(pgid: int) -> None:
    """SIGKILL what is left of the process group ``pgid`` (a child's own, after it was reaped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _others_in_group(pgid: int, me: int) -> list[int]:
    """The live (not zombie) processes of the group ``pgid`` but ``me``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry))
    return found


def _end_others(me: int) -> None:
    """SIGKILL every other process of the keeper's group (what the command left), until none is left."""
    for _ in range(LEFTOVER_ROUNDS):
        others = _others_in_group(me, me)
        if not others:
            return
        for pid in others:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def keep(args: Sequence[str]) -> NoReturn:
    """The keeper: ``PARENT COMMAND…`` (see the module's docstring); its exit is the command's."""
    parent, argv = int(args[0]), list(args[1:])
    me = os.getpid()
    prctl = _prctl()

    def on_signal(_sig: int, _frame: Any) -> None:
        if os.getppid() != parent:  # the parent ended (this is its death signal): so does all it started
            os.killpg(me, signal.SIGKILL)
        # Otherwise a stop sent to the group: the command has it too, and its end is awaited.

    for sig in KEEPER_SIGNALS:
        signal.signal(sig, on_signal)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the parent ended before it could be told: nothing was started
    pid = os.fork()
    if pid == 0:
        for sig in KEEPER_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != me:
            os._exit(1)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror or exc}\n".encode(errors="replace"))
        os._exit(127)
    # Only the command holds the caller's pipes: their end of file is the command's.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _, status = os.waitpid(pid, 0)
    _end_others(me)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(me, -code)
        code = 128 - code
    os._exit(code)


if __name__ == "__main__":
    keep(sys.argv[1:])
