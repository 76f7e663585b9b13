"""A session's MCP servers, connected with the ACP permission ask their tools that change things need."""

from __future__ import annotations

import functools
import logging
import uuid
from typing import TYPE_CHECKING, Any

from acp import Client
from acp.schema import PermissionOption, ToolCallUpdate

from ide.backend.limits import RAW_IO_CAP
from ide.search.events import cap_text
from ide.tools.mcp import Answer, McpConnection, ToolAsk, connect

if TYPE_CHECKING:
    from ide.backend.session import Session

log = logging.getLogger(__name__)


async def connect_mcp(conn: Client, session_id: str, servers: Any, replaced: Session | None) -> McpConnection:
    """Start the servers a client handed ``session/new`` (or ``session/load``), their calls asking
    ``conn``; the servers of the session this one replaces (same id, opened again) end first."""
    from ide.tools import builtin_tool_names

    if replaced is not None and replaced.mcp is not None:
        await replaced.mcp.aclose()
    connection = await connect(list(servers or []), builtin_tool_names())
    connection.ask = functools.partial(ask_tool_permission, conn, session_id)
    return connection


async def ask_tool_permission(conn: Client, session_id: str, ask: ToolAsk) -> Answer:
    """Allow once, always (this tool, this session) or reject, as Zed and Claude Code offer it.

    The tool call the client is shown carries the call's arguments and a title naming server and tool;
    a client that cannot be asked (it answers with an error, or the connection is gone) means no.
    """
    arguments = {k: cap_text(v, RAW_IO_CAP) if isinstance(v, str) else v for k, v in ask.args.items()}
    try:
        response = await conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id=f"mcp-{ask.server}-{uuid.uuid4().hex[:8]}",
                title=ask.title,
                kind=ask.kind,
                status="pending",
                raw_input=arguments,
            ),
            options=[
                PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                PermissionOption(
                    option_id="always", name=f"Always allow {ask.tool} in this session", kind="allow_always"
                ),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
    except Exception as exc:  # an error answer (RequestError), or the connection is gone
        log.info("client cannot be asked to run %s (%s): not running it", ask.title, exc)
        return "unavailable"
    if getattr(response.outcome, "outcome", None) == "cancelled":
        return "cancelled"
    choice = getattr(response.outcome, "option_id", None)
    return {"allow": "once", "always": "always"}.get(choice or "", "reject")  # type: ignore[return-value]
