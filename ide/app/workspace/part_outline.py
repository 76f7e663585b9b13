"""The Outline dock: the viewer's file's definitions, and the code index's progress in the status bar."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal

from ide.app.acp_client import BackendState
from ide.app.parts.base import LEFT, AppContext, Dock, Spec
from ide.app.parts.capabilities import OpensFiles
from ide.app.parts.needs import Requires
from ide.app.workspace.outline import OutlinePanel
from ide.app.workspace.symbols import IndexProgress

if TYPE_CHECKING:
    from ide.protocol.index import IndexChanged, IndexStatus, OutlineResult

INDEX_POLL_MS = 300
"""How often the status bar asks for the index's progress while it is being built."""


class OutlineDock(Dock):
    """Asks for the outline of each file the viewer shows, again when the index changed it."""

    spec = Spec("outline", title="Outline", place=LEFT, order=50)
    files = Requires(OpensFiles)

    outlineReceived = Signal(object)
    """OutlineResult of one file (``_arbor/index/outline``)."""
    indexStatus = Signal(object)
    """IndexStatus of the workspace's code index (``_arbor/index/status``)."""

    def __init__(self, ctx: AppContext) -> None:
        self.panel = OutlinePanel()
        super().__init__(ctx, self.panel)
        self.progress = IndexProgress()
        ctx.window.statusBar().addPermanentWidget(self.progress)
        self._poll = QTimer(self)
        self._poll.setSingleShot(True)
        self._poll.setInterval(INDEX_POLL_MS)
        self._poll.timeout.connect(self.request_index_status)
        self._state: str | None = None
        ctx.viewer.fileShown.connect(self.request_outline)
        self.panel.lineActivated.connect(self.files.open_location)
        self.indexStatus.connect(self._on_index_status)
        self.outlineReceived.connect(self._on_outline)

    def subscribe(self) -> None:
        from ide.protocol.index import INDEX_CHANGED

        self.bridge.on_notification(INDEX_CHANGED, self._on_index_changed)

    def request_index_status(self) -> None:
        """Ask for the index's state (this starts indexing the workspace if nothing has)."""
        from ide.protocol.index import INDEX_STATUS, IndexStatusParams

        params = IndexStatusParams(cwd=str(self.ctx.workspace))
        failed = self.progress.show_failure
        if not self.bridge.request(
            INDEX_STATUS, params, self.indexStatus.emit, lambda info: failed(info.message)
        ):
            self.progress.label.setText("")
            if not self.bridge.supports(INDEX_STATUS) and self.bridge.state != BackendState.STOPPED:
                self.panel.show_message("This agent has no code index: no outline or symbol search.")

    def request_outline(self, path: str) -> None:
        """Ask for the outline of ``path`` (the file the viewer shows)."""
        from ide.protocol.index import INDEX_OUTLINE, OutlineParams

        real = Path(path).resolve()
        if not real.is_relative_to(self.ctx.workspace.resolve()):
            # A file outside the workspace (F12 into a library) is shown read-only; the index has none.
            self.panel.show_message("Outside the workspace: no outline.")
            return
        params = OutlineParams(cwd=str(self.ctx.workspace), path=path)
        shown = self.panel.show_message
        sent = self.bridge.request(
            INDEX_OUTLINE, params, self.outlineReceived.emit, lambda info: shown(info.message)
        )
        if not sent and self.bridge.supports(INDEX_OUTLINE):
            self.panel.show_message("The outline appears when the backend is running.")

    def on_session_ready(self, *_: object) -> None:
        self.request_index_status()
        if self.ctx.viewer.current_path is not None:
            self.request_outline(str(self.ctx.viewer.current_path))

    def _on_index_status(self, status: IndexStatus) -> None:
        self.progress.set_status(status)
        was, self._state = self._state, status.state
        current = self.ctx.viewer.current_path
        if status.state == "indexing":
            self._poll.start()
        elif was == "indexing" and current is not None:
            self.request_outline(str(current))  # the outline may have waited for it

    def _on_index_changed(self, change: IndexChanged) -> None:
        if Path(change.cwd) != self.ctx.workspace:
            return
        self._on_index_status(change.status)
        current = self.ctx.viewer.current_path
        if current is not None and str(current.resolve()) in change.paths:
            self.request_outline(str(current))  # the open file was edited (or the agent's change applied)

    def _on_outline(self, result: OutlineResult) -> None:
        current = self.ctx.viewer.current_path
        if current is not None and Path(result.path) == current.resolve():
            self.panel.set_outline(result)
