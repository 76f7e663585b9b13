"""Asks the ACP client (``session/request_permission``) before an MCP server's tool that may change things runs."""

from __future__ import annotations

import logging
import uuid

from acp import Client, RequestError
from acp.schema import PermissionOption, ToolCallUpdate

from ide.backend.limits import RAW_IO_CAP, cap_text
from ide.tools.mcp import Answer, ToolAsk

log = logging.getLogger(__name__)


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
    except (RequestError, ConnectionError) as exc:
        log.info("client cannot be asked to run %s (%s): not running it", ask.title, exc)
        return "unavailable"
    if getattr(response.outcome, "outcome", None) == "cancelled":
        return "cancelled"
    choice = getattr(response.outcome, "option_id", None)
    return {"allow": "once", "always": "always"}.get(choice or "", "reject")  # type: ignore[return-value]
