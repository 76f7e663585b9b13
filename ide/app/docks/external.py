"""When the window drives an ACP agent that is not Arbor: its file edits go to Arbor's review (through
:class:`~ide.app.external.ReviewBackend`), and its tool calls and plans make a tree in the Search tree dock
(:class:`~ide.app.tool_tree.ToolCallTree`), since such an agent sends no ``_arbor/tree`` events."""

from __future__ import annotations

from typing import Any, ClassVar

from ide.app.acp_client import BackendState
from ide.app.background import spawn
from ide.app.docks.base import AppContext, Part, Spec
from ide.app.docks.capabilities import Review, SearchTrees
from ide.app.docks.needs import Uses
from ide.app.external import ReviewBackend
from ide.app.tool_tree import ToolCallTree
from ide.protocol.review import ChangeSetView


class ForeignAgent(Part):
    """Serves the agent's ``fs/*`` through the review backend and builds its tool-call tree."""

    spec = Spec("external", order=20)
    exposes: ClassVar[dict[str, str]] = {"review_backend": "review"}
    trees = Uses(SearchTrees)
    review_dock = Uses(Review)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.review = ReviewBackend(ctx.workspace, fallback=self.bridge, parent=self)
        self.review.enabled = self.is_foreign
        self.tree = ToolCallTree()
        self._turns = 0
        self._session: str | None = None
        bridge = self.bridge
        bridge.fs_handler = self.review
        self.review.changesetReceived.connect(self._show_changeset)
        ctx.window.closed.connect(lambda: spawn(self.review.aclose(), name="stop review backend"))  # type: ignore[attr-defined]

    def is_foreign(self) -> bool:
        """The agent is not Arbor (its initialize carried no ``_meta.arbor``)."""
        return self.bridge.state != BackendState.STOPPED and self.bridge.agent_meta is None

    def owns(self, session_id: str | None) -> bool:
        """Whether ``session_id`` is the review session of the foreign agent's edits."""
        return session_id is not None and session_id == self.review.session_id

    def on_session_ready(self, session_id: str, _replayed: bool) -> None:
        if session_id != self._session:
            self._session = session_id
            self.review.reset(self.bridge.agent_name or "another agent")
            self.tree = ToolCallTree(self.bridge.agent_name or "agent")
            self._turns = 0

    def on_state(self, state: str) -> None:
        if state == BackendState.BUSY and self.is_foreign():
            self._turns += 1
            self._emit(self.tree.start_turn(f"turn {self._turns}"))

    def on_session_update(self, update: Any) -> None:
        if self.is_foreign():
            self._emit(self.tree.update(update))

    def on_turn_finished(self, stop_reason: str, _meta: object) -> None:
        if self.is_foreign():
            self._emit(self.tree.finish(stop_reason))

    def _emit(self, events: list[Any]) -> None:
        if events and self.trees is not None:
            self.trees.add_events(events)

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        if self.review_dock is not None and self.owns(changeset.session_id):
            self.review_dock.show_external(changeset, self.review)
