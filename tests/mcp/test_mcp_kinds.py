"""The ACP kind and the permission rule of an MCP tool come from its annotations."""

from __future__ import annotations

import pytest
from mcp.types import Tool, ToolAnnotations

from ide.tools.mcp import asks_first, tool_kind


def tool(name: str, **hints: bool) -> Tool:
    return Tool(
        name=name, inputSchema={"type": "object"}, annotations=ToolAnnotations(**hints) if hints else None
    )


@pytest.mark.parametrize(
    ("name", "hints", "kind", "asks"),
    [
        ("ticket_status", {}, "other", True),  # no annotations: shown as other, and asked
        ("read_text_file", {"readOnlyHint": True, "openWorldHint": False}, "read", False),
        ("search_files", {"readOnlyHint": True}, "read", False),  # closed world: a read
        ("web_search", {"readOnlyHint": True, "openWorldHint": True}, "search", False),
        ("fetchUrl", {"readOnlyHint": True, "openWorldHint": True}, "fetch", False),
        ("write_file", {"readOnlyHint": False, "destructiveHint": True}, "delete", True),
        ("create_directory", {"readOnlyHint": False, "destructiveHint": False}, "edit", True),
        ("runCommand", {"destructiveHint": False}, "execute", True),
        ("bump", {"idempotentHint": True}, "edit", True),  # annotated, but not read-only
    ],
)
def test_kind_and_permission_follow_the_annotations(
    name: str, hints: dict[str, bool], kind: str, asks: bool
) -> None:
    assert tool_kind(tool(name, **hints)) == kind
    assert asks_first(tool(name, **hints)) is asks
