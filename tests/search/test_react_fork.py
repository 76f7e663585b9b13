"""What a ReAct continuation is given: the node's trajectory in the order it was made — a model step's tool
calls hang beside each other under it, so each one before the path's is given too — then the hint."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ide.search.plan_fork import continuation
from ide.search.react import ReactTree
from ide.search.steer import HINT_PREFIX, Fork
from ide.search.tree import TreeRecorder


def _step(tree: ReactTree, step: int, text: str, *calls: tuple[str, str]) -> None:
    tree.on_event({"type": "step_start", "step": step})
    tree.on_event({"type": "text", "text": text})
    tree.on_event({"type": "step_end", "step": step})
    for ident, path in calls:
        event: dict[str, Any] = {
            "type": "tool_start",
            "id": ident,
            "name": "read_file",
            "args": {"path": path},
        }
        tree.on_event({**event, "title": f"Read {path}"})
        tree.on_event({"type": "tool_end", "id": ident, "output": f"text of {path}", "failed": False})


def test_a_step_with_two_tool_calls_gives_both_before_the_next_step_and_then_the_hint() -> None:
    recorder = TreeRecorder(architecture="react")
    tree = ReactTree("Compare a and b", model="m", recorder=recorder)
    _step(tree, 1, "Reading both.", ("c1", "a.py"), ("c2", "b.py"))
    _step(tree, 2, "They differ in one line.", ("c3", "c.py"))
    second_step = next(n.id for n in recorder.tree.nodes.values() if n.label == "They differ in one line.")
    messages, done = continuation(Fork(recorder.tree, second_step, "Look at c.py too."))
    assert done == []
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "AIMessage",  # step 1
        "AIMessage",  # its first call: beside the second, not above it
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",  # step 2 (its own call, c.py, came after it)
        "HumanMessage",
    ]
    calls = [m.tool_calls[0]["args"]["path"] for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert calls == ["a.py", "b.py"]
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == ["text of a.py", "text of b.py"]
    assert messages[-1] == HumanMessage(f"{HINT_PREFIX}\nLook at c.py too.")
