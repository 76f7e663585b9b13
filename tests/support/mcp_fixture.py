"""A tiny real MCP server for tests: one tool that looks up a ticket. On stdio, or with ``--http PORT``
streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("tickets", host="127.0.0.1", port=int(sys.argv[2]) if sys.argv[1:2] == ["--http"] else 8000)


@server.tool()
def ticket_status(ticket: str) -> str:
    """The status of a ticket by its id (e.g. ARB-7)."""
    return f"{ticket}: open, assigned to Ada, due Friday"


if __name__ == "__main__":
    server.run(transport="streamable-http" if sys.argv[1:2] == ["--http"] else "stdio")
