"""Asking the client's permission (ACP ``session/request_permission``), and a session's MCP servers,
whose tools that change things ask it before each call."""

from __future__ import annotations

import functools
import logging
import uuid
from typing import TYPE_CHECKING, Any

from acp import Client
from acp.schema import PermissionOption, ToolCallUpdate, ToolKind

from ide.backend.limits import RAW_IO_CAP
from ide.search.events import cap_text

if TYPE_CHECKING:
    from ide.backend.session import Session
    from ide.tools.mcp import Answer, McpConnection, ToolAsk

log = logging.getLogger(__name__)


async def ask_client(
    conn: Client,
    session_id: str,
    call: str,
    title: str,
    kind: ToolKind,
    options: list[PermissionOption],
    **shown: Any,
) -> str | None:
    """Ask the client about a pending tool call (id ``call-<8 hex>``, showing ``shown``: its ``content``
    or ``raw_input``): the id of the option the user chose, None when they cancelled the question.

    A client that cannot be asked raises (an error answer, or the connection is gone): what that means
    is each caller's to say.
    """
    response = await conn.request_permission(
        session_id=session_id,
        tool_call=ToolCallUpdate(
            tool_call_id=f"{call}-{uuid.uuid4().hex[:8]}", title=title, kind=kind, status="pending", **shown
        ),
        options=options,
    )
    outcome = response.outcome
    return outcome.option_id if getattr(outcome, "outcome", None) == "selected" else None


async def connect_mcp(conn: Client, session_id: str, servers: Any, replaced: Session | None) -> McpConnection:
    """Start the servers a client handed ``session/new`` (or ``session/load``), their calls asking
    ``conn``; the servers of the session this one replaces (same id, opened again) end first."""
    from ide.tools import builtin_tool_names
    from ide.tools.mcp import connect

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
    options = [
        PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
        PermissionOption(
            option_id="always", name=f"Always allow {ask.tool} in this session", kind="allow_always"
        ),
        PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
    ]
    try:
        choice = await ask_client(
            conn, session_id, f"mcp-{ask.server}", ask.title, ask.kind, options, raw_input=arguments
        )
    except Exception as exc:  # an error answer (RequestError), or the connection is gone
        log.info("client cannot be asked to run %s (%s): not running it", ask.title, exc)
        return "unavailable"
    if choice is None:
        return "cancelled"
    return {"allow": "once", "always": "always"}.get(choice, "reject")  # type: ignore[return-value]
