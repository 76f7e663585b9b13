"""A client's link to one agent process at a time (ide/client/link.py), without Qt, over real processes: an
end asked for is no death, one that was not is told with its exit code, an older generation's end is told
to no one; a process whose connection was lost is killed unless it ends by itself; an answer of an older
generation goes nowhere; start and stop steps never interleave."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from ide.client.agentconn import ClientCallbacks, load_sdk
from ide.client.agentproc import AgentChoice, AgentProcess
from ide.client.link import AgentLink
from ide.protocol import ErrorInfo

WAITS = [sys.executable, "-c", "import sys; sys.stdin.read()"]
"""Ends when its input closes, as an ACP agent does."""
LINGERS = [sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(60)"]
EXITS = [sys.executable, "-c", "import sys; sys.exit(3)"]


class Ends:
    def __init__(self) -> None:
        self.told: list[tuple[int, bool]] = []
        self.event = asyncio.Event()

    def __call__(self, agent: AgentProcess, code: int, died: bool) -> None:
        self.told.append((code, died))
        self.event.set()


def callbacks() -> ClientCallbacks:
    return ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)


async def load() -> None:
    load_sdk()


async def started(link: AgentLink, command: list[str]) -> Any:
    choice = AgentChoice("test", command, {}, shadow=False)
    return await link.launch(link.begin(), choice, callbacks(), load)


async def test_a_stop_is_no_death_and_a_kill_from_outside_is() -> None:
    ends = Ends()
    link = AgentLink(ends)
    assert await started(link, WAITS) is not None and link.pid is not None and link.conn is not None
    assert await link.stop() is True
    assert ends.told == [(0, False)] and link.conn is None and link.pid is None
    assert await link.stop() is False  # none runs

    ends.event.clear()
    await started(link, WAITS)
    assert link.pid is not None
    os.kill(link.pid, signal.SIGKILL)
    await asyncio.wait_for(ends.event.wait(), 10)
    assert ends.told[-1] == (-signal.SIGKILL, True) and link.conn is None


async def test_an_older_generations_end_is_told_to_no_one() -> None:
    ends = Ends()
    link = AgentLink(ends)
    await started(link, WAITS)
    old = link.process
    assert old is not None
    link.begin()  # a restart began
    old.kill()
    await asyncio.wait_for(old.wait(), 10)
    await asyncio.sleep(0.5)
    assert ends.told == []


async def test_a_process_that_died_while_the_sdk_loaded_gets_no_connection() -> None:
    ends = Ends()
    link = AgentLink(ends)
    choice = AgentChoice("test", EXITS, {}, shadow=False)
    generation = link.begin()

    async def slow_load() -> None:
        await asyncio.wait_for(ends.event.wait(), 10)

    assert await link.launch(generation, choice, callbacks(), slow_load) is None
    assert ends.told == [(3, True)] and link.conn is None


async def test_a_lost_connection_kills_the_process_unless_it_ends_by_itself() -> None:
    ends = Ends()
    link = AgentLink(ends)
    await started(link, LINGERS)
    assert link.agent is not None
    link.agent.process.stdin.close()  # type: ignore[union-attr]  # as a closed stdout would: it lingers
    await link.kill_unless_ending()
    await asyncio.wait_for(ends.event.wait(), 10)
    assert ends.told == [(-signal.SIGKILL, True)]

    ends.event.clear()
    await started(link, WAITS)
    assert link.agent is not None
    link.agent.process.stdin.close()  # type: ignore[union-attr]  # it ends by itself: its own code is told
    await link.kill_unless_ending()
    await asyncio.wait_for(ends.event.wait(), 10)
    assert ends.told[-1] == (0, True)


async def test_an_answer_goes_to_its_caller_unless_the_agent_restarted_since() -> None:
    link = AgentLink()
    results: list[Any] = []
    errors: list[ErrorInfo] = []
    gate = asyncio.Event()

    async def answer(value: Any) -> Any:
        await gate.wait()
        return value

    link.answer(answer("ok"), results.append, errors.append, "one")
    link.answer(answer(ErrorInfo(kind="internal", message="no")), results.append, errors.append, "two")
    link.answer(answer(None), results.append, errors.append, "lost")  # the watcher tells of a lost one
    gate.set()
    await asyncio.sleep(0.1)
    assert results == ["ok"] and [e.message for e in errors] == ["no"]

    gate.clear()
    link.answer(answer("late"), results.append, errors.append, "late")
    link.begin()
    gate.set()
    await asyncio.sleep(0.1)
    assert results == ["ok"]


async def test_steps_run_one_after_another() -> None:
    link = AgentLink()
    assert link.idle
    order: list[str] = []

    async def step(name: str) -> None:
        order.append(f"{name} begins")
        await asyncio.sleep(0.05)
        order.append(f"{name} ends")

    link.run(lambda: step("stop"))
    await link.run(lambda: step("start"))
    assert not link.idle
    assert order == ["stop begins", "stop ends", "start begins", "start ends"]
