"""Tools of the MCP servers an ACP client hands a session (``session/new`` ``mcpServers``).

Each server (stdio or http) is reached through langchain-mcp-adapters; its tools become agent tools
like ours (same toolbox, same change-set rule: they run in the server, not on our files). A server that
does not start or answer is reported with the reason and left out; the session goes on without it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from ide.settings import ToolSettings
from ide.tools.base import ToolError, ToolSpec
from ide.tools.workspace import Workspace

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 120.0


class McpArgs(BaseModel):
    """Arguments of an MCP tool: checked by the server against its own schema."""

    model_config = ConfigDict(extra="allow")


@dataclass
class McpConnection:
    """What connecting a session's MCP servers gave: tools, and servers that failed with why."""

    tools: list[ToolSpec] = field(default_factory=list)
    connected: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def notice(self) -> str:
        """A line for the user about the servers (empty when there were none)."""
        parts = []
        if self.connected:
            parts.append(f"MCP servers connected: {', '.join(self.connected)} ({len(self.tools)} tools)")
        parts += [f"MCP server {name} is not available: {why}" for name, why in self.failed.items()]
        return "\n".join(parts)


def server_config(server: Any) -> tuple[str, dict[str, Any]]:
    """(name, langchain-mcp-adapters connection) of an ACP ``McpServerStdio`` / ``HttpMcpServer``."""
    name = server.name
    if getattr(server, "url", None):
        kind = getattr(server, "type", "http")
        headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
        transport = "sse" if kind == "sse" else "streamable_http"
        return name, {"transport": transport, "url": server.url, "headers": headers or None}
    env = {e.name: e.value for e in getattr(server, "env", None) or []}
    return name, {
        "transport": "stdio",
        "command": server.command,
        "args": list(server.args),
        "env": env or None,
    }


async def connect(servers: list[Any], taken: set[str]) -> McpConnection:
    """Connect every server and wrap its tools; ``taken`` are tool names already in use (ours)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient

    result = McpConnection()
    if not servers:
        return result
    configs = dict(server_config(s) for s in servers)
    client = MultiServerMCPClient(
        {k: {key: v for key, v in c.items() if v is not None} for k, c in configs.items()}
    )
    loop = asyncio.get_running_loop()
    for name in configs:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                tools = await client.get_tools(server_name=name)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            result.failed[name] = _reason(exc)
            log.warning("MCP server %s failed: %s", name, result.failed[name])
            continue
        result.connected.append(name)
        for tool in tools:
            spec_name = tool.name if tool.name not in taken else f"{name}__{tool.name}"
            taken.add(spec_name)
            result.tools.append(_spec(spec_name, name, tool, loop))
    return result


def _reason(exc: BaseException) -> str:
    inner = exc
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    if isinstance(inner, TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s"
    return f"{type(inner).__name__}: {inner}" if str(inner) else type(inner).__name__


def _spec(name: str, server: str, tool: Any, loop: asyncio.AbstractEventLoop) -> ToolSpec:
    schema = tool.args_schema if isinstance(tool.args_schema, dict) else tool.args_schema.model_json_schema()

    def run(workspace: Workspace, settings: ToolSettings, args: McpArgs) -> str:
        # Tools run in a worker thread; the MCP session lives on the backend's loop.
        future = asyncio.run_coroutine_threadsafe(tool.ainvoke(args.model_dump()), loop)
        try:
            output = future.result(CALL_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise ToolError(f"{server}.{tool.name} gave no answer within {CALL_TIMEOUT_S:g} s") from None
        except Exception as exc:
            raise ToolError(f"{server}.{tool.name} failed: {exc}") from None
        if isinstance(output, tuple):  # (content, artifact)
            output = output[0]
        if isinstance(output, list):
            return "\n".join(
                getattr(part, "text", None)
                or (part.get("text") if isinstance(part, dict) else str(part))
                or ""
                for part in output
            )
        return str(output)

    return ToolSpec(
        name=name,
        description=f"[MCP {server}] {tool.description or tool.name}",
        kind="other",
        args_model=McpArgs,
        run=run,
        title=lambda a, n=f"{server}.{tool.name}": n,
        location=lambda a: None,
        json_schema={"title": name, "description": tool.description or name, **schema},
    )
