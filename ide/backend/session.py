"""One agent session: its workspace, settings, model router, tools and graph, and how a turn runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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
from acp.schema import (
    AvailableCommand,
    AvailableCommandsUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    ToolCallLocation,
    UnstructuredCommandInput,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from ide.backend.limits import DIFF_INLINE_CAP, RAW_IO_CAP
from ide.changes import ChangeSet, Review
from ide.changes.refresh import refresh_review
from ide.changes.review import commit_subject
from ide.llm import ContextTier, ModelError, ModelRouter
from ide.protocol import TurnMeta
from ide.protocol.tree import TreeEvent, is_recovered
from ide.search.base import AskPermission, RunContext
from ide.search.events import TREE_FLUSH_EVENTS, ProgressEvent, cap_text
from ide.search.react import build_react_graph, react_config
from ide.search.tree import TreeRecorder
from ide.settings import Settings
from ide.tools import ToolServices

if TYPE_CHECKING:
    from ide.backend.services import WorkspaceServices
    from ide.changes.shadow import Shadow
    from ide.memory.store import MemoryStore
    from ide.search.architectures import Architecture
    from ide.workflows.mode import ActiveRun

log = logging.getLogger(__name__)

Emit = Callable[[BaseModel], Awaitable[None]]
EmitTree = Callable[[list[TreeEvent]], Awaitable[None]]
TREE_FLUSH_S = 0.1
"""How often a tree search's events go to the client while it runs (they are batched in between)."""
KEPT_RUNS = 3
"""Runs whose branch change sets a session keeps, so the window can show any node's branch diff."""
HISTORY_FOR_SEARCH = 8
"""Recent conversation messages a tree search is given as context."""

COMMANDS = (
    AvailableCommand(
        name="workflow",
        description="Run a YAML workflow: /workflow lists them, /workflow NAME picks one for this session "
        "(auto: the orchestrator picks), /workflow NAME TASK runs TASK with it once",
        input=UnstructuredCommandInput(hint="NAME [task]"),
    ),
    AvailableCommand(
        name="resume", description="Go on with an interrupted workflow from its last finished step"
    ),
)
"""Slash commands the agent offers (ACP available_commands_update)."""


def parse_command(text: str) -> tuple[str, str] | None:
    """``("workflow", rest)`` or ``("resume", rest)`` for a prompt that is one of our slash commands."""
    stripped = text.strip()
    for command in COMMANDS:
        word = "/" + command.name
        if stripped == word or stripped.startswith(word + " ") or stripped.startswith(word + "\n"):
            return command.name, stripped[len(word) :].strip()
    return None


def commands_update() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=list(COMMANDS)
    )


class TreeBuffer:
    """Collects a run's tree events as the recorder makes them; :meth:`flush` sends them as one batch."""

    def __init__(self, emit_tree: EmitTree) -> None:
        self._emit_tree = emit_tree
        self._pending: list[TreeEvent] = []

    def append(self, event: TreeEvent) -> None:
        self._pending.append(event)

    async def flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            await self._emit_tree(batch)


@dataclass
class TurnResult:
    stop_reason: str
    meta: TurnMeta


@dataclass
class Session:
    """A live session. The conversation itself is in the LangGraph checkpointer under ``id``."""

    id: str
    cwd: str
    settings: Settings
    services: WorkspaceServices
    """The workspace's index, language servers, memory, checkpointer and stores (shared by its sessions)."""
    mode: str = "react"
    extra_tools: tuple[Any, ...] = ()
    """Tools of the MCP servers the client gave ``session/new`` (ToolSpecs)."""
    mcp: Any = None
    """The McpConnection of the session's MCP servers."""
    notices: list[str] = field(default_factory=list)
    """Said as a thought at the start of the next turn (e.g. an MCP server that did not start)."""
    memory: MemoryStore | None = field(init=False)
    """The workspace's memory writing as this session: the agent's memory tools, hints, lessons."""
    router: ModelRouter = field(init=False)
    review: Review = field(init=False)
    """The session's pending review, which owns its change set (:attr:`changeset`)."""
    turn: asyncio.Task[TurnResult] | None = None
    cancel_requested: bool = False
    prompting: bool = False
    """A ``session/prompt`` is being answered (its turn runs, or its changes are being offered)."""
    runs: OrderedDict[str, dict[str, ChangeSet]] = field(default_factory=OrderedDict)
    """Branch change sets of the last KEPT_RUNS runs, by run id, then change-set id."""
    workflow: str = "auto"
    """The workflow the workflow mode runs (auto: the orchestrator picks)."""
    ask_permission: AskPermission | None = None
    """Asks the client whether a test command may run (set by the ACP agent)."""
    remember_workflow: Callable[[ActiveRun], Awaitable[None]] | None = None
    """Keeps the current workflow run in the session store (set by the ACP agent)."""
    interrupted: ActiveRun | None = None
    """A workflow run stopped before it finished (cancelled, or the backend was killed): /resume."""
    allowed_commands: set[str] = field(default_factory=set)
    """Commands the user answered "always" for: each runs again in this session without asking (only that
    exact command — "always" for the tests never lets a model-chosen command run)."""
    commands_sent: bool = False
    """The slash commands went to the client on this connection."""
    shadow: Shadow | None = None
    """A foreign agent's shadow workspace, when this session reviews what it changed there."""

    def __post_init__(self) -> None:
        shared = self.services.memory
        # The workspace's memory, writing as this session: a note its agent stores records the session.
        self.memory = shared.for_session(self.id) if shared is not None else None
        self.router = ModelRouter(self.settings, base_dir=Path(self.cwd))
        # Rule 3: the agent's edits go into this overlay; only the review writes the user's files.
        self.review = Review(
            ChangeSet(Path(self.cwd), max_file_bytes=self.settings.workspace.max_file_bytes),
            session_id=self.id,
            title=None,
            store=self.services.batches,
            commit_mode=self.settings.review.commit,
        )
        self._graph: Any = None

    @property
    def changeset(self) -> ChangeSet:
        """The overlay the agent's edits go into: the review's change set, so the two never differ."""
        return self.review.changeset

    @property
    def checkpointer(self) -> Any:
        return self.services.checkpointer

    def tool_services(self) -> ToolServices:
        """What the session's tools may use: the workspace's services, its own memory view, MCP tools."""
        return self.services.tools(self.extra_tools, memory=self.memory or False)

    def restore_review(self, snapshot: dict[str, Any]) -> None:
        """Bring back the pending change set and decisions saved before the backend restarted."""
        self.review = Review.restore(snapshot, store=self.services.batches)

    def review_snapshot(self) -> dict[str, Any] | None:
        """What to save so a restarted backend still has the pending review (None: nothing pending)."""
        return self.review.snapshot() if self.changeset.changed_paths() else None

    async def save_review(self) -> None:
        """Persist the pending review, so a restarted backend loses none of it."""
        # Taken on the loop thread (snapshot() copies its state); the worker thread only writes it out.
        snapshot = self.review_snapshot()
        await asyncio.to_thread(self.services.store.save_review, self.id, self.cwd, snapshot)

    def catch_up(self) -> dict[str, str]:
        """Before a turn of Arbor's agent: the hunks the user rejected leave the change set, and each pending
        edit's base follows what the disk holds now (ide.changes.refresh), so the agent reads today's files
        with its pending edits on top. Returns the edits that overlap the disk's change, by path. A foreign
        agent's shadow does both itself (``_arbor/external/turn_start``)."""
        if self.shadow is not None:
            return {}
        return refresh_review(self.review, settle=True)

    async def _observation_cap(self) -> int:
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

    def branch(self, changeset_id: str) -> ChangeSet | None:
        """A branch change set of one of the session's last tree searches (or its own change set)."""
        if changeset_id == self.changeset.id:
            return self.changeset
        for branches in self.runs.values():
            if changeset_id in branches:
                return branches[changeset_id]
        return None

    async def run_turn(self, text: str, emit: Emit, emit_tree: EmitTree) -> TurnResult:
        """Run one prompt turn in the session's mode, emitting ACP updates and search-tree events.

        ``auto`` asks the orchestrator model first which mode fits (react, lats, tot, plan or workflow)
        and says what it chose as a thought.
        """
        command = parse_command(text)
        if command is not None:
            return await self._run_command(*command, emit, emit_tree)
        if self.review.title is None:
            self.review.title = commit_subject(text)
        mode = self.mode
        history: list[BaseMessage] | None = None
        if mode == "auto":
            from ide.search.architectures import choose_architecture

            history = await self._history()
            mode, reason = await choose_architecture(self.router, text, history)
            await emit(update_agent_thought(text_block(f"Auto mode: {mode} — {reason}\n")))
        return await self._run(mode, text, emit, emit_tree, history)

    def _workflow_mode(self, chosen: str | None = None, resume: ActiveRun | None = None) -> Architecture:
        from ide.workflows.mode import WorkflowMode

        async def remember(active: ActiveRun) -> None:
            self.interrupted = active if active.status == "cancelled" else None
            if self.remember_workflow is not None:
                await self.remember_workflow(active)

        return WorkflowMode(
            chosen=chosen or self.workflow,
            remember=remember,
            resume=resume,
        )

    def choose_workflow(self, name: str) -> bool:
        """Run ``name`` (or ``auto``) in the workflow mode from now on; True when the mode changed."""
        self.workflow = name
        if self.mode == "workflow":
            return False
        self.mode = "workflow"
        return True

    async def _run_command(self, name: str, rest: str, emit: Emit, emit_tree: EmitTree) -> TurnResult:
        """``/workflow [NAME [TASK]]`` and ``/resume``; answers that need no model are said directly."""
        from ide.workflows.loader import load_catalog
        from ide.workflows.mode import AUTO

        async def say(message: str) -> TurnResult:
            await emit(update_agent_message(text_block(message)))
            return TurnResult(
                "end_turn", TurnMeta(usage=self.router.usage_snapshot(), architecture=self.mode)
            )

        if name == "resume":
            if self.interrupted is None or not self.interrupted.resumable:
                return await say("There is no interrupted workflow in this session to resume.")
            active = self.interrupted
            return await self._run(
                "workflow", active.task, emit, emit_tree, architecture=self._workflow_mode(resume=active)
            )
        catalog = await asyncio.to_thread(load_catalog, Path(self.cwd))
        if not rest:
            lines = [
                f"- **{w.name}** ({w.metadata.workflow_type}): {w.metadata.description}"
                for w in catalog.workflows.values()
            ]
            lines += [f"- could not load {problem}" for problem in catalog.problems]
            current = "the orchestrator picks" if self.workflow == AUTO else self.workflow
            return await say(
                f"Workflows (now: {current}; `/workflow NAME` picks one, `/workflow auto` lets the "
                "orchestrator pick):\n" + "\n".join(lines)
            )
        chosen, _, task = rest.partition(" ")
        if chosen != AUTO and chosen not in catalog.workflows:
            known = ", ".join(sorted(catalog.workflows))
            return await say(f"There is no workflow {chosen!r}. The workflows are: {known}.")
        if task.strip():
            return await self._run(
                "workflow", task.strip(), emit, emit_tree, architecture=self._workflow_mode(chosen=chosen)
            )
        if self.choose_workflow(chosen):
            await emit(CurrentModeUpdate(session_update="current_mode_update", current_mode_id="workflow"))
        picked = "the orchestrator picks the workflow" if chosen == AUTO else f"the workflow is {chosen}"
        return await say(f"Workflow mode: {picked} for the next prompts.")

    async def _history(self) -> list[BaseMessage]:
        """The conversation's recent questions and answers (from the ReAct thread in the checkpointer)."""
        graph = await self.graph()
        state = await graph.aget_state(self._config())
        messages = state.values.get("messages", []) if state else []
        said = [m for m in messages if isinstance(m, HumanMessage) or (isinstance(m, AIMessage) and m.text)]
        return said[-HISTORY_FOR_SEARCH:]

    async def _architecture(self, mode: str) -> Architecture:
        if mode == "workflow":
            return self._workflow_mode()
        from ide.search.architectures import load_architecture

        return load_architecture(mode)

    async def _run(
        self,
        mode: str,
        text: str,
        emit: Emit,
        emit_tree: EmitTree,
        history: list[BaseMessage] | None = None,
        architecture: Architecture | None = None,
    ) -> TurnResult:
        """Run ``text`` with the architecture of ``mode`` on a RunContext; adopt the branch it chose.

        Its tree events go to the client after every model step and tool call, every TREE_FLUSH_S while
        it runs, and when it ends — whether it finishes, fails or is cancelled (the tree is then closed
        with the best result so far, and a cancelled search's best branch goes up for review).
        """
        for said in (await asyncio.to_thread(self.catch_up)).values():
            await emit(update_agent_thought(text_block(said + "\n")))
        architecture = architecture or await self._architecture(mode)
        keeps_conversation = getattr(architecture, "keeps_conversation", False)
        buffer = TreeBuffer(emit_tree)
        recorder = TreeRecorder(architecture=mode, emit=buffer.append)
        flush_tree = buffer.flush

        async def ticker() -> None:
            while True:
                await asyncio.sleep(TREE_FLUSH_S)
                await flush_tree()

        async def progress(event: ProgressEvent) -> None:
            update = translate_event(event)
            if update is not None:
                await emit(update)
            if event["type"] in TREE_FLUSH_EVENTS:
                await flush_tree()

        if history is None and not keeps_conversation:
            history = await self._history()
        ctx = RunContext(
            task=text,
            settings=self.settings,
            router=self.router,
            changeset=self.changeset,
            recorder=recorder,
            progress=progress,
            session_id=self.id,
            checkpointer=self.checkpointer,
            thread_id=self.id,
            history=history or [],
            services=self.tool_services(),
            ask_permission=self.ask_permission,
            observation_cap=await self._observation_cap(),
        )
        self.runs[recorder.run_id] = ctx.branches
        while len(self.runs) > KEPT_RUNS:
            self.runs.popitem(last=False)
        flusher = asyncio.create_task(ticker())
        try:
            outcome = await architecture.run(ctx)
        except BaseException as exc:
            if not recorder.tree.finished and recorder.tree.root is not None:
                close_failed_tree(ctx, exc)
            if isinstance(exc, asyncio.CancelledError):
                self._adopt_best_so_far(ctx)
            raise
        finally:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
            await flush_tree()
        if outcome.changeset is not None and outcome.changeset is not self.changeset:
            self.changeset.adopt(outcome.changeset)
        if outcome.answer and not outcome.answered:
            await emit(update_agent_message(text_block(outcome.answer)))
        if not recorder.tree.finished and recorder.tree.root is not None:
            ctx.finish_tree(outcome.stop_reason)
            await flush_tree()
        if not keeps_conversation:
            # The question and answer join the session's conversation, so later turns (any mode) see them.
            graph = await self.graph()
            await graph.aupdate_state(
                self._config(), {"messages": [HumanMessage(text), AIMessage(outcome.answer)]}, as_node="agent"
            )
        if self.checkpointer is not None:
            from ide.backend.services import prune_checkpoints

            await prune_checkpoints(self.checkpointer, [self.id, f"{self.id}:plan"])
        figures = outcome.figures or recorder.tree.figures
        await self.learn(text, outcome.answer, recorder.tree, outcome.stop_reason, mode)
        steps = figures.get("steps") if keeps_conversation else None
        return TurnResult(
            outcome.stop_reason,
            TurnMeta(
                usage=self.router.usage_snapshot(),
                steps=int(steps or figures.get("iterations") or figures.get("model_calls") or 0),
                architecture=mode,
                figures=figures,
            ),
        )

    async def learn(self, task: str, answer: str, tree: Any, stop_reason: str, architecture: str) -> None:
        """Let the memory learn from a finished turn (never fails the turn)."""
        if self.memory is None:
            return
        from ide.memory.learn import learn_from_run

        try:
            await asyncio.to_thread(
                learn_from_run,
                self.memory,
                task=task,
                answer=answer,
                tree=tree,
                stop_reason=stop_reason,
                changed=self.changeset.changed_paths(),
                architecture=architecture,
                session_id=self.id,
            )
        except Exception:
            log.exception("the memory could not learn from this turn")

    async def learn_error(self, task: str, error: str) -> None:
        """Record a failed turn in the memory's errors (for debugging; never raises)."""
        if self.memory is None:
            return
        from ide.memory.learn import learn_from_error

        try:
            await asyncio.to_thread(learn_from_error, self.memory, task=task, error=error, session_id=self.id)
        except Exception:
            log.exception("the memory could not record this error")

    def _adopt_best_so_far(self, ctx: RunContext) -> None:
        """After a cancelled search: the best branch so far (the tree's best path) goes up for review."""
        best = ctx.recorder.tree.best_path
        node = ctx.recorder.tree.nodes.get(best[-1]) if best else None
        branch = ctx.branches.get(node.changeset_id) if node and node.changeset_id else None
        if branch is not None and branch is not self.changeset and branch.changed_paths():
            self.changeset.adopt(branch)


def failure_reason(exc: BaseException) -> str:
    """What a failed turn's tree says about why: a model error's message and fix, else the exception."""
    if isinstance(exc, ModelError):
        return exc.info.text()
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def close_failed_tree(ctx: RunContext, exc: BaseException) -> None:
    """Close the tree of a run that raised: ``cancelled`` or ``error``, never a node left ``active``.

    A failed run's active nodes become ``failed`` and its reason is the root's observation and the
    figures' ``error``; a cancelled run's active nodes become ``terminated_early``.
    """
    cancelled = isinstance(exc, asyncio.CancelledError)
    recorder = ctx.recorder
    with recorder.lock:
        tree = recorder.tree
        ended = "terminated_early" if cancelled else "failed"
        for node in list(tree.nodes.values()):
            if node.status == "active":
                recorder.update(node.id, status=ended)
        if cancelled:
            ctx.finish_tree("cancelled")
            return
        reason = failure_reason(exc)
        root = tree.root
        if root is not None:
            said = tree.nodes[root].observation
            recorder.update(root, observation=f"{said}\n\nFailed: {reason}" if said else f"Failed: {reason}")
        # The reason first, so the tree dock's one-line summary of the run shows it.
        recorder.finish(**{"stop_reason": "error", "error": reason, **ctx.figures()})


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
