"""When the window drives an ACP agent that is not Arbor: it works in a shadow of the workspace, whatever it
changes there — through ``fs/*``, its own tools or shell commands — is captured after each tool call and
at the turn's end into Arbor's review (one session, :mod:`ide.client.foreign`, through its Qt adapter
:class:`~ide.app.foreign.review_backend.ReviewBackend`), and its tool calls and plans make a tree in the
Search tree dock (:class:`~ide.app.tree.tool_tree.ToolCallTree`), since such an agent sends no
``_arbor/tree`` events. Where no shadow can be made, its ``fs/write_text_file`` calls alone are held for
review, and the chat says so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ide.app.acp_client import BackendState
from ide.app.background import spawn
from ide.app.chat.conversation import TurnNotice
from ide.app.foreign.review_backend import ReviewBackend
from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import Chat, Review, SearchTrees
from ide.app.parts.needs import Uses
from ide.app.tree.tool_tree import ToolCallTree

if TYPE_CHECKING:
    from ide.client.events import SessionEvent
    from ide.protocol.review import ChangeSetView


class ForeignAgent(Part):
    """The window's adapter over the foreign agent's session: offers the bridge the review backend as its
    shadow capability, captures after each tool call and at the turn's end, says what moved on the
    tool-call tree and what the review noted in the conversation."""

    spec = Spec("foreign", order=20)
    trees = Uses(SearchTrees)
    review_dock = Uses(Review)
    chat = Uses(Chat)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.review = ReviewBackend(ctx.workspace, fallback=self.bridge, confine=self._confine, parent=self)
        self.review.enabled = self.is_foreign
        self.tree = ToolCallTree()
        self._turns = 0
        self._session: str | None = None
        self.bridge.offer_shadow(self.review)
        self.review.changesetReceived.connect(self._show_changeset)
        self.review.noted.connect(self._note)
        self.review.died.connect(self._on_review_died)
        self.bridge.agentChanged.connect(self._on_agent)
        ctx.window.closed.connect(lambda: spawn(self.stop(), name="stop review backend"))

    async def stop(self) -> None:
        """The agent first — until it has ended it may still write into its shadow and its TMPDIR, and a
        folder removed under a writer is left half there — then the shadow, the review backend and the
        TMPDIR."""
        await self.bridge.aclose()
        await self.review.aclose()
        self.review.remove_scratch()

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

    def _confine(self) -> Sequence[str] | None:
        """What a confined agent may write besides its shadow (None: ``review.confine_agents`` is off)."""
        review = self.ctx.settings.review
        return review.agent_writable if review.confine_agents else None

    def _on_agent(self, meta: object) -> None:
        if meta is not None and self.review.shadow is not None:  # Arbor's own agent now: no shadow needed
            spawn(self.review.close_shadow(), name="close the agent's shadow")

    def _on_review_died(self, code: int, stderr_tail: str) -> None:
        """Arbor's review backend ended on its own while an agent works in its shadow: said at once, with
        Restart (the banner's, as for the agent's own death), and the agent — whose work can no longer
        be captured — is stopped, so the status bar says so. Restart starts it in a new shadow."""
        if not self.is_foreign():
            return  # Arbor's own agent: the review backend starts again when another agent needs it
        self.ctx.banner.show_backend_died(
            code,
            stderr_tail,
            what="Arbor's review backend",
            fix=f"{self.bridge.agent_name or 'The agent'} can no longer be reviewed, so it was stopped. "
            "Restart to go on: it starts again in a new shadow of the workspace, and what it changed there "
            "since the last capture is not in the review.",
        )
        self.bridge.stop()

    def _note(self, title: str, detail: str) -> None:
        if self.chat is not None:
            self.chat.panel.apply_update(TurnNotice("review", title, detail))

    def on_state(self, state: str) -> None:
        if state == BackendState.BUSY and self.is_foreign():
            self._turns += 1
            self._emit(self.tree.start_turn(f"turn {self._turns}"))

    def on_session_event(self, event: SessionEvent) -> None:
        from ide.client.events import ToolCallDone, ToolCallEvent

        if not self.is_foreign():
            return
        self._emit(self.tree.apply(event))
        if not isinstance(event, ToolCallEvent):
            return
        self.review.session.attribution.reported(event.id, event.title)
        if isinstance(event, ToolCallDone) and self.review.shadow is not None:
            spawn(self._capture_after(final=False), name="capture the agent's shadow")

    def on_turn_finished(self, stop_reason: str, _meta: object) -> None:
        if not self.is_foreign():
            return
        if self.review.shadow is None:
            self._emit(self.tree.finish(stop_reason))
        else:
            spawn(self._finish_turn(stop_reason), name="capture the agent's turn")

    async def _finish_turn(self, stop_reason: str) -> None:
        """The turn's last capture (after those of its tool calls), then its tree run ends — unless the
        next turn already started (it ended the run)."""
        run = self.tree.run_id
        await self._capture_after(final=True)
        if run is not None and self.tree.run_id == run:
            self._emit(self.tree.finish(stop_reason))

    async def _capture_after(self, *, final: bool) -> None:
        """Capture the shadow and say on the tree which tool call changed which files, as far as it can be
        told (:class:`~ide.client.foreign.Attribution`)."""
        moved = await self.review.capture_after(final=final)
        if moved is None or not moved.files or not moved.by:
            return
        note = f"changed in the shadow, held for review: {moved.listed}"
        if len(moved.by) > 1:
            note = f"{note} — by one of the tool calls that ran meanwhile: {'; '.join(moved.titles)}"
        for tool_call_id in moved.by:
            self._emit(self.tree.changed(tool_call_id, note))

    def _emit(self, events: list[Any]) -> None:
        if events and self.trees is not None:
            self.trees.add_events(events)

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        if self.review_dock is not None and self.owns(changeset.session_id):
            self.review_dock.show_foreign(changeset, self.review)
