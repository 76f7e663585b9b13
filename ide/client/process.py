"""An agent's operating-system process, Qt-free: spawned with piped stdio in a process group of its own,
its stderr drained into a bounded tail, signalled as a group, stopped politely (end of input, SIGTERM,
SIGKILL) — and the signals that stop a headless command as Ctrl-C does. Which agent runs, and the running
agent as the client sees it: :mod:`ide.client.agentproc`.

The agent is a child with stdio pipes: stdout/stdin carry JSON-RPC, stderr is drained continuously into a
bounded tail (a chatty agent must never block on a full pipe). Its own process group means stopping it
also stops the language servers it spawned, and it never outlives this process (:mod:`ide.lifetime`:
Arbor's backend gets a parent-death signal, another agent runs under the keeper).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ide.lifetime import dies_with_parent, end_group, kept

if TYPE_CHECKING:
    import asyncio

STDIO_LIMIT = 50 * 1024 * 1024
"""Reader limit for the agent's stdout; asyncio's 64 KiB default is smaller than some ACP lines."""
EOF_GRACE_S = 1.0
STOP_GRACE_S = 3.0
STDERR_TAIL_LINES = 200
STDERR_LINE_CHARS = 2000


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What stops a headless command (``arbor run``, ``arbor eval``) as Ctrl-C does: the turn or runs are
cancelled and their agent processes stopped, never left behind (and should it be killed outright, they
end with it: :mod:`ide.lifetime`)."""


@contextlib.contextmanager
def on_stop_signals(handler: Callable[[], object]) -> Iterator[None]:
    """While inside, :data:`STOP_SIGNALS` call ``handler`` on the running event loop instead of ending the
    process (where the platform lets a loop take signals)."""
    import asyncio

    loop = asyncio.get_running_loop()
    for stop in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(stop, handler)
    try:
        yield
    finally:
        for stop in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(stop)


class StderrTail:
    """The last lines a process wrote to stderr, bounded in lines and in line length."""

    def __init__(self, max_lines: int = STDERR_TAIL_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = ""

    def feed(self, data: bytes) -> None:
        text = self._partial + data.decode("utf-8", errors="replace")
        *complete, self._partial = text.split("\n")
        for line in complete:
            self._lines.append(line.rstrip("\r")[:STDERR_LINE_CHARS])
        self._partial = self._partial[-STDERR_LINE_CHARS:]

    def text(self, lines: int | None = None) -> str:
        """The last ``lines`` lines (all kept lines by default), newest last."""
        kept = [*self._lines, self._partial] if self._partial else list(self._lines)
        kept = kept[-(lines or self._lines.maxlen or len(kept)) :]
        return "\n".join(kept).strip("\n")


async def spawn_agent(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    *,
    keep: bool = False,
) -> asyncio.subprocess.Process:
    """Start ``command`` with piped stdio in a new process group (``env`` replaces the environment), in
    ``cwd`` when given (a foreign agent's shadow workspace). It ends when this process ends: by a
    parent-death signal, or with ``keep`` (another agent, which may start children of its own) under the
    keeper, whose pid the process is then (:mod:`ide.lifetime`). Call it from the event loop's thread."""
    import asyncio

    argv = kept(command, env, cwd) if keep else list(command)
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
        limit=STDIO_LIMIT,
        start_new_session=True,
        preexec_fn=None if keep else dies_with_parent(),
    )


async def drain_stderr(stream: asyncio.StreamReader, tail: StderrTail, echo: TextIO | None = None) -> None:
    """Read ``stream`` into ``tail`` (and ``echo`` when given: a CLI agent's stderr is shown) until EOF."""
    while True:
        data = await stream.read(65536)
        if not data:
            return
        tail.feed(data)
        if echo is not None:
            echo.write(data.decode("utf-8", errors="replace"))


def signal_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the process's group when it leads one, else to the process alone."""
    if process.returncode is not None:
        return
    try:
        if os.getpgid(process.pid) != process.pid:
            raise ProcessLookupError  # not a group leader: never signal the group we are in
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)


async def close_connection(conn: Any, timeout: float = 1.0) -> None:
    """Close an ACP connection, waiting at most ``timeout``; what it raises is dropped. In this task, not
    one of its own (as ``wait_for`` makes): a loop that ends before that task ran would drop ``close()``
    unstarted ("coroutine was never awaited")."""
    import asyncio

    with contextlib.suppress(Exception):
        async with asyncio.timeout(timeout):
            await conn.close()


async def stop_agent(
    process: asyncio.subprocess.Process,
    conn: Any = None,
    *,
    eof_grace: float = EOF_GRACE_S,
    grace: float = STOP_GRACE_S,
) -> None:
    """Close ``conn`` (bounded), then stdin (an ACP agent's cue to exit), then SIGTERM and SIGKILL the
    group, each after its grace; returns once the process is reaped (or SIGKILL's grace ran out), and
    what it left in its group is SIGKILLed."""
    # Closing the connection first lets its sender finish what it queued, so closing stdin under it
    # cannot fail a write. Bounded: a hung agent with a full pipe must not hold the stop.
    import asyncio

    if conn is not None:
        await close_connection(conn)
    if process.returncode is not None:
        return
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for sig, wait_s in ((None, eof_grace), (signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        if sig is not None:
            signal_group(process, sig)
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), wait_s)
            end_group(process.pid)
            return
        except TimeoutError:
            continue
