"""The agent's tools, each a typed function over the session's workspace.

The tool classes load LangChain (half a second), so they are imported on first use: ``arbor symbols``
and the indexer's worker processes need only the confined file system (:mod:`ide.fs`).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.fs import Overlay, ToolError
from ide.settings import Settings
from ide.tools.workspace import ToolServices, Workspace

if TYPE_CHECKING:
    from ide.tools.base import FileDiff, Toolbox, ToolKind, ToolOutcome, ToolSpec
    from ide.tools.read import READ_TOOLS

_LAZY = {
    "FileDiff": "ide.tools.base",
    "Toolbox": "ide.tools.base",
    "ToolKind": "ide.tools.base",
    "ToolOutcome": "ide.tools.base",
    "ToolSpec": "ide.tools.base",
    "READ_TOOLS": "ide.tools.read",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ide.tools' has no attribute {name!r}")


__all__ = [
    "READ_TOOLS",
    "FileDiff",
    "Overlay",
    "ToolError",
    "ToolKind",
    "ToolOutcome",
    "ToolServices",
    "ToolSpec",
    "Toolbox",
    "Workspace",
    "builtin_tool_names",
    "tool_specs",
    "toolbox",
]


def tool_specs(services: ToolServices, *, read_only: bool = False) -> tuple[ToolSpec, ...]:
    """read_file, list_dir and grep; find_symbol, file_outline, find_references and repo_map when the
    code index is open; the lsp_* tools when language servers are; the memory tools when memory is on;
    and unless ``read_only`` the editing tools and the MCP servers' tools."""
    from ide.tools.read import READ_TOOLS

    tools: tuple[ToolSpec, ...] = READ_TOOLS
    if services.index is not None:
        from ide.tools.index import INDEX_TOOLS

        tools = (*tools, *INDEX_TOOLS)
    if services.lsp is not None:
        from ide.tools.lsp import LSP_TOOLS

        tools = (*tools, *LSP_TOOLS)
    if services.memory is not None:
        from ide.tools.memory import MEMORY_TOOLS

        tools = (*tools, *MEMORY_TOOLS)
    if read_only:
        return tools
    from ide.tools.edit import EDIT_TOOLS

    return (*tools, *EDIT_TOOLS, *services.extra)


def toolbox(
    root: Path,
    settings: Settings,
    overlay: Overlay | None = None,
    services: ToolServices | None = None,
    *,
    read_only: bool = False,
) -> Toolbox:
    """The agent's tools over ``root`` as the change set ``overlay`` leaves it (see :func:`tool_specs`).

    The one way every caller — sessions, tree searches, workflow stages, ``arbor mcp`` — builds tools."""
    from ide.tools.base import Toolbox

    services = services or ToolServices()
    workspace = Workspace(root, settings.workspace, overlay, services)
    return Toolbox(workspace, settings.tools, tool_specs(services, read_only=read_only))


def builtin_tool_names() -> set[str]:
    """Every tool name Arbor itself may offer (an MCP tool with one of these names gets a prefix)."""
    from ide.tools.edit import EDIT_TOOLS
    from ide.tools.index import INDEX_TOOLS
    from ide.tools.lsp import LSP_TOOLS
    from ide.tools.memory import MEMORY_TOOLS
    from ide.tools.read import READ_TOOLS

    return {spec.name for spec in (*READ_TOOLS, *INDEX_TOOLS, *LSP_TOOLS, *EDIT_TOOLS, *MEMORY_TOOLS)}
