"""The agent's tools, each a typed function over the session's workspace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ide.settings import Settings
from ide.tools.base import FileDiff, Toolbox, ToolKind, ToolOutcome, ToolSpec
from ide.tools.read import READ_TOOLS
from ide.tools.workspace import Overlay, ToolError, Workspace

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex

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


def read_tools(index: CodeIndex | None) -> tuple[ToolSpec, ...]:
    """read_file, list_dir and grep, plus find_symbol, file_outline, find_references and repo_map
    when the workspace's code index is open."""
    if index is None:
        return READ_TOOLS
    from ide.tools.index import INDEX_TOOLS

    return (*READ_TOOLS, *INDEX_TOOLS)


def read_toolbox(root: Path, settings: Settings, index: CodeIndex | None = None) -> Toolbox:
    """The read-only tools over ``root``."""
    return Toolbox(Workspace(root, settings.workspace, index=index), settings.tools, read_tools(index))


def agent_toolbox(
    root: Path, settings: Settings, overlay: Overlay, index: CodeIndex | None = None
) -> Toolbox:
    """Read and edit tools over ``root`` as the session's change set ``overlay`` leaves it."""
    from ide.tools.edit import EDIT_TOOLS

    workspace = Workspace(root, settings.workspace, overlay, index)
    return Toolbox(workspace, settings.tools, (*read_tools(index), *EDIT_TOOLS))
