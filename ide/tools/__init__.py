"""The agent's tools, each a typed function over the session's workspace."""

from ide.settings import Settings
from ide.tools.base import Toolbox, ToolKind, ToolOutcome, ToolSpec
from ide.tools.read import READ_TOOLS
from ide.tools.workspace import ToolError, Workspace

__all__ = [
    "READ_TOOLS",
    "ToolError",
    "ToolKind",
    "ToolOutcome",
    "ToolSpec",
    "Toolbox",
    "Workspace",
    "read_toolbox",
]


def read_toolbox(root, settings: Settings) -> Toolbox:
    """The read-only tools (read_file, list_dir, grep) over ``root``."""
    return Toolbox(Workspace(root, settings.workspace), settings.tools, READ_TOOLS)
