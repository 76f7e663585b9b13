"""A tiny real MCP server on stdio for tests: one tool that looks up a ticket."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

server = FastMCP("tickets")


@server.tool()
def ticket_status(ticket: str) -> str:
    """The status of a ticket by its id (e.g. ARB-7)."""
    return f"{ticket}: open, assigned to Ada, due Friday"


if __name__ == "__main__":
    server.run()
