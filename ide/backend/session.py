"""One agent session: its workspace, settings, model router, tools and graph, and how a turn runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_diff_content,
    update_agent_message,
    update_agent_thought,
    update_tool_call,
)
from acp.schema import ContentToolCallContent, ToolCallLocation
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from ide.backend.limits import DIFF_INLINE_CAP, RAW_IO_CAP
from ide.changes import BatchStore, ChangeSet, Review
from ide.llm import ContextTier, ModelError, ModelRouter
from ide.protocol import TurnMeta
from ide.protocol.tree import TreeEvent
from ide.search.events import cap_text
from ide.search.react import ReactTree, build_react_graph, turn_ran_out_of_steps
from ide.settings import Settings
from ide.tools import Toolbox, agent_toolbox

log = logging.getLogger(__name__)

Emit = Callable[[BaseModel], Awaitable[None]]
EmitTree = Callable[[list[TreeEvent]], Awaitable[None]]
TREE_FLUSH_EVENTS = ("step_start", "step_end", "tool_start", "tool_end")


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
    checkpointer: Any
    batches: BatchStore
    mode: str = "react"
    router: ModelRouter = field(init=False)
    changeset: ChangeSet = field(init=False)
    review: Review = field(init=False)
    toolbox: Toolbox = field(init=False)
    turn: asyncio.Task[TurnResult] | None = None
    cancel_requested: bool = False

    def __post_init__(self) -> None:
        self.router = ModelRouter(self.settings, base_dir=Path(self.cwd))
        # Rule 3: the agent's edits go into this overlay; only the review writes the user's files.
        self.changeset = ChangeSet(Path(self.cwd))
        self.review = Review(
            self.changeset,
            session_id=self.id,
            title=None,
            store=self.batches,
            commit_mode=self.settings.review.commit,
        )
        self.toolbox = agent_toolbox(Path(self.cwd), self.settings, self.changeset)
        self._graph: Any = None

    def restore_review(self, snapshot: dict[str, Any]) -> None:
        """Bring back the pending change set and decisions saved before the backend restarted."""
        self.review = Review.restore(snapshot, store=self.batches)
        self.changeset = self.review.changeset
        self.toolbox = agent_toolbox(Path(self.cwd), self.settings, self.changeset)
        self._graph = None

    def review_snapshot(self) -> dict[str, Any] | None:
        """What to save so a restarted backend still has the pending review (None: nothing pending)."""
        return self.review.snapshot() if self.changeset.changed_paths() else None

    async def _observation_cap(self) -> int:
        try:
            tier = await self.router.context_tier("react")
        except ModelError:
            tier = ContextTier.SMALL
        return tier.observation_cap(self.settings.agent.observation_cap_bytes)

    async def graph(self) -> Any:
        if self._graph is None:
            self._graph = build_react_graph(
                self.router,
                self.toolbox,
                max_steps=self.settings.agent.max_steps,
                observation_cap=await self._observation_cap(),
                checkpointer=self.checkpointer,
            )
        return self._graph

    async def run_turn(self, text: str, emit: Emit, emit_tree: EmitTree) -> TurnResult:
        """Run one prompt turn, emitting ACP session updates and search-tree events as the graph runs.

        Tree events go out in batches: after every model step and tool call, and when the turn ends,
        also when it is cancelled (the tree is kept and closed as terminated early).
        """
        if self.review.title is None:
            self.review.title = text.strip().splitlines()[0][:72] if text.strip() else None
        graph = await self.graph()
        config = {
            "configurable": {"thread_id": self.id},
            "recursion_limit": 2 * self.settings.agent.max_steps + 4,
        }
        pending: list[TreeEvent] = []
        tree = ReactTree(text, model=str(self.router.spec_for("react")), emit=pending.append)

        async def flush_tree() -> None:
            if pending:
                batch = list(pending)
                pending.clear()
                await emit_tree(batch)

        try:
            async for event in graph.astream(
                {"messages": [HumanMessage(text)], "steps": 0}, config=config, stream_mode="custom"
            ):
                update = translate_event(event)
                if update is not None:
                    await emit(update)
                tree.on_event(event)
                if event.get("type") in TREE_FLUSH_EVENTS:
                    await flush_tree()
        except asyncio.CancelledError:
            tree.finish("cancelled")
            await flush_tree()
            raise
        state = await graph.aget_state(config)
        messages = state.values.get("messages", [])
        stop = "max_turn_requests" if turn_ran_out_of_steps(messages) else "end_turn"
        tree.finish(stop)
        await flush_tree()
        return TurnResult(
            stop, TurnMeta(usage=self.router.usage_snapshot(), steps=state.values.get("steps", 0))
        )


def translate_event(event: dict[str, Any]) -> BaseModel | None:
    """The ACP session update for one graph event (see ide.search.events)."""
    kind = event.get("type")
    if kind == "text":
        return update_agent_message(text_block(event["text"]))
    if kind == "thought":
        return update_agent_thought(text_block(event["text"]))
    if kind == "tool_start":
        return start_tool_call(
            event["id"],
            event["title"],
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
