"""A workflow stage agent's first request carries the workspace memory's hint for the task (memory on),
and no hint with memory off."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from ide.memory import MemoryStore
from ide.memory.store import QUOTE_TAG
from ide.tools import ToolServices
from ide.workflows.agents import run_agent
from ide.workflows.schema import AgentProfile
from tests.support.runs import scripted_run

TASK = "add a --version flag to the CLI"
INSIGHT = "the CLI's flags are declared in greeter/cli.py main()"


def recorded(run: Any) -> list[tuple[str, list[BaseMessage]]]:
    calls: list[tuple[str, list[BaseMessage]]] = []
    original = run.ctx.router.stream

    async def stream(role: str, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        calls.append((role, list(messages)))
        return await original(role, messages, *args, **kwargs)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("memory_on", [True, False])
async def test_a_stage_agent_is_told_what_memory_holds_for_the_task(
    cli_project: Path, tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path], memory_on: bool
) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    store.keep(store.add("insights", "Where CLI flags live", INSIGHT, task_type="feature", author="agent"))
    done = {"role": "agent.code", "content": json.dumps({"status": "done", "summary": "looked"})}
    run = scripted_run(cli_project, write_script([done]), architecture="workflow", task=TASK)
    if memory_on:
        run.ctx.services = ToolServices(memory=store)
    calls = recorded(run)
    profile = AgentProfile(name="code", prompt="You write code in {root}.", tools=["read_file"])
    report = await run_agent(
        run.ctx,
        profile,
        branch=run.ctx.changeset,
        brief=f"Task: {TASK}",
        extra_tools=[],
        parent=None,
        max_steps=2,
    )
    assert not report.failed
    [(role, messages)] = calls
    text = "\n".join(m.text for m in messages)
    assert role == "agent.code" and f"Task: {TASK}" in text
    assert (INSIGHT in text and f"<{QUOTE_TAG} source=" in text) is memory_on
