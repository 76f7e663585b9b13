"""The Workspace dock: the file tree; a file chosen there opens in the viewer."""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from ide.app.docks.base import AppContext, Dock
from ide.app.workspace import WorkspacePanel


class WorkspaceDock(Dock):
    """The workspace's files (File → Refresh Files lists them again)."""

    name = "workspace"
    title = "Workspace"
    order = 10
    area = Qt.DockWidgetArea.LeftDockWidgetArea
    exposes: ClassVar[dict[str, str]] = {"workspace_panel": "panel"}

    def __init__(self, ctx: AppContext) -> None:
        self.panel = WorkspacePanel(ctx.workspace, ctx.settings.workspace)
        super().__init__(ctx, self.panel)
        self.panel.fileActivated.connect(ctx.viewer.show_file)
        ctx.action("file", "&Refresh Files", self.panel.refresh, QKeySequence.StandardKey.Refresh)

    def start(self) -> bool:
        self.panel.refresh()
        return True
