"""Scripted-model lines for plan / execute / replan runs: planner, executor and replanner turns, and
the two-task script."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from tests.support.runs import Run

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'
TASK_1 = "Change the greeting in pkg/greet.py to Hi"
TASK_2 = "Mention the new greeting in README.md"

Call = tuple[str, list[BaseMessage], list[str]]


def planner(content: str = "", **line: Any) -> dict[str, Any]:
    return {"role": "plan.planner", "content": content, **line}


def executor(content: str = "", **line: Any) -> dict[str, Any]:
    return {"role": "plan.executor", "content": content, **line}


def replanner(content: str = "", **line: Any) -> dict[str, Any]:
    return {"role": "plan.replanner", "content": content, **line}


def report(status: str, summary: str) -> str:
    return json.dumps({"status": status, "summary": summary})


def edit(path: str, old: str, new: str) -> list[dict[str, Any]]:
    return [{"name": "edit_file", "args": {"path": path, "old_text": old, "new_text": new}}]


def read(path: str) -> list[dict[str, Any]]:
    return [{"name": "read_file", "args": {"path": path}}]


def done(answer: str) -> str:
    return json.dumps({"done": True, "answer": answer})


def two_task_script() -> list[dict[str, Any]]:
    """The planner reads greet.py and plans two tasks; each is one edit; the replanner finishes."""
    return [
        planner("Let me look first.", tool_calls=read("pkg/greet.py")),
        planner(f"Here is the plan:\n1. {TASK_1}\n2. {TASK_2}"),
        executor(tool_calls=edit("pkg/greet.py", "Hello", "Hi")),
        executor("Changed the greeting. " + report("done", "greet says Hi now")),
        executor(tool_calls=edit("README.md", "Says hello.", "Says hi.")),
        executor(report("done", "README says hi")),
        replanner(done("greet now says Hi (pkg/greet.py:2) and the README says so.")),
    ]


def capture_calls(run: Run) -> list[Call]:
    """Record every model call of the run: (role, the messages it was given, the tool names offered)."""
    calls: list[Call] = []
    original = run.ctx.router.stream

    async def stream(
        role: str, messages: list[BaseMessage], tools: Any = (), on_chunk: Any = None, **kw: Any
    ) -> AIMessage:
        calls.append((role, list(messages), [tool.name for tool in tools]))
        return await original(role, messages, tools, on_chunk, **kw)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return calls


def nodes_of(run: Run, kind: str) -> list[Any]:
    return [node for node in run.ctx.recorder.tree.nodes.values() if node.kind == kind]
