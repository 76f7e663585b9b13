"""One agent session: its workspace, settings, model router, review and conversation, built whole.

How a prompt turn runs over it is :mod:`ide.backend.turn`; the extensions see a session through the
:class:`~ide.backend.extensions.SessionApi` it implements (its change set and review, memory, shadow,
workflow, and whether a turn runs), never its parts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_diff_content,
    update_agent_message,
    update_agent_thought,
    update_plan,
    update_tool_call,
)
from acp.schema import ContentToolCallContent, ToolCallLocation
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from ide.backend.limits import DIFF_INLINE_CAP, RAW_IO_CAP
from ide.backend.runs import ArmedFork, Kept, LiveRun, RunBook, RunInfo
from ide.backend.transcript import ask_to_run_tests
from ide.changes import ChangeError, ChangeSet, Review
from ide.changes.refresh import refresh_review
from ide.llm import ContextTier, ModelError, ModelRouter
from ide.protocol import TurnMeta
from ide.protocol.tree import is_recovered
from ide.search.base import AskPermission
from ide.search.events import ProgressEvent, cap_text
from ide.search.react import build_react_graph, react_config
from ide.settings import Settings
from ide.tools import ToolServices

if TYPE_CHECKING:
    from ide.backend.services import WorkspaceServices
    from ide.backend.transcript import Channel
    from ide.changes.shadow import Shadow
    from ide.memory.store import MemoryStore
    from ide.tools.mcp import McpConnection
    from ide.workflows.mode import ActiveRun

log = logging.getLogger(__name__)

HISTORY_FOR_SEARCH = 8
"""Recent conversation messages a tree search is given as context."""


class Session:
    """A live session, built whole by the ACP agent: its channel to the client, its MCP servers, what to
    tell at its next turn, a foreign agent's shadow and a review kept across a restart all come in here.
    The conversation itself is in the LangGraph checkpointer under ``id``."""

    def __init__(
        self,
        session_id: str,
        cwd: str,
        settings: Settings,
        services: WorkspaceServices,
        channel: Channel,
        *,
        mode: str = "react",
        mcp: McpConnection | None = None,
        notices: Iterable[str] = (),
        shadow: Shadow | None = None,
        saved_review: dict[str, Any] | None = None,
    ) -> None:
        self.id = session_id
        self.cwd = cwd
        self.settings = settings
        self.services = services
        """The workspace's index, language servers, memory, checkpointer and stores (its sessions share)."""
        self.channel = channel
        self.mcp = mcp
        """The session's MCP servers (from the client's ``session/new`` or ``session/load``)."""
        self.extra_tools = tuple(mcp.tools) if mcp is not None else ()
        """Tools of those MCP servers (ToolSpecs)."""
        self._mode = mode
        self._notices = list(notices)
        shared = services.memory
        self.memory: MemoryStore | None = shared.for_session(self.id) if shared is not None else None
        """The workspace's memory writing as this session: the agent's memory tools, hints, lessons."""
        self.router = ModelRouter(settings, base_dir=Path(cwd))
        self.router.on_context = channel.context_fill
        self.router.meter.on_spent = channel.usage_spent
        self.router.on_notice = channel.notice
        # Rule 3: the agent's edits go into this overlay; only the review writes the user's files.
        self.review = Review(
            ChangeSet(Path(cwd), max_file_bytes=settings.workspace.max_file_bytes),
            session_id=self.id,
            title=None,
            store=services.batches,
            commit_mode=settings.review.commit,
        )
        """The session's pending review, which owns its change set (:attr:`changeset`)."""
        if saved_review is not None:
            try:
                self.review = Review.restore(saved_review, store=services.batches)
            except ChangeError as exc:
                log.warning("could not restore the pending review of %s: %s", session_id, exc)
        self._shadow = shadow
        self.allowed_commands: set[str] = set()
        """Commands the user answered "always" for: each runs again in this session without asking (only
        that exact command — "always" for the tests never lets a model-chosen command run)."""
        self.ask_permission: AskPermission = functools.partial(ask_to_run_tests, channel.conn, self)
        """Asks the client whether a command may run in a scratch worktree."""
        self._workflow = "auto"
        self._picked: dict[str, str] = {}
        """The model and workflow picked for this session, kept in the session store for session/load."""
        self._interrupted = _resumable(services.store.load_workflow(session_id, cwd))
        self.book = RunBook(services.store, session_id, cwd)
        """The session's runs and their branches (ide.backend.runs)."""
        self._fork: ArmedFork | None = None
        self._turn: asyncio.Task[Any] | None = None
        self._prompting = False
        self._cancel_requested = False
        self._graph: Any = None

    # What a handler uses (SessionApi) ---------------------------------------------------------------

    @property
    def changeset(self) -> ChangeSet:
        """The overlay the agent's edits go into: the review's change set, so the two never differ."""
        return self.review.changeset

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        """Run the next turns in ``mode``, kept in the session store."""
        self._mode = mode
        self.services.store.update(self.id, self.cwd, mode=mode)

    def use_model(self, model: str) -> None:
        """Run the next turns on ``model`` as the default model (roles set to their own model keep it): a
        router of its own, so a running turn keeps the one it started with; the session's usage goes on."""
        self._picked["model"] = model
        self.services.store.save_options(self.id, self.cwd, dict(self._picked))
        llm = self.settings.llm.model_copy(update={"model": model})
        self.settings = self.settings.model_copy(update={"llm": llm})
        router = ModelRouter(self.settings, base_dir=Path(self.cwd))
        router.meter = self.router.meter
        router.on_context, router.on_notice = self.router.on_context, self.router.on_notice
        self.router = router

    @property
    def workflow(self) -> str:
        """The workflow the workflow mode runs (auto: the orchestrator picks)."""
        return self._workflow

    def choose_workflow(self, name: str, *, switch_mode: bool = True) -> bool:
        """Run ``name`` (or ``auto``) in the workflow mode from now on (switching to it unless
        ``switch_mode`` is False: a session restored keeps its mode); True when the mode changed."""
        self._workflow = name
        self._picked["workflow"] = name
        self.services.store.save_options(self.id, self.cwd, dict(self._picked))
        if self._mode == "workflow" or not switch_mode:
            return False
        self.set_mode("workflow")
        return True

    @property
    def interrupted(self) -> ActiveRun | None:
        """A workflow run stopped before it finished (cancelled, or the backend was killed): /resume."""
        return self._interrupted

    async def keep_workflow_run(self, active: ActiveRun) -> None:
        """Keep the workflow run as it stands in the session store (what /resume needs after a restart)."""
        self._interrupted = active if active.status == "cancelled" else None
        store = self.services.store
        await asyncio.to_thread(store.save_workflow, self.id, self.cwd, active.model_dump(mode="json"))

    @property
    def shadow(self) -> Shadow | None:
        """A foreign agent's shadow workspace, when this session reviews what it changed there."""
        return self._shadow

    def drop_shadow(self) -> Shadow | None:
        """Take the shadow off the session (its review stays); the caller removes it."""
        shadow, self._shadow = self._shadow, None
        return shadow

    @property
    def running(self) -> bool:
        """A turn of Arbor's agent runs (Apply waits for it; Roll back leaves its change set alone)."""
        return self._turn is not None and not self._turn.done()

    @property
    def cancel_requested(self) -> bool:
        """The client cancelled the turn being answered."""
        return self._cancel_requested

    async def save_review(self) -> None:
        """Persist the pending review, so a restarted backend loses none of it."""
        # Taken on the loop thread (snapshot() copies its state); the worker thread only writes it out.
        snapshot = self.review.snapshot() if self.changeset.changed_paths() else None
        await asyncio.to_thread(self.services.store.save_review, self.id, self.cwd, snapshot)

    def branch(self, changeset_id: str) -> ChangeSet | None:
        """A branch change set of one of the session's last tree searches (or its own change set)."""
        if changeset_id == self.changeset.id:
            return self.changeset
        return self.book.branch(changeset_id)

    async def runs(self) -> list[RunInfo]:
        """Every run of the session, oldest first: stored with its history, and the live one."""
        return await self.book.runs()

    async def kept(self, run_id: str) -> Kept | None:
        """What one of the session's runs left to continue from: its branches, the state after its nodes,
        its notes (None: not kept any more)."""
        return await self.book.kept(run_id)

    @property
    def live_run(self) -> LiveRun | None:
        """The run of the turn now running, once it started recording."""
        return self.book.live if self.running else None

    def arm_fork(self, fork: ArmedFork | None) -> None:
        """Make the next prompt continue from a node (its text the hint); None disarms."""
        self._fork = fork

    def take_fork(self) -> ArmedFork | None:
        fork, self._fork = self._fork, None
        return fork

    def use_changes(self, changeset: ChangeSet) -> None:
        """Make a copy of ``changeset`` the pending change set, in a review with no decisions yet."""
        fresh = ChangeSet(Path(self.cwd), max_file_bytes=self.settings.workspace.max_file_bytes)
        fresh.adopt(changeset)
        self.review = Review(
            fresh,
            session_id=self.id,
            title=self.review.title,
            store=self.services.batches,
            commit_mode=self.review.commit_mode,
        )

    # A prompt's life (ide.backend.prompt) -----------------------------------------------------------

    @property
    def prompting(self) -> bool:
        """A ``session/prompt`` is being answered (its turn runs, or its changes are being offered)."""
        return self._prompting

    def start_turn(self, turn: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``turn`` as the task of the prompt being answered, until :meth:`prompt_answered`."""
        self._cancel_requested = False
        self._turn = asyncio.create_task(turn)
        self._prompting = True
        return self._turn

    def prompt_answered(self) -> None:
        self._prompting = False

    def cancel(self) -> None:
        """Stop the running turn; what it proposed so far stays pending."""
        self._cancel_requested = True
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    def notice(self, text: str) -> None:
        """Say ``text`` as a thought at the start of the next turn (e.g. an MCP server that did not start)."""
        self._notices.append(text)

    def take_notices(self) -> list[str]:
        notices, self._notices = self._notices, []
        return notices

    # What a turn runs with (ide.backend.turn) -------------------------------------------------------

    @property
    def checkpointer(self) -> Any:
        return self.services.checkpointer

    def tool_services(self) -> ToolServices:
        """What the session's tools may use: the workspace's services, its own memory view, MCP tools."""
        return self.services.tools(self.extra_tools, memory=self.memory or False)

    def catch_up(self) -> dict[str, str]:
        """Before a turn of Arbor's agent: the hunks the user rejected leave the change set, and each pending
        edit's base follows what the disk holds now (ide.changes.refresh), so the agent reads today's files
        with its pending edits on top. Returns the edits that overlap the disk's change, by path. A foreign
        agent's shadow does both itself (``_arbor/external/turn_start``)."""
        if self._shadow is not None:
            return {}
        return refresh_review(self.review, settle=True)

    async def observation_cap(self) -> int:
        """How much of a tool's output a model step sees, for the react role's context tier."""
        try:
            tier = await self.router.context_tier("react")
        except ModelError:
            tier = ContextTier.SMALL
        return tier.observation_cap(self.settings.agent.observation_cap_bytes)

    async def graph(self) -> Any:
        """The ReAct graph over the session's checkpointer: its thread is the conversation every mode's
        turns join (ReAct's own runs compile the same graph over the same checkpointer)."""
        if self._graph is None:
            self._graph = build_react_graph(self.checkpointer)
        return self._graph

    def _config(self) -> dict[str, Any]:
        return react_config(self.id, self.settings.agent.max_steps)

    async def history(self) -> list[BaseMessage]:
        """The conversation's recent questions and answers (from the ReAct thread in the checkpointer)."""
        graph = await self.graph()
        state = await graph.aget_state(self._config())
        messages = state.values.get("messages", []) if state else []
        said = [m for m in messages if isinstance(m, HumanMessage) or (isinstance(m, AIMessage) and m.text)]
        return said[-HISTORY_FOR_SEARCH:]

    async def add_exchange(self, question: str, answer: str) -> None:
        """The question and answer join the session's conversation, so later turns (any mode) see them."""
        graph = await self.graph()
        await graph.aupdate_state(
            self._config(), {"messages": [HumanMessage(question), AIMessage(answer)]}, as_node="agent"
        )

    def usage_meta(self) -> TurnMeta:
        """A turn's answer that ran no architecture: the session's usage and mode."""
        return TurnMeta(usage=self.router.usage_snapshot(), architecture=self._mode)


def _resumable(saved: dict[str, Any] | None) -> ActiveRun | None:
    """The workflow run the session store kept for a session, when it can go on (/resume)."""
    if saved is None:
        return None
    from ide.workflows.mode import ActiveRun

    run = ActiveRun.model_validate(saved)
    return run if run.resumable else None


def translate_event(event: ProgressEvent | dict[str, Any]) -> BaseModel | None:
    """The ACP session update for one graph event (see ide.search.events)."""
    kind = event.get("type")
    if kind == "text":
        return update_agent_message(text_block(event["text"]))
    if kind == "thought":
        return update_agent_thought(text_block(event["text"]))
    if kind == "plan":
        # ACP plan statuses are pending / in_progress / completed; a failed task is shown as completed
        # with the failure said in its text.
        return update_plan(
            plan_entry(
                entry["content"] if entry["status"] != "failed" else f"{entry['content']} — failed",
                status="completed" if entry["status"] == "failed" else entry["status"],
            )
            for entry in event["entries"]
        )
    if kind == "tool_start":
        title = event["title"] + (" · recovered from text" if is_recovered(event["id"]) else "")
        return start_tool_call(
            event["id"],
            title,
            kind=event["kind"],
            status="in_progress",
            locations=[ToolCallLocation(path=path, line=line) for path, line in event["locations"]],
            raw_input=_cap_json(event["args"]),
        )
    if kind == "tool_end":
        output = cap_text(event["output"], RAW_IO_CAP)
        content: list[Any] = [ContentToolCallContent(type="content", content=text_block(output))]
        content.extend(
            tool_diff_content(diff.path, diff.new_text or "", diff.old_text)
            for diff in event.get("diffs", ())
            if len(diff.old_text or "") + len(diff.new_text or "") <= DIFF_INLINE_CAP
        )
        return update_tool_call(
            event["id"],
            status="failed" if event["failed"] else "completed",
            content=content,
            raw_output={"output": output},
        )
    log.debug("ignoring graph event %r", kind)
    return None


def _cap_json(args: dict[str, Any]) -> dict[str, Any]:
    return {
        key: cap_text(value, RAW_IO_CAP) if isinstance(value, str) else value for key, value in args.items()
    }
