"""``arbor acp``: serve the ACP agent on this process's stdin and stdout."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import select
import signal
import sys
import threading
from asyncio.streams import FlowControlMixin
from collections.abc import AsyncIterator

from acp import run_agent

from ide.backend.agent import ArborAgent, QuietRefusals
from ide.backend.limits import BadMessage, check_message, return_freed_memory
from ide.changes.nofollow import write_all

STDIO_LIMIT = 50 * 1024 * 1024
HEAD_BYTES = 4096
"""How much of an over-long line is kept to find its request id (JSON-RPC clients put it first)."""
CHUNK_BYTES = 1 << 16
OUTPUT_FLUSH_S = 10.0
# The id only when it comes before params (as the SDKs send it): an "id" inside params is not the request's.
_ID = re.compile(
    rb'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?\d+|"[^"\\]{0,200}")'
)


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


def _pollable(fd: int, events: int) -> bool:
    """Whether the event loop can wait on ``fd``: epoll takes pipes, sockets and terminals, but not a
    regular file or ``/dev/null`` (asyncio refuses the first and waits forever on the second)."""
    poller = select.epoll()
    try:
        poller.register(fd, events)
    except OSError:
        return False
    finally:
        poller.close()
    return True


def _copy(source: int, target: int, close: int) -> None:
    """Copy ``source`` to ``target`` until end of file, then close ``close`` (the pipe end owned here)."""
    try:
        while chunk := os.read(source, CHUNK_BYTES):
            write_all(target, chunk)
    except OSError:
        pass
    finally:
        os.close(close)


def _through_pipe(fd: int, *, reading: bool) -> tuple[int, threading.Thread | None]:
    """``fd`` itself when the event loop can wait on it, else one end of a pipe a thread copies it through:
    ``arbor acp < requests.jsonl > answers.jsonl`` (or ``< /dev/null``) works like a client's pipes."""
    if _pollable(fd, select.EPOLLIN if reading else select.EPOLLOUT):
        return fd, None
    read_end, write_end = os.pipe()
    if reading:
        copier = threading.Thread(target=_copy, args=(fd, write_end, write_end), daemon=True)
        ours = read_end
    else:
        copier = threading.Thread(target=_copy, args=(read_end, fd, read_end), daemon=True)
        ours = write_end
    copier.start()
    return ours, copier


def _error_line(code: int, message: str, request_id: object = None) -> bytes:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return (json.dumps(payload, separators=(",", ":")) + "\n").encode()


class TooLong:
    """A line over ``STDIO_LIMIT``, dropped; ``head``: its first bytes, where its id can be found."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    def request_id(self) -> object:
        """The id of the request the line held, when its first members show it (else None)."""
        found = _ID.match(self.head)
        return json.loads(found.group(1)) if found is not None else None


async def _lines(source: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | TooLong]:
    """Each line of ``source``; one that grows past ``limit`` is skipped to its end (never buffered
    whole) and given as a :class:`TooLong` with its first bytes."""
    line = bytearray()
    dropping: bytes | None = None
    while chunk := await source.read(CHUNK_BYTES):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start : end + 1]
            if dropping is None:
                line += piece
                if len(line) > limit:
                    dropping, line = bytes(line[:HEAD_BYTES]), bytearray()
            if end < 0:
                break
            if dropping is not None:
                yield TooLong(dropping)
                dropping = None
            else:
                yield bytes(line)
                line = bytearray()
            start = end + 1
    if dropping is not None:
        yield TooLong(dropping)
    elif line:
        yield bytes(line)


async def guard_input(
    source: asyncio.StreamReader, sink: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Pass well-formed JSON-RPC lines on to the SDK; answer the rest with a JSON-RPC error.

    The SDK only logs a line it cannot parse, so a client that sent garbage would wait forever.
    """
    async for line in _lines(source, STDIO_LIMIT):
        if isinstance(line, TooLong):
            writer.write(
                _error_line(
                    -32600,
                    f"message longer than {STDIO_LIMIT // (1024 * 1024)} MB (the line limit); dropped — "
                    "send less at once (a file that large cannot go through review)",
                    line.request_id(),
                )
            )
            continue
        if not line.strip():
            continue
        try:
            check_message(line)
        except BadMessage as exc:
            writer.write(_error_line(exc.code, str(exc), exc.request_id))
            continue
        sink.feed_data(line if line.endswith(b"\n") else line + b"\n")
    sink.feed_eof()


INPUT_END_GRACE_S = 2.0
"""How long the end of input may take to end the agent's connection before it is cancelled."""
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""End the backend as the end of its input does (turns cancelled, shadows removed, children stopped); a
second one ends it at once."""


async def serve() -> int:
    """Run the agent until the client closes stdin (0: within :data:`INPUT_END_GRACE_S`, whatever the
    connection still had to send), or until one of :data:`ENDING_SIGNALS` (128 + it).

    Either way the agent is closed: running turns cancelled (a test run's process group killed), language
    and MCP servers stopped, shadow workspaces removed. What the process started dies with it even when it
    is killed outright (:mod:`ide.lifetime`)."""
    loop = asyncio.get_running_loop()
    stdin_fd, _ = _through_pipe(sys.stdin.fileno(), reading=True)
    protocol_fd, output_copier = _through_pipe(_claim_stdout(), reading=False)
    stdin = asyncio.StreamReader(limit=STDIO_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), os.fdopen(stdin_fd, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(_WriteProtocol, os.fdopen(protocol_fd, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    checked = asyncio.StreamReader(limit=STDIO_LIMIT)
    guard = asyncio.ensure_future(guard_input(stdin, checked, writer))
    agent = ArborAgent()
    serving = asyncio.ensure_future(run_agent(agent, writer, checked))
    ended_by: list[int] = []
    """Why serving was ended from here: the signal, or 0 for an end of input the SDK did not finish after."""

    def end(why: int) -> None:
        if not serving.done():
            ended_by.append(why)
            serving.cancel()

    def on_signal(sig: signal.Signals) -> None:
        for ending in ENDING_SIGNALS:
            loop.remove_signal_handler(ending)  # the next one ends the process at once
        end(sig)

    def input_ended(_guard: asyncio.Future[None]) -> None:
        # The client is gone. The SDK's close waits for the answers it still has to send, and for one it
        # can no longer send (its sender stopped at the closed pipe) forever: a grace, then the end.
        loop.call_later(INPUT_END_GRACE_S, end, 0)

    guard.add_done_callback(input_ended)
    for sig in ENDING_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await serving
    except asyncio.CancelledError:
        if not ended_by or not serving.cancelled():
            raise
    finally:
        for sig in ENDING_SIGNALS:
            loop.remove_signal_handler(sig)
        guard.cancel()
        await agent.close()
        if output_copier is not None:  # every answer reaches the file before the process ends
            transport.close()
            await asyncio.to_thread(output_copier.join, OUTPUT_FLUSH_S)
    return 128 + ended_by[0] if ended_by and ended_by[0] else 0


def main(log_level: str = "WARNING") -> int:
    from ide.logs import setup_logging

    setup_logging(log_level, "arbor-acp")
    logging.getLogger().addFilter(QuietRefusals())
    return_freed_memory()
    try:
        return asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
