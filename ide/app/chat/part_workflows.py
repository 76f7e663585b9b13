"""The chat's workflow box: the session's workflows listed, and one picked as ``/workflow NAME`` does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal

from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import Chat
from ide.app.parts.needs import Requires

if TYPE_CHECKING:
    from ide.protocol.workflow import WorkflowList


class Workflows(Part):
    """Lists the workflows when a session is ready; a pick switches the session's mode."""

    spec = Spec("workflows", order=25)
    chat_dock = Requires(Chat)
    workflowsReceived = Signal(object)
    """The session's workflows, its pick and the reranker in use (WorkflowList), after a list or select."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.chat = self.chat_dock.panel
        self.chat.workflowChosen.connect(self.request)
        self.workflowsReceived.connect(self._show)

    def request(self, select: str | None = None) -> bool:
        """List the workflows, or pick ``select`` (``auto``: the orchestrator picks)."""
        from ide.protocol.workflow import (  # the session's, after the first frame
            WORKFLOWS_LIST,
            WORKFLOWS_SELECT,
            SelectWorkflowParams,
            WorkflowsParams,
        )

        session_id = self.bridge.session_id
        if session_id is None:
            return False
        if select is None:
            params: WorkflowsParams = WorkflowsParams(session_id=session_id)
            return self.bridge.request(WORKFLOWS_LIST, params, self.workflowsReceived.emit)
        chosen = SelectWorkflowParams(session_id=session_id, name=select)
        return self.bridge.request(WORKFLOWS_SELECT, chosen, self.workflowsReceived.emit)

    def on_session_ready(self, *_: object) -> None:
        from ide.protocol.workflow import WORKFLOWS_LIST

        if self.bridge.supports(WORKFLOWS_LIST):
            self.request()

    def _show(self, listing: WorkflowList) -> None:
        self.chat.set_workflows(listing)
        if listing.mode and listing.mode != self.bridge.mode:
            # Picking a workflow switches the session to the workflow mode, as /workflow NAME does.
            self.bridge.note_mode(listing.mode)
        if listing.problems:
            self.ctx.message(f"Workflow files not loaded: {listing.problems[0]}", 15000)
