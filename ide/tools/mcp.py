"""Tools of the MCP servers an ACP client hands a session (``session/new`` ``mcpServers``).

Each server (stdio, streamable HTTP or SSE) gets one live connection for the session's life
(:mod:`ide.tools.mcp_link`): started once, its tools listed from it, every call made on it, restarted
once if it dies, closed with the session. Its tools become agent tools like ours; they run in the server,
not on our files, so a tool the server does not annotate ``readOnlyHint: true`` runs only after the user
allowed it (ACP ``session/request_permission``, asked through :attr:`McpConnection.ask`). A server that
does not start or answer is reported with the reason and left out; the session goes on without it.

The ACP kind a call is shown with comes from the tool's annotations:

- no annotations: ``other``;
- ``readOnlyHint``: ``read``; with ``openWorldHint`` (it reaches outside) ``search`` when its name says it
  searches (search, find, query, lookup), else ``fetch``;
- ``destructiveHint`` (and not read-only): ``delete``;
- any other tool: ``execute`` when its name says it runs things (run, exec, execute, shell, command,
  eval, spawn), else ``edit``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from ide.fs import ToolError
from ide.settings import ToolSettings
from ide.tools.base import ToolKind, ToolSpec
from ide.tools.mcp_link import McpLink, ServerConfig, ServerDied, reason
from ide.tools.workspace import Workspace

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 120.0
"""How long one call may take in the server (the user's answer to the permission ask is not counted)."""

_SEARCH_WORDS = frozenset({"search", "find", "query", "lookup"})
_RUN_WORDS = frozenset({"run", "exec", "execute", "shell", "command", "eval", "spawn"})

Answer = Literal["once", "always", "reject", "cancelled", "unavailable"]
"""What the user said to a permission ask; ``unavailable``: the client could not be asked."""


@dataclass(frozen=True)
class ToolAsk:
    """One permission ask: which tool of which server, shown how, with which arguments."""

    server: str
    tool: str
    title: str
    kind: ToolKind
    args: dict[str, Any]


Asker = Callable[[ToolAsk], Awaitable[Answer]]


class McpArgs(BaseModel):
    """Arguments of an MCP tool: checked by the server against its own schema."""

    model_config = ConfigDict(extra="allow")


def tool_kind(tool: Tool) -> ToolKind:
    """The ACP kind of an MCP tool, from its annotations (see the module's docstring)."""
    hints = tool.annotations
    if hints is None:
        return "other"
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", tool.name).lower()))
    if hints.readOnlyHint:
        if not hints.openWorldHint:
            return "read"
        return "search" if words & _SEARCH_WORDS else "fetch"
    if hints.destructiveHint:
        return "delete"
    return "execute" if words & _RUN_WORDS else "edit"


def asks_first(tool: Tool) -> bool:
    """Whether a call needs the user's permission: every tool not annotated ``readOnlyHint: true``."""
    return not (tool.annotations is not None and tool.annotations.readOnlyHint is True)


@dataclass
class McpConnection:
    """A session's MCP servers: their live links, their tools, and servers that failed with why."""

    tools: list[ToolSpec] = field(default_factory=list)
    connected: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    links: dict[str, McpLink] = field(default_factory=dict)
    ask: Asker | None = None
    """Asks the user before a tool that may change things runs (set by the ACP agent); None: refused."""
    allowed: set[str] = field(default_factory=set)
    """Tools the user allowed "always" in this session (by agent tool name)."""
    _calls: set[asyncio.Task[Any]] = field(default_factory=set)

    def notice(self) -> str:
        """A line for the user about the servers (empty when there were none)."""
        parts = []
        if self.connected:
            parts.append(f"MCP servers connected: {', '.join(self.connected)} ({len(self.tools)} tools)")
        parts += [f"MCP server {name} is not available: {why}" for name, why in self.failed.items()]
        return "\n".join(parts)

    async def invoke(self, name: str, server: str, tool: Tool, args: dict[str, Any]) -> str:
        """Ask first unless the tool is read-only (or allowed always), then call it on the live link."""
        task = asyncio.current_task()
        if task is not None:
            self._calls.add(task)
        try:
            title = _title(server, tool)
            if asks_first(tool) and name not in self.allowed:
                answer: Answer = "unavailable"
                if self.ask is not None:
                    answer = await self.ask(ToolAsk(server, tool.name, title, tool_kind(tool), args))
                if answer == "always":
                    self.allowed.add(name)
                elif answer != "once":
                    raise ToolError(_refusal(answer, title))
            try:
                result = await self.links[server].call(tool.name, args, CALL_TIMEOUT_S)
            except TimeoutError:
                raise ToolError(f"{title} gave no answer within {CALL_TIMEOUT_S:g} s") from None
            except ServerDied as exc:
                raise ToolError(f"{title} failed: {exc}") from None
            except Exception as exc:
                raise ToolError(f"{title} failed: {reason(exc)}") from None
            text = _text(result)
            if result.isError:
                raise ToolError(f"{title} failed: {text}")
            return text
        finally:
            if task is not None:
                self._calls.discard(task)

    async def aclose(self) -> None:
        """Stop the calls under way and end every server's session (and process)."""
        for task in list(self._calls):
            task.cancel()
        await asyncio.gather(*(link.close() for link in self.links.values()), return_exceptions=True)


def server_config(server: Any) -> ServerConfig:
    """How to reach an ACP ``McpServerStdio`` / ``HttpMcpServer`` / ``SseMcpServer``."""
    if getattr(server, "url", None):
        kind = getattr(server, "type", "http")
        headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
        transport = "sse" if kind == "sse" else "http"
        return ServerConfig(server.name, transport, url=server.url, headers=headers or None)
    env = {e.name: e.value for e in getattr(server, "env", None) or []}
    return ServerConfig(
        server.name, "stdio", command=server.command, args=tuple(server.args), env=env or None
    )


async def connect(servers: list[Any], taken: set[str]) -> McpConnection:
    """Start every server and wrap its tools; ``taken`` are tool names already in use (ours)."""
    result = McpConnection()
    loop = asyncio.get_running_loop()
    for config in (server_config(s) for s in servers):
        link = McpLink(config)
        try:
            tools = await link.start()
        except Exception as exc:
            result.failed[config.name] = reason(exc)
            log.warning("MCP server %s failed: %s", config.name, result.failed[config.name])
            continue
        result.links[config.name] = link
        result.connected.append(config.name)
        for tool in tools:
            spec_name = tool.name if tool.name not in taken else f"{config.name}__{tool.name}"
            taken.add(spec_name)
            result.tools.append(_spec(result, spec_name, config.name, tool, loop))
    return result


def _title(server: str, tool: Tool) -> str:
    return f"{tool.name} · MCP server {server}"


def _refusal(answer: Answer, title: str) -> str:
    if answer == "reject":
        return f"the user did not allow {title}: it did not run"
    if answer == "cancelled":
        return f"the permission request for {title} was cancelled: it did not run"
    return f"the client could not be asked for permission to run {title}, so it did not run"


def _text(result: CallToolResult) -> str:
    parts = []
    for part in result.content:
        kind = getattr(part, "type", "")
        if kind == "text":
            parts.append(part.text)
        elif kind == "resource":
            parts.append(getattr(part.resource, "text", None) or f"[resource {part.resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[{part.name}]({part.uri})")
        else:
            parts.append(f"[{kind} {getattr(part, 'mimeType', '')}]".replace(" ]", "]"))
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent))
    return "\n".join(parts)


def _spec(
    connection: McpConnection, name: str, server: str, tool: Tool, loop: asyncio.AbstractEventLoop
) -> ToolSpec:
    title = _title(server, tool)

    def run(workspace: Workspace, settings: ToolSettings, args: McpArgs) -> str:
        # Tools run in a worker thread; the MCP session and the ACP connection live on the backend's loop.
        future = asyncio.run_coroutine_threadsafe(
            connection.invoke(name, server, tool, args.model_dump()), loop
        )
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise ToolError(f"{title} was stopped: the session closed") from None

    return ToolSpec(
        name=name,
        description=f"[MCP {server}] {tool.description or tool.name}",
        kind="other",
        shown_kind=tool_kind(tool),
        args_model=McpArgs,
        run=run,
        title=lambda a: title,
        location=lambda a: None,
        json_schema={"title": name, "description": tool.description or name, **tool.inputSchema},
    )
