"""Memory hints reach LATS expansion, the ToT planner and the plan planner: the first request of each
carries the workspace memory's kept insight for the task, capped; with memory off it carries none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from ide.memory import MemoryStore
from ide.memory.store import QUOTE_TAG
from ide.search.hints import HINT_CAP, cap_hint
from ide.search.lats import LatsSearch
from ide.search.plan import PlanExecute
from ide.search.tot import TotSearch
from ide.tools import ToolServices
from tests.support.runs import Run

INSIGHT = "greet() in pkg/greet.py builds the greeting text"

ARCHITECTURES = [
    pytest.param(LatsSearch, "lats.expansion", id="lats"),
    pytest.param(TotSearch, "tot.planner", id="tot"),
    pytest.param(PlanExecute, "plan.planner", id="plan"),
]


class FirstRequest(Exception):
    """Raised by the recording router at the named role's first call: the test has what it needs."""


def stop_at_first(run: Run, role: str) -> list[BaseMessage]:
    """Wrap the router so the first call of ``role`` is recorded and ends the run."""
    seen: list[BaseMessage] = []
    original = run.ctx.router.stream

    async def stream(called: str, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> AIMessage:
        if called == role:
            seen.extend(messages)
            raise FirstRequest(role)
        return await original(called, messages, *args, **kwargs)

    run.ctx.router.stream = stream  # type: ignore[method-assign]
    return seen


def kept_insight(path: Path) -> MemoryStore:
    store = MemoryStore(path)
    memory_id = store.add("insights", "Where the greeting lives", INSIGHT, task_type="bugfix", author="agent")
    store.keep(memory_id)
    return store


def prompt_text(messages: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


@pytest.mark.parametrize(("architecture", "role"), ARCHITECTURES)
async def test_the_first_request_of_the_role_carries_the_memory_hint(
    make_run: Callable[..., Run], tmp_path: Path, architecture: Any, role: str
) -> None:
    run = make_run([], architecture=architecture.name)
    run.ctx.services = ToolServices(memory=kept_insight(tmp_path / "memory.sqlite"))
    seen = stop_at_first(run, role)
    with pytest.raises(FirstRequest):
        await architecture().run(run.ctx)
    text = prompt_text(seen)
    assert INSIGHT in text and f"<{QUOTE_TAG} source=" in text
    assert "Fix the greeting so it says Hi" in text


@pytest.mark.parametrize(("architecture", "role"), ARCHITECTURES)
async def test_with_memory_off_no_hint_is_given(
    make_run: Callable[..., Run], tmp_path: Path, architecture: Any, role: str
) -> None:
    kept_insight(tmp_path / "memory.sqlite")  # in the workspace's store, but this session has memory off
    run = make_run([], architecture=architecture.name)
    assert run.ctx.services.memory is None
    seen = stop_at_first(run, role)
    with pytest.raises(FirstRequest):
        await architecture().run(run.ctx)
    text = prompt_text(seen)
    assert INSIGHT not in text and f"<{QUOTE_TAG} source=" not in text


def test_a_long_hint_is_capped_at_a_block_boundary(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    for n in range(12):
        memory_id = store.add(
            "insights", f"greeting note {n}", f"greeting detail {n} " + "x" * 900, author="agent"
        )
        store.keep(memory_id)
    full = store.hint("fix the greeting")
    capped = cap_hint(full)
    assert len(full) > HINT_CAP >= len(capped)
    assert capped.count(f"<{QUOTE_TAG} ") == capped.count(f"</{QUOTE_TAG}>") >= 1
    assert "search_memory finds them" in capped
    assert cap_hint("short") == "short"
