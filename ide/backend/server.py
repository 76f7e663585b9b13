"""``arbor acp``: serve the ACP agent on this process's stdin and stdout."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from asyncio.streams import FlowControlMixin

from acp import run_agent

from ide.backend.agent import ArborAgent

STDIO_LIMIT = 50 * 1024 * 1024


class _WriteProtocol(FlowControlMixin, asyncio.Protocol):
    """Pipe protocol with the drain support asyncio.StreamWriter needs."""


def _claim_stdout() -> int:
    """Keep the real stdout for JSON-RPC only: anything else printing to fd 1 goes to stderr instead.

    A stray print from a library would otherwise corrupt the protocol stream.
    """
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def serve() -> None:
    """Run the agent until the client closes stdin."""
    loop = asyncio.get_running_loop()
    protocol_fd = _claim_stdout()
    reader = asyncio.StreamReader(limit=STDIO_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(_WriteProtocol, os.fdopen(protocol_fd, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = ArborAgent()
    try:
        await run_agent(agent, writer, reader)
    finally:
        await agent.close()


def main(log_level: str = "WARNING") -> int:
    logging.basicConfig(
        level=getattr(logging, log_level.upper(), logging.WARNING),
        stream=sys.stderr,
        format="arbor-acp %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    return 0
