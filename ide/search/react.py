"""The ReAct architecture as a LangGraph graph: the model thinks and calls tools until it answers.

    START → agent ─(tool calls, steps left)→ tools → agent
                  └─(answer, or out of steps)→ END

Progress leaves the graph as custom stream events (see ``ide.search.events``), which the ACP agent turns
into session updates; the conversation itself lives in the checkpointer under the session's thread.
:class:`ReactArchitecture` runs the graph on a RunContext like every other architecture.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import aclosing
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer, Command

from ide.llm.router import TRUNCATED_KEY
from ide.protocol.tree import ToolAction, TreeEvent
from ide.search.base import RunContext, RunOutcome
from ide.search.events import ProgressEvent, first_line
from ide.search.plan_fork import continuation
from ide.search.tree import TreeRecorder

ROLE = "react"

SYSTEM_PROMPT = """You are Arbor, a coding agent working in the workspace at {root}.
Read it with read_file(path, start_line?, end_line?), list_dir(path) and grep(pattern, path?).
Change it with edit_file(path, old_text, new_text), write_file, create_file, delete_file and
rename_file. Paths are relative to the workspace root. Your edits are proposals: the user reviews
them hunk by hunk before anything is written, and your reads already see them.
Look before you act: read the code that matters, make focused edits, then answer concisely in
Markdown, citing files as path:line."""


class ReactState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int
    hints: str
    """What the memory suggests for this turn's task (tool patterns, related investigations)."""


def close_dangling_tool_calls(messages: list[AnyMessage]) -> list[AnyMessage]:
    """Answer tool calls a cancelled turn left open, so the next model call sees a well-formed history."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    repaired: list[AnyMessage] = []
    for message in messages:
        repaired.append(message)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") not in answered:
                    repaired.append(
                        ToolMessage(
                            content="cancelled by the user before it ran",
                            tool_call_id=call.get("id") or "",
                            name=call["name"],
                            status="error",
                        )
                    )
    return repaired


def build_react_graph(checkpointer: Checkpointer = None) -> Any:
    """Compile the ReAct graph over ``checkpointer`` (the conversation's threads).

    What a turn uses — the model router, the tools over its change set, the step limit and the observation
    cap — comes with each run as its :class:`~ide.search.base.RunContext` (``context=`` of ``astream``), so
    one compiled graph serves every turn of a session, and its thread is the conversation other modes add
    their questions and answers to. Tools run through :meth:`RunContext.call_tool` like every
    architecture's; their start and end go to the graph's stream, which the run's tree records.
    """

    async def agent(state: ReactState, runtime: Runtime[RunContext]) -> Command[str]:
        ctx = runtime.context
        writer = get_stream_writer()

        def on_chunk(kind: str, text: str) -> None:
            writer({"type": kind, "text": text})

        step = state.get("steps", 0) + 1
        writer({"type": "step_start", "step": step})
        started = time.perf_counter()
        history = close_dangling_tool_calls(list(state.get("messages", [])))
        hints = state.get("hints")
        # The hint quotes every memory entry with its source (MemoryStore.hint): data, not instructions.
        memory = [SystemMessage(hints)] if hints else []
        system = SystemMessage(SYSTEM_PROMPT.format(root=ctx.changeset.root))
        reply = await ctx.router.stream(
            ROLE, [system, *memory, *history], tools=ctx.tools_for(), on_chunk=on_chunk
        )
        usage = reply.usage_metadata or {}
        writer(
            {
                "type": "step_end",
                "step": step,
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
                "latency_ms": (time.perf_counter() - started) * 1000,
                "truncated": reply.additional_kwargs.get(TRUNCATED_KEY),
            }
        )
        more = bool(reply.tool_calls) and step < ctx.settings.agent.max_steps
        return Command(update={"messages": [reply], "steps": step}, goto="tools" if more else END)

    async def tools(state: ReactState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        writer = get_stream_writer()

        async def announce(event: ProgressEvent) -> None:
            writer(event)

        last = state["messages"][-1]
        results = []
        for call in last.tool_calls:
            call_id = call.get("id") or ""
            outcome = await ctx.call_tool(call["name"], call["args"], announce=announce, call_id=call_id)
            results.append(
                ToolMessage(
                    content=outcome.output,
                    tool_call_id=call_id,
                    name=call["name"],
                    status="error" if outcome.failed else "success",
                )
            )
        return {"messages": results}

    graph = StateGraph(ReactState)
    graph.add_node("agent", agent, destinations=("tools", END))
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def turn_ran_out_of_steps(messages: list[AnyMessage]) -> bool:
    """True when the turn ended on tool calls it had no steps left to run."""
    return bool(messages) and isinstance(messages[-1], AIMessage) and bool(messages[-1].tool_calls)


class ReactTree:
    """Records a ReAct turn as a search tree: the prompt, then each model step and its tool calls.

    The chain reads root → step → action → step → … → answer; it is fed the graph's stream events
    (ide.search.events), so the tree is data derived from what the run really did.
    """

    def __init__(
        self,
        prompt: str,
        *,
        model: str,
        emit: Callable[[TreeEvent], None] | None = None,
        recorder: TreeRecorder | None = None,
        keep: Callable[[str], None] | None = None,
    ) -> None:
        self.recorder = recorder or TreeRecorder(architecture="react", emit=emit)
        self.model = model
        self.keep = keep
        """Called with each action node once its tool call ended: the run keeps its change set then."""
        self.root = self.recorder.add(None, kind="root", label=first_line(prompt), status="active")
        self._tip = self.root
        self._step: str | None = None
        self._thought: list[str] = []
        self._text: list[str] = []
        self._actions: dict[str, str] = {}

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "step_start":
            self._thought, self._text = [], []
            self._step = self.recorder.add(
                self._tip,
                kind="thought",
                label=f"step {event['step']}",
                status="active",
                role=ROLE,
                model=self.model,
            )
            self._tip = self._step
        elif kind == "thought":
            self._thought.append(event["text"])
        elif kind == "text":
            self._text.append(event["text"])
        elif kind == "step_end" and self._step is not None:
            thought = "".join(self._thought).strip() or None
            cut = event.get("truncated")
            if cut:
                self.recorder.update(
                    self._step,
                    reflection=f"The model server evaluated only {cut['evaluated']} of the ~{cut['sent']} "
                    "prompt tokens sent: it cut the front of the prompt (its window is smaller than "
                    "llm.num_ctx).",
                )
            self.recorder.update(
                self._step,
                thought=thought,
                label=first_line(thought or "".join(self._text)) or f"step {event['step']}",
                status="evaluated",
                input_tokens=event.get("input_tokens", 0),
                output_tokens=event.get("output_tokens", 0),
                latency_ms=event.get("latency_ms", 0.0),
            )
        elif kind == "tool_start":
            node = self.recorder.add(
                self._tip if self._step is None else self._step,
                kind="action",
                label=event.get("title") or event["name"],
                action=ToolAction.of({"name": event["name"], "args": event.get("args"), "id": event["id"]}),
                status="active",
            )
            self._actions[event["id"]] = node
            self._tip = node
        elif kind == "tool_end" and event.get("id") in self._actions:
            self.recorder.update(
                self._actions[event["id"]],
                observation=event.get("output"),
                status="failed" if event.get("failed") else "evaluated",
            )
            if self.keep is not None:
                self.keep(self._actions[event["id"]])

    def finish(self, stop_reason: str) -> None:
        """Close the run: the answer node (if any) on the best path, and the run's figures."""
        answer_text = "".join(self._text).strip()
        tip = self._tip
        if answer_text and stop_reason == "end_turn":
            tip = self.recorder.add(
                tip, kind="answer", label=first_line(answer_text), thought=answer_text, status="solution"
            )
        elif stop_reason != "end_turn":
            self.recorder.update(tip, status="terminated_early")
        self.recorder.update(self.root, status="evaluated")
        self.recorder.best_path(tip)
        nodes = self.recorder.tree.nodes.values()
        self.recorder.finish(
            stop_reason=stop_reason,
            steps=sum(1 for n in nodes if n.kind == "thought"),
            tool_calls=sum(1 for n in nodes if n.kind == "action"),
            input_tokens=sum(n.input_tokens for n in nodes),
            output_tokens=sum(n.output_tokens for n in nodes),
        )


def react_config(thread_id: str, max_steps: int) -> dict[str, Any]:
    """The graph's run configuration: the conversation thread, and room for ``max_steps`` steps."""
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 2 * max_steps + 4}


class ReactArchitecture:
    """ReAct as an architecture: the graph runs on the run's conversation thread (in its checkpointer, so
    the session remembers the turn), the tree is recorded from the graph's events, the answer streams.

    Continuing from a node (``ctx.fork``) it runs on a thread of its own that holds exactly the origin run's
    task, the node's trajectory (its thoughts, tool calls and observations) and the user's hint
    (:func:`~ide.search.plan_fork.continuation`), over the change set the node stood for; the session adds the
    question and answer to its conversation after it. After each tool call the run keeps its change set as
    the state of that action's node (``TreeRecorder.keep_state``), so a later run can continue from it.
    """

    name = "react"
    keeps_conversation = True
    """The graph adds the question and answer to the conversation itself."""

    async def run(self, ctx: RunContext) -> RunOutcome:
        settings = ctx.settings.agent
        from langgraph.checkpoint.memory import InMemorySaver

        fork = ctx.fork
        checkpointer = ctx.checkpointer if fork is None else None
        graph = build_react_graph(checkpointer or InMemorySaver())
        thread = ctx.thread_id or ctx.session_id or "run"
        config = react_config(thread if fork is None else f"{thread}:fork", settings.max_steps)
        tree = ReactTree(
            ctx.task,
            model=ctx.model_name(ROLE),
            recorder=ctx.recorder,
            keep=lambda node: ctx.recorder.keep_state(node, ctx.changeset, ctx.branches),
        )
        memory = ctx.services.memory
        hints = await asyncio.to_thread(memory.hint, ctx.task) if memory is not None else ""
        asked: list[AnyMessage] = [
            HumanMessage(ctx.task),
            *(continuation(fork)[0] if fork is not None else []),
        ]
        events = graph.astream(
            {"messages": asked, "steps": 0, "hints": hints},
            config=config,
            context=ctx,
            stream_mode="custom",
        )
        try:
            # Closed on the way out: a cancel that lands while an event is being sent (not while the graph
            # is awaited) would otherwise leave the graph's node, and its model call, running on.
            async with aclosing(events):
                async for event in events:
                    tree.on_event(event)
                    await ctx.progress(event)
        except asyncio.CancelledError:
            tree.finish("cancelled")
            raise
        state = await graph.aget_state(config)
        messages = state.values.get("messages", [])
        stop = "max_turn_requests" if turn_ran_out_of_steps(messages) else "end_turn"
        tree.finish(stop)
        answer = next((m.text for m in reversed(messages) if isinstance(m, AIMessage) and m.text), "")
        figures = {
            **ctx.recorder.tree.figures,
            "steps": state.values.get("steps", 0),
            "compactions": ctx.compactions(),
        }
        return RunOutcome(stop, answer=answer, figures=figures, answered=True)
