"""A tiny real MCP server that keeps state: each start appends its pid to the file named by
``COUNTER_PIDS``; ``bump`` counts up (changes state, so it asks first), ``peek`` reads it (read-only),
``crash`` ends the process mid-call. On stdio, or with ``--sse PORT`` SSE on 127.0.0.1."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

SSE = sys.argv[1:2] == ["--sse"]
server = FastMCP("counter", host="127.0.0.1", port=int(sys.argv[2]) if SSE else 8000)
count = 0


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def bump(by: int = 1) -> str:
    """Add ``by`` to the counter and say its value."""
    global count
    count += by
    return f"count={count} pid={os.getpid()}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek() -> str:
    """The counter's value."""
    return f"count={count} pid={os.getpid()}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def crash() -> str:
    """Ends the server's process before it answers."""
    os._exit(3)


if __name__ == "__main__":
    with Path(os.environ["COUNTER_PIDS"]).open("a") as pids:
        pids.write(f"{os.getpid()}\n")
    server.run(transport="sse" if SSE else "stdio")
