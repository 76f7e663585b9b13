"""The workspace as the agent's tools see it: the confined file system plus the session's services."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ide.fs import ConfinedFS, Overlay
from ide.settings import WorkspaceSettings

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex
    from ide.codeintel.lsp import LspBridge
    from ide.memory.store import MemoryStore
    from ide.tools.base import ToolSpec


@dataclass(frozen=True)
class ToolServices:
    """What the agent's tools may use beside the files: the code index, language servers, memory, and
    the tools of the session's MCP servers. Whatever is None is not offered."""

    index: CodeIndex | None = None
    """The workspace's code index (as on disk; the overlay's changed files are not in it), if open."""
    lsp: LspBridge | None = None
    """Language servers (on the backend's loop), when the session has them."""
    memory: MemoryStore | None = None
    """What earlier sessions learned (ide.memory), when memory is on."""
    extra: tuple[ToolSpec, ...] = ()
    """Tools of the session's MCP servers, offered with the editing tools."""


class Workspace(ConfinedFS):
    """The confined file system the tools read and edit through, with the services they may query."""

    def __init__(
        self,
        root: Path,
        settings: WorkspaceSettings | None = None,
        overlay: Overlay | None = None,
        services: ToolServices | None = None,
    ) -> None:
        super().__init__(root, settings, overlay)
        services = services or ToolServices()
        self.index = services.index
        self.lsp = services.lsp
        self.memory = services.memory
