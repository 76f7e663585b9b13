"""A foreign agent's tool calls and plan become a search tree (ide.app.tree.tool_tree), as the wire sends them
and the session's fold reads them."""

from __future__ import annotations

from typing import Any

from acp.schema import SessionNotification

from ide.app.tree.tool_tree import ToolCallTree
from ide.client.fold import SessionFold
from ide.protocol.tree import OBSERVATION_CAP, SearchTree, TreeEvent


def wire(update: dict[str, Any]) -> Any:
    """An update as the SDK reads it off the wire."""
    return SessionNotification.model_validate({"sessionId": "s", "update": update}).update


def feed(builder: ToolCallTree, *updates: dict[str, Any]) -> list[TreeEvent]:
    fold = SessionFold()
    return [event for update in updates for event in builder.apply(fold.apply(wire(update)))]


def plan(*statuses: str) -> dict[str, Any]:
    steps = ["Read", "Edit", "Check"][: len(statuses)]
    entries = [
        {"content": c, "priority": "medium", "status": s} for c, s in zip(steps, statuses, strict=True)
    ]
    return {"sessionUpdate": "plan", "entries": entries}


def test_tool_calls_and_plan_make_one_run_per_turn() -> None:
    builder = ToolCallTree("Foreign agent")
    assert builder.start_turn("fix it") == []
    assert (
        feed(builder, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        == []
    )
    events = feed(
        builder,
        plan("in_progress", "pending"),
        {"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "Read a.py", "kind": "read",
         "status": "in_progress", "rawInput": {"path": "/w/a.py"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "r1", "status": "completed",
         "rawOutput": {"content": "x" * (OBSERVATION_CAP * 2)}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "w1", "title": "Edit a.py", "status": "failed",
         "content": [{"type": "content", "content": {"type": "text", "text": "refused: outside"}}]},
        plan("completed", "completed", "pending"),
        plan("completed"),
    )  # fmt: skip
    events += builder.finish("end_turn")
    tree = SearchTree(events)  # the same replay the window and the backend use: every event fits
    assert tree.finished and tree.figures == {"stop_reason": "end_turn", "tool_calls": 2}
    assert tree.architecture == "acp"
    root = tree.nodes[tree.root or ""]
    assert root.kind == "root" and root.label == "Foreign agent: fix it"
    read = tree.nodes["tool:r1"]
    assert (read.label, read.kind, read.status) == ("Read a.py", "action", "evaluated")
    assert read.action is not None and read.action.tool == "read" and read.action.args == {"path": "/w/a.py"}
    assert read.observation is not None and len(read.observation.encode()) <= OBSERVATION_CAP + 3
    edit = tree.nodes["tool:w1"]  # an update whose tool_call never came still gets its node
    assert (edit.label, edit.status, edit.observation) == ("Edit a.py", "failed", "refused: outside")
    steps = [tree.nodes[node] for node in tree.children("plan")]
    assert [(s.label, s.status) for s in steps] == [
        ("Read", "evaluated"),
        ("Edit", "pruned"),
        ("Check", "pruned"),
    ]
    assert tree.nodes["plan"].status == "evaluated"


def test_a_chat_only_turn_makes_no_run_and_a_new_turn_closes_the_last() -> None:
    builder = ToolCallTree()
    builder.start_turn("hello")
    assert builder.finish("end_turn") == []
    first = feed(
        builder, {"sessionUpdate": "tool_call", "toolCallId": "a", "title": "Run", "kind": "execute"}
    )
    closing = builder.start_turn("next")
    assert [e.kind for e in closing] == ["node_updated", "finished"]
    assert closing[-1].figures["stop_reason"] == "interrupted"
    assert closing[0].node_id == "turn" and closing[0].changes["status"] == "terminated_early"
    second = feed(
        builder, {"sessionUpdate": "tool_call", "toolCallId": "a", "title": "Run", "kind": "execute"}
    )
    assert first[0].run_id != second[0].run_id
    assert SearchTree([*first, *closing]).finished and len(SearchTree(second).nodes) == 2
