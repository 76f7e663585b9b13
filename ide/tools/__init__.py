"""The agent's tools, each a typed function over the session's workspace."""

from pathlib import Path

from ide.settings import Settings
from ide.tools.base import FileDiff, Toolbox, ToolKind, ToolOutcome, ToolSpec
from ide.tools.read import READ_TOOLS
from ide.tools.workspace import Overlay, ToolError, Workspace

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
]


def read_toolbox(root: Path, settings: Settings) -> Toolbox:
    """The read-only tools (read_file, list_dir, grep) over ``root``."""
    return Toolbox(Workspace(root, settings.workspace), settings.tools, READ_TOOLS)


def agent_toolbox(root: Path, settings: Settings, overlay: Overlay) -> Toolbox:
    """Read and edit tools over ``root`` as the session's change set ``overlay`` leaves it."""
    from ide.tools.edit import EDIT_TOOLS

    return Toolbox(Workspace(root, settings.workspace, overlay), settings.tools, (*READ_TOOLS, *EDIT_TOOLS))
