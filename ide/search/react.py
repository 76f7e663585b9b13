"""The ReAct architecture as a LangGraph graph: the model thinks and calls tools until it answers.

    START → agent ─(tool calls, steps left)→ tools → agent
                  └─(answer, or out of steps)→ END

Progress leaves the graph as custom stream events (see ``ide.search.events``), which the ACP agent turns
into session updates; the conversation itself lives in the checkpointer under the session's thread.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Protocol, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Checkpointer

from ide.search.events import cap_text
from ide.tools import Toolbox

ROLE = "react"

SYSTEM_PROMPT = """You are Arbor, a coding agent working in the workspace at {root}.
Read it with read_file(path, start_line?, end_line?), list_dir(path) and grep(pattern, path?).
Change it with edit_file(path, old_text, new_text), write_file, create_file, delete_file and
rename_file. Paths are relative to the workspace root. Your edits are proposals: the user reviews
them hunk by hunk before anything is written, and your reads already see them.
Look before you act: read the code that matters, make focused edits, then answer concisely in
Markdown, citing files as path:line."""


class ChatRouter(Protocol):
    """The part of ide.llm.ModelRouter the graph needs."""

    async def stream(
        self, role: str, messages: list[BaseMessage], tools: Any = (), on_chunk: Any = None
    ) -> AIMessage: ...


class ReactState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


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


def build_react_graph(
    router: ChatRouter,
    toolbox: Toolbox,
    *,
    max_steps: int,
    observation_cap: int,
    checkpointer: Checkpointer = None,
) -> Any:
    """Compile the ReAct graph for one session."""
    lc_tools = toolbox.langchain_tools()
    system = SystemMessage(SYSTEM_PROMPT.format(root=toolbox.workspace.root))

    async def agent(state: ReactState) -> dict[str, Any]:
        writer = get_stream_writer()

        def on_chunk(kind: str, text: str) -> None:
            writer({"type": kind, "text": text})

        history = close_dangling_tool_calls(list(state.get("messages", [])))
        reply = await router.stream(ROLE, [system, *history], tools=lc_tools, on_chunk=on_chunk)
        return {"messages": [reply], "steps": state.get("steps", 0) + 1}

    async def tools(state: ReactState) -> dict[str, Any]:
        writer = get_stream_writer()
        last = state["messages"][-1]
        results = []
        for call in last.tool_calls:
            call_id = call.get("id") or ""
            title, kind, locations = toolbox.describe(call["name"], call["args"])
            writer(
                {
                    "type": "tool_start",
                    "id": call_id,
                    "name": call["name"],
                    "args": call["args"],
                    "title": title,
                    "kind": kind,
                    "locations": locations,
                }
            )
            outcome = await asyncio.to_thread(toolbox.call, call["name"], call["args"])
            output = cap_text(outcome.output, observation_cap)
            writer(
                {
                    "type": "tool_end",
                    "id": call_id,
                    "failed": outcome.failed,
                    "output": output,
                    "diffs": outcome.diffs,
                }
            )
            results.append(
                ToolMessage(
                    content=output,
                    tool_call_id=call_id,
                    name=call["name"],
                    status="error" if outcome.failed else "success",
                )
            )
        return {"messages": results}

    def after_agent(state: ReactState) -> str:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls and state.get("steps", 0) < max_steps:
            return "tools"
        return END

    graph = StateGraph(ReactState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", after_agent, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def turn_ran_out_of_steps(messages: list[AnyMessage]) -> bool:
    """True when the turn ended on tool calls it had no steps left to run."""
    return bool(messages) and isinstance(messages[-1], AIMessage) and bool(messages[-1].tool_calls)
