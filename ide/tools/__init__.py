"""The agent's tools, each a typed function over the session's workspace.

The tool classes load LangChain (half a second), so they are imported on first use: ``arbor symbols``
and the indexer's worker processes need only :class:`Workspace`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.settings import Settings
from ide.tools.workspace import Overlay, ToolError, Workspace

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex
    from ide.codeintel.lsp import LspBridge
    from ide.memory.store import MemoryStore
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
    "ToolSpec",
    "Toolbox",
    "Workspace",
    "agent_toolbox",
    "read_toolbox",
    "read_tools",
]


def read_tools(
    index: CodeIndex | None, lsp: LspBridge | None = None, memory: MemoryStore | None = None
) -> tuple[ToolSpec, ...]:
    """read_file, list_dir and grep, plus find_symbol, file_outline, find_references and repo_map
    when the workspace's code index is open, plus the lsp_* tools when language servers are."""
    from ide.tools.read import READ_TOOLS

    tools: tuple[ToolSpec, ...] = READ_TOOLS
    if index is not None:
        from ide.tools.index import INDEX_TOOLS

        tools = (*tools, *INDEX_TOOLS)
    if lsp is not None:
        from ide.tools.lsp import LSP_TOOLS

        tools = (*tools, *LSP_TOOLS)
    if memory is not None:
        from ide.tools.memory import MEMORY_TOOLS

        tools = (*tools, *MEMORY_TOOLS)
    return tools


def read_toolbox(root: Path, settings: Settings, index: CodeIndex | None = None) -> Toolbox:
    """The read-only tools over ``root``."""
    from ide.tools.base import Toolbox

    return Toolbox(Workspace(root, settings.workspace, index=index), settings.tools, read_tools(index))


def agent_toolbox(
    root: Path,
    settings: Settings,
    overlay: Overlay,
    index: CodeIndex | None = None,
    lsp: LspBridge | None = None,
    memory: MemoryStore | None = None,
    extra: Sequence[ToolSpec] = (),
) -> Toolbox:
    """Read and edit tools over ``root`` as the session's change set ``overlay`` leaves it, plus ``extra``
    (the tools of the session's MCP servers)."""
    from ide.tools.base import Toolbox
    from ide.tools.edit import EDIT_TOOLS

    workspace = Workspace(root, settings.workspace, overlay, index, lsp, memory)
    return Toolbox(workspace, settings.tools, (*read_tools(index, lsp, memory), *EDIT_TOOLS, *extra))


def builtin_tool_names() -> set[str]:
    """Every tool name Arbor itself may offer (an MCP tool with one of these names gets a prefix)."""
    from ide.tools.edit import EDIT_TOOLS
    from ide.tools.index import INDEX_TOOLS
    from ide.tools.lsp import LSP_TOOLS
    from ide.tools.memory import MEMORY_TOOLS
    from ide.tools.read import READ_TOOLS

    return {spec.name for spec in (*READ_TOOLS, *INDEX_TOOLS, *LSP_TOOLS, *EDIT_TOOLS, *MEMORY_TOOLS)}
