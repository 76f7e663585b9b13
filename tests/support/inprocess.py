"""Arbor's ACP agent in the test's own process: the object ``arbor acp`` serves (``ide.backend.server``),
behind the same input guard and the SDK's agent-side connection, driven by the SDK's client connection over
a connected pair of sockets — the SDK's own loopback tests, with no process in between.

For handler tests: what a request answers, what a turn says. What only a process shows (stdio limits, an
end of input, signals, a backend killed, memory) stays with :func:`tests.support.acp_client.acp_backend`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass

from acp import PROTOCOL_VERSION, connect_to_agent, run_agent
from acp.core import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation, InitializeResponse

from ide.backend.agent import ArborAgent
from ide.backend.server import STDIO_LIMIT, guard_input
from tests.support.acp_client import RecordingClient

ANSWER_S = 30.0
"""The longest a test waits for the handshake, and for the agent to end once the client hung up."""


@dataclass
class InProcessBackend:
    conn: ClientSideConnection
    client: RecordingClient
    agent: ArborAgent
    """The agent itself: its sessions and services, as a handler sees them."""
    init: InitializeResponse


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` set in this process's environment (which the agent's settings read), as it was after."""
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def _stream_pair() -> tuple[
    tuple[asyncio.StreamReader, asyncio.StreamWriter], tuple[asyncio.StreamReader, asyncio.StreamWriter]
]:
    """Two connected ends, each an asyncio reader and writer: the agent's and the client's."""
    agent_end, client_end = socket.socketpair()
    agent = await asyncio.open_connection(sock=agent_end, limit=STDIO_LIMIT)
    client = await asyncio.open_connection(sock=client_end, limit=STDIO_LIMIT)
    return agent, client


@contextlib.asynccontextmanager
async def inprocess_backend(
    env: Mapping[str, str] | None = None,
    capabilities: ClientCapabilities | None = None,
    client: RecordingClient | None = None,
) -> AsyncIterator[InProcessBackend]:
    """An :class:`~ide.backend.agent.ArborAgent` served as ``arbor acp`` serves it (every line through
    ``guard_input``, then the SDK's ``run_agent``), with ``env`` in the environment while it runs;
    initialized by the SDK's client connection. On exit the client hangs up, the agent's connection ends
    and the agent is closed (turns cancelled, language servers and databases closed), each wait bounded."""
    with environment(env or {}):
        (agent_in, agent_out), (client_in, client_out) = await _stream_pair()
        agent = ArborAgent()
        checked = asyncio.StreamReader(limit=STDIO_LIMIT)
        guard = asyncio.ensure_future(guard_input(agent_in, checked, agent_out))
        serving = asyncio.ensure_future(run_agent(agent, agent_out, checked))
        client = client or RecordingClient()
        conn = connect_to_agent(client, client_out, client_in)
        try:
            init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=capabilities or ClientCapabilities(),
                    client_info=Implementation(name="arbor-tests", version="0"),
                ),
                ANSWER_S,
            )
            yield InProcessBackend(conn, client, agent, init)
        finally:
            await conn.close()
            client_out.close()  # the agent reads the end of its input, as at the end of stdin
            _, lingering = await asyncio.wait({serving}, timeout=ANSWER_S)
            for task in (serving, guard):
                task.cancel()
            await asyncio.gather(serving, guard, return_exceptions=True)
            await agent.close()
            agent_out.close()
            assert not lingering, f"the agent's connection did not end within {ANSWER_S} s of the client's"
