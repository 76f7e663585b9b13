"""One live connection to one MCP server (stdio, streamable HTTP or SSE), restarted once when it dies.

The MCP SDK's transports are anyio contexts, which must be left in the task that entered them: each
server's ``ClientSession`` is held open by a task of its own for the Arbor session's life, and calls are
made on it from any task of the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult, Tool

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ServerConfig:
    """How to reach one MCP server: a command (stdio) or a URL (``http`` or ``sse``)."""

    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    url: str = ""
    headers: dict[str, str] | None = None


class ServerDied(Exception):
    """The server stopped (its process ended or its connection closed) while Arbor used it."""


def reason(exc: BaseException) -> str:
    """A one-line cause of a failure, out of anyio's exception groups."""
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    if isinstance(inner, TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s"
    return f"{type(inner).__name__}: {inner}" if str(inner) else type(inner).__name__


def _died(exc: BaseException) -> bool:
    """Whether a failed request means the connection is gone (not that the tool failed)."""
    import anyio
    import httpx
    from mcp import McpError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, BaseExceptionGroup):
        return any(_died(inner) for inner in exc.exceptions)
    if isinstance(exc, McpError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(
        exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | httpx.TransportError
    )


@dataclass
class _Held:
    session: ClientSession
    stop: asyncio.Event
    task: asyncio.Task[None]


@dataclass
class McpLink:
    """A server's ``ClientSession``, opened by :meth:`start`, used by :meth:`call`, ended by :meth:`close`."""

    config: ServerConfig
    starts: int = 0
    """How many times the server was started (or connected to) in this session."""
    tools: list[Tool] = field(default_factory=list)
    _held: _Held | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _closed: bool = False

    async def start(self) -> list[Tool]:
        """Start the server, initialize the session and list its tools (raises why it could not)."""
        async with self._lock:
            await self._open()
        return self.tools

    async def call(self, tool: str, args: dict[str, Any], timeout: float) -> CallToolResult:
        """Call ``tool``; if the server died, start it again once and retry; a second death raises."""
        held = await self._current()
        for attempt in (1, 2):
            try:
                async with asyncio.timeout(timeout):
                    return await held.session.call_tool(tool, args)
            except Exception as exc:
                if not _died(exc):
                    raise
                if attempt == 2:
                    await self._drop(held)
                    raise ServerDied(
                        f"MCP server {self.config.name} stopped again after it was restarted ({reason(exc)})"
                    ) from None
                first = reason(exc)
            log.warning("MCP server %s stopped (%s): starting it again", self.config.name, first)
            try:
                held = await self._restart(held)
            except Exception as exc:
                raise ServerDied(
                    f"MCP server {self.config.name} stopped ({first}) and did not start again: {reason(exc)}"
                ) from None
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """End the session and the server (a stdio server's process is terminated with its children)."""
        async with self._lock:
            self._closed = True
            held, self._held = self._held, None
        if held is not None:
            await _end(held)

    async def _current(self) -> _Held:
        async with self._lock:
            if self._closed:
                raise ServerDied(f"MCP server {self.config.name} was closed with its session")
            if self._held is None:
                return await self._open()
            return self._held

    async def _restart(self, dead: _Held) -> _Held:
        async with self._lock:
            if self._closed:
                raise ServerDied("the session closed")
            if self._held is not dead and self._held is not None:
                return self._held  # another call restarted it already
            self._held = None
        await _end(dead)
        async with self._lock:
            return self._held or await self._open()

    async def _drop(self, dead: _Held) -> None:
        async with self._lock:
            if self._held is dead:
                self._held = None
        await _end(dead)

    async def _open(self) -> _Held:
        """Start the holder task and wait until its session is ready (called with the lock held)."""
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.create_task(self._hold(ready, stop), name=f"mcp-{self.config.name}")
        self.starts += 1
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                session = await asyncio.shield(ready)
        except BaseException:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        self._held = _Held(session, stop, task)
        return self._held

    async def _hold(self, ready: asyncio.Future[ClientSession], stop: asyncio.Event) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                self.tools = await _list_tools(session)
                ready.set_result(session)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(reason(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                log.info("MCP server %s ended: %s", self.config.name, reason(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        c = self.config
        if c.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            return stdio_client(StdioServerParameters(command=c.command, args=list(c.args), env=c.env))
        return _http(c)


@contextlib.asynccontextmanager
async def _http(config: ServerConfig) -> Any:
    import httpx
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if config.transport == "sse":
        async with sse_client(config.url, headers=config.headers) as streams:
            yield streams
        return
    timeout = httpx.Timeout(CONNECT_TIMEOUT_S, read=300.0)
    async with (
        create_mcp_http_client(headers=config.headers, timeout=timeout) as client,
        streamable_http_client(config.url, http_client=client) as streams,
    ):
        yield streams


async def _list_tools(session: ClientSession) -> list[Tool]:
    from mcp.types import PaginatedRequestParams

    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            return tools


async def _end(held: _Held) -> None:
    held.stop.set()
    done, _ = await asyncio.wait({held.task}, timeout=CLOSE_TIMEOUT_S)
    if not done:
        held.task.cancel()
        await asyncio.wait({held.task}, timeout=CLOSE_TIMEOUT_S)
