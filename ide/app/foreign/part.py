"""When the window drives an ACP agent that is not Arbor: it works in a shadow of the workspace, whatever it
changes there — through ``fs/*``, its own tools or shell commands — is captured after each tool call and
at the turn's end into Arbor's review (through :class:`~ide.app.foreign.review_backend.ReviewBackend`), and
its tool calls and plans make a tree in the Search tree dock (:class:`~ide.app.tree.tool_tree.ToolCallTree`),
since such an agent sends no ``_arbor/tree`` events. Where no shadow can be made, its ``fs/write_text_file``
calls alone are held for review, and the chat says so."""

from __future__ import annotations

import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from ide.app.acp_client import BackendState
from ide.app.background import spawn
from ide.app.chat.conversation import TurnNotice
from ide.app.foreign.review_backend import ReviewBackend
from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import Chat, Review, SearchTrees
from ide.app.parts.needs import Uses
from ide.app.tree.tool_tree import ToolCallTree
from ide.client.agentproc import AgentChoice
from ide.client.events import SessionEvent, ToolCallDone, ToolCallEvent
from ide.lifetime import scratch_prefix
from ide.sandbox import confined

if TYPE_CHECKING:
    from ide.protocol.review import ChangeSetView


class ForeignAgent(Part):
    """Serves the agent's ``fs/*`` through the review backend and builds its tool-call tree."""

    spec = Spec("foreign", order=20)
    trees = Uses(SearchTrees)
    review_dock = Uses(Review)
    chat = Uses(Chat)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.review = ReviewBackend(ctx.workspace, fallback=self.bridge, parent=self)
        self.review.enabled = self.is_foreign
        self.tree = ToolCallTree()
        self._turns = 0
        self._session: str | None = None
        bridge = self.bridge
        bridge.fs_handler = self.review
        bridge.place_agent = self._place_agent
        bridge.before_prompt = self.review.turn_start
        self.review.changesetReceived.connect(self._show_changeset)
        self.review.noted.connect(self._note)
        self.review.died.connect(self._on_review_died)
        bridge.agentChanged.connect(self._on_agent)
        self._titles: dict[str, str] = {}
        self._seen: dict[str, tuple[str, ...]] = {}
        """Each captured file's status and hunk ids at the last capture: what a tool call changed moved."""
        self._touched: dict[str, int] = {}
        """The tool calls reported since the last capture answered, each with when it was last reported
        (a count of updates): what the next capture finds, one of them did."""
        self._updates = 0
        self._scratch: str | None = None
        """A confined agent's TMPDIR (removed with the window)."""
        ctx.window.closed.connect(self._remove_scratch)
        ctx.window.closed.connect(lambda: spawn(self.review.aclose(), name="stop review backend"))

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

    async def _place_agent(self, choice: AgentChoice, resume: str | None) -> tuple[str, list[str]] | None:
        """The shadow the agent works in and its command line — under bwrap with
        ``review.confine_agents`` (ConfineError, an OSError, when it cannot be: it is not started)."""
        shadow = await self.review.open_shadow(choice.name, resume is not None)
        if shadow is None:
            return None
        command = list(choice.command)
        review = self.ctx.settings.review
        confined_to = ""
        if review.confine_agents:
            if self._scratch is None:
                self._scratch = tempfile.mkdtemp(prefix=scratch_prefix("agent-tmp"))
            home = [choice.env["HOME"]] if "HOME" in choice.env else []
            writable = review.agent_writable
            command = confined(command, shadow, self._scratch, self.ctx.workspace, writable, readable=home)
            confined_to = f"\nConfined with bwrap: it can write only there, in {self._scratch} (its TMPDIR)"
            confined_to += "".join(f", {path}" for path in review.agent_writable) + "."
        if not resume:
            self._seen = {}
            self._note(
                "The agent works in a shadow of the workspace",
                f"{shadow}\nWhatever it changes there — with its own tools or commands too — comes to the "
                f"Review dock; your files change only when you apply.{confined_to}",
            )
        return shadow, command

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

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
        if not self.is_foreign():
            return
        self._emit(self.tree.apply(event))
        if not isinstance(event, ToolCallEvent):
            return
        if event.title:
            self._titles[event.id] = event.title
        self._updates += 1
        self._touched[event.id] = self._updates
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
        """Capture the shadow (after a tool call, or at the turn's end also scanning the workspace), and
        say on the tree which tool call changed which files, as far as it can be told: the agent goes on
        while a capture runs, so what one finds is put on every tool call reported from the capture
        before it was asked for until it answered — one, when the agent waited."""
        asked = self._updates
        captured = await self.review.capture(workspace=final)
        if captured is None:
            return
        group = list(self._touched)
        # Reported while this capture ran: they may also have changed files after it looked.
        self._touched = {key: when for key, when in self._touched.items() if when > asked}
        now = {f.path: (f.status, *(h.id for h in f.hunks)) for f in captured.changeset.files}
        moved = [path for path, state in now.items() if self._seen.get(path) != state]
        moved += [path for path in self._seen if path not in now]
        self._seen = now
        if not moved or not group:
            return
        listed = ", ".join(f"{path} ({now[path][0] if path in now else 'reverted'})" for path in moved)
        note = f"changed in the shadow, held for review: {listed}"
        if len(group) > 1:
            names = "; ".join(self._titles.get(tool_call_id, tool_call_id) for tool_call_id in group)
            note = f"{note} — by one of the tool calls that ran meanwhile: {names}"
        for tool_call_id in group:
            self._emit(self.tree.changed(tool_call_id, note))

    def _emit(self, events: list[Any]) -> None:
        if events and self.trees is not None:
            self.trees.add_events(events)

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        if self.review_dock is not None and self.owns(changeset.session_id):
            self.review_dock.show_foreign(changeset, self.review)
