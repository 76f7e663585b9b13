"""A client's link to one agent process at a time, Qt-free: the window's BackendBridge and the foreign agent's
session (:mod:`ide.client.foreign`: Arbor's backend holding its review) hold one each.

Each start is a new generation: the process is started and connected (:meth:`AgentLink.launch`), its end
is watched — told with whether it was asked for — and an answer, an update or an end of an older
generation is told apart from the current one's. Start, stop and restart steps run one after another
(:meth:`AgentLink.run`); a stop is polite (end of input, then signals) and waits for the watcher's
bookkeeping; an agent whose connection is lost while it runs is killed.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ide.client.agentconn import connect
from ide.client.process import EOF_GRACE_S, STOP_GRACE_S, close_connection

if TYPE_CHECKING:
    import asyncio

    from ide.client.agentconn import ClientCallbacks
    from ide.client.agentproc import AgentChoice, AgentProcess
    from ide.protocol import ErrorInfo

log = logging.getLogger(__name__)

R = TypeVar("R")
Spawn = Callable[[Coroutine[Any, Any, Any], str], "asyncio.Task[Any]"]
ENDING_S = 0.5
"""How long a process whose connection was lost may take to end by itself before it is killed."""


def _create_task(coro: Coroutine[Any, Any, R], name: str) -> asyncio.Task[R]:
    import asyncio

    return asyncio.create_task(coro, name=name)


class AgentLink:
    """One agent process at a time and its connection (see the module)."""

    def __init__(
        self,
        on_end: Callable[[AgentProcess, int, bool], None] = lambda *_: None,
        spawn: Spawn = _create_task,
    ) -> None:
        self.agent: AgentProcess | None = None
        self.conn: Any = None
        """The current generation's connection (None until connected, and once its process ended)."""
        self.generation = 0
        self.stopping = False
        """The current process was asked to end: its end is not a death."""
        self._on_end = on_end
        """Told, by the watcher, the process, its exit code and whether it died (ended unasked)."""
        self._spawn = spawn
        self._connections: dict[int, Any] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._steps: asyncio.Task[None] | None = None

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The agent's process (running or not), if one was started."""
        return self.agent.process if self.agent is not None else None

    @property
    def pid(self) -> int | None:
        """Process id of the running agent, if any."""
        process = self.process
        return process.pid if process is not None and process.returncode is None else None

    @property
    def idle(self) -> bool:
        """No start, stop or restart step was ever run."""
        return self._steps is None

    def run(self, step: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
        """Run ``step`` (a start, stop, restart) once the one before it is done: they never interleave."""
        previous = self._steps

        async def after_previous() -> None:
            import asyncio

            # asyncio.wait ignores how the previous step ended but still lets this task be cancelled.
            if previous is not None and not previous.done():
                await asyncio.wait({previous})
            await step()

        self._steps = self._spawn(after_previous(), "agent lifecycle")
        return self._steps

    def begin(self) -> int:
        """A new generation, about to start: what was asked of the one before no longer counts."""
        self.generation += 1
        self.stopping = False
        return self.generation

    async def launch(
        self,
        generation: int,
        choice: AgentChoice,
        callbacks: ClientCallbacks,
        load_sdk: Callable[[], Awaitable[None]],
        *,
        cwd: str | None = None,
        command: Sequence[str] | None = None,
    ) -> Any:
        """Start ``choice`` for ``generation`` (in ``cwd``, as ``command``, when given; OSError when it cannot
        be run), load the SDK while the agent starts up (``load_sdk``: on a worker thread in the window) and
        connect ``callbacks`` to it: None when it died meanwhile (its watcher tells)."""
        self.agent = agent = await choice.start(cwd, command)
        self._watcher = self._spawn(self._watch(generation, agent), "watch agent")
        await load_sdk()
        if agent.process.returncode is not None:
            return None
        self.conn = self._connections[generation] = conn = connect(agent, callbacks)
        return conn

    async def _watch(self, generation: int, agent: AgentProcess) -> None:

        code = await agent.wait()
        conn = self._connections.pop(generation, None)
        if conn is not None:
            await close_connection(conn)
        if generation != self.generation:
            return  # a newer agent: no one to tell
        self.conn = None
        self._on_end(agent, code, not self.stopping)

    async def stop(self, *, eof_grace: float = EOF_GRACE_S) -> bool:
        """Ask the agent to exit (end of input, then SIGTERM, then SIGKILL) and let its watcher finish its
        bookkeeping; its end is no death. False when none runs."""
        import asyncio

        agent = self.agent
        if agent is None or agent.process.returncode is not None:
            return False
        self.stopping = True
        await agent.stop(self._connections.get(self.generation), eof_grace=eof_grace)
        # Before a restart bumps the generation, the watcher tells of this end.
        if self._watcher is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._watcher), STOP_GRACE_S)
        return True

    def kill(self) -> None:
        """SIGKILL the agent's process group at once (teardown, no waiting); no death is told."""
        self.stopping = True
        if self.agent is not None:
            self.agent.signal(signal.SIGKILL)

    async def kill_unless_ending(self) -> None:
        """SIGKILL the process unless it ends by itself within :data:`ENDING_S` — its connection was lost:
        its output closed as it exited (under the keeper, a moment before the exit is seen), and its own
        exit code is what to tell, not the kill's."""
        import asyncio

        process = self.process
        if process is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), ENDING_S)
        except TimeoutError:
            if process.returncode is None and not self.stopping and self.agent is not None:
                log.warning("agent connection lost while the process runs; killing it")
                self.agent.signal(signal.SIGKILL)

    def answer(
        self,
        call: Awaitable[R | ErrorInfo | None],
        on_result: Callable[[R], None],
        on_error: Callable[[ErrorInfo], None],
        name: str,
    ) -> None:
        """Deliver what ``call`` answers (an :func:`~ide.client.agentconn.answered` reading) to ``on_result``
        or ``on_error`` — unless the connection was lost (the watcher tells) or the agent restarted since:
        that answer goes nowhere."""
        from ide.protocol import ErrorInfo

        generation = self.generation

        async def deliver() -> None:
            answer = await call
            if answer is None or generation != self.generation:
                return
            if isinstance(answer, ErrorInfo):
                on_error(answer)
            else:
                on_result(answer)

        self._spawn(deliver(), name)
