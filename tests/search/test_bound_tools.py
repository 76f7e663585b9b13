"""A turn binds its tools to the model once: the tool objects a run hands to every model call are the same,
so the model router's bound model is reused instead of converting every tool's schema at each call (a
quarter of a scripted turn's time went there: the soak test's 200 turns took 80 s, 62 s with this)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ide.llm.scripted import ScriptedChatModel
from ide.search.react import ReactArchitecture
from tests.support.runs import Run

READ = {"tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}]}
EDIT = {
    "tool_calls": [
        {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
    ]
}
ANSWER = {"content": "The greeting says Hi."}


def test_a_toolbox_gives_the_same_tool_objects_every_time(make_run: Callable[..., Run]) -> None:
    run = make_run([ANSWER], architecture="react")
    first, second = run.ctx.tools_for(), run.ctx.tools_for()
    assert first and all(a is b for a, b in zip(first, second, strict=True))
    assert first is not second  # a copy of the list: a caller may filter it without changing the next
    # A search branch has its own toolbox over its own change set: the tools bound are still the same.
    branch = run.ctx.tools_for(run.ctx.branch())
    assert all(a is b for a, b in zip(first, branch, strict=True))
    by_name = {tool.name: tool for tool in first}
    read_only = run.ctx.tools_for(read_only=True)
    assert read_only and all(by_name[tool.name] is tool for tool in read_only)


def test_a_three_call_turn_converts_its_tool_schemas_once(
    make_run: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    binds: list[int] = []
    bind = ScriptedChatModel.bind_tools

    def counted(self: ScriptedChatModel, tools: Any, **kwargs: Any) -> Any:
        binds.append(len(tools))
        return bind(self, tools, **kwargs)

    monkeypatch.setattr(ScriptedChatModel, "bind_tools", counted)
    run = make_run([READ, EDIT, ANSWER], architecture="react")
    asyncio.run(ReactArchitecture().run(run.ctx))
    assert "Hi" in run.ctx.changeset.read_text("pkg/greet.py")  # the three calls happened
    assert len(binds) == 1 and binds[0] > 5


def test_the_next_turn_binds_nothing_new(
    make_run: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn has a new RunContext and toolboxes; the session's router still has the model bound."""
    binds: list[int] = []
    bind = ScriptedChatModel.bind_tools
    monkeypatch.setattr(
        ScriptedChatModel, "bind_tools", lambda self, tools, **kw: binds.append(1) or bind(self, tools, **kw)
    )
    first = make_run([ANSWER, ANSWER], architecture="react")
    asyncio.run(ReactArchitecture().run(first.ctx))
    second = make_run([ANSWER], architecture="react")
    second.ctx.router = first.ctx.router  # one session: one router, a new run context per turn
    asyncio.run(ReactArchitecture().run(second.ctx))
    assert len(binds) == 1
