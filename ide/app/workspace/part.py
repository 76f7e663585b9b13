"""The Workspace dock: the file tree; a file chosen there opens in the viewer, and a location another part
opens is shown in the viewer and selected in the tree."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from ide.app.chat.panel import resolve_location
from ide.app.parts.base import LEFT, AppContext, Dock, Spec
from ide.app.parts.capabilities import OpensFiles, Review
from ide.app.parts.needs import Uses
from ide.app.workspace.panel import WorkspacePanel


class WorkspaceDock(Dock):
    """The workspace's files (File → Refresh Files lists them again)."""

    spec = Spec("workspace", title="Workspace", place=LEFT, order=10)
    provides = (OpensFiles,)
    review = Uses(Review)

    def __init__(self, ctx: AppContext) -> None:
        self.panel = WorkspacePanel(ctx.workspace, lambda: ctx.settings.workspace)
        super().__init__(ctx, self.panel)
        self.panel.fileActivated.connect(ctx.viewer.show_file)
        ctx.action("file", "&Refresh Files", self.panel.refresh, QKeySequence.StandardKey.Refresh)
        self._watching = False

    def open_location(self, path: str, line: int, column: int = 1) -> None:
        """Show ``path`` (absolute or workspace-relative) in the viewer at ``line``, selected in the tree."""
        viewer = self.ctx.viewer
        target = resolve_location(self.ctx.workspace, path)
        if viewer.current_path == target and line and viewer.message is None:
            viewer.editor.go_to(line, column)  # already on screen: just move
        else:
            viewer.show_file(target, line or None)
        self.panel.select(target)

    def start(self) -> bool:
        self.panel.refresh()
        if self.review is not None and not self._watching:
            # An Apply or a Roll back makes and removes files: list them again.
            self.review.applied.connect(self._files_changed)
            self.review.rolledBack.connect(self._files_changed)
            self._watching = True
        return True

    def _files_changed(self, _result: object) -> None:
        self.panel.refresh()
