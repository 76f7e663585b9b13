"""The scripted model: replays a JSONL script in order, per role, with latency, and clear errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool

from ide.llm import ModelError, ModelRouter, ScriptedChatModel
from tests.support.models import make_settings

WriteScript = Callable[[list[dict[str, Any]]], Path]
ASK = [HumanMessage("Fix the failing test in test_greet.py")]


def scripted_router(script: Path, **llm: Any) -> ModelRouter:
    return ModelRouter(make_settings(model=f"scripted:{script.name}", **llm), base_dir=script.parent)


async def test_replays_lines_in_order_streaming_thoughts_then_text(
    write_script: WriteScript, tools: list[BaseTool]
) -> None:
    script = write_script(
        [
            {
                "thinking": "Read the test first.",
                "content": "",
                "tool_calls": [{"name": "read_file", "args": {"path": "test_greet.py"}}],
            },
            {"content": "The test expects a comma after Hello, so greet() needs one."},
        ]
    )
    router = scripted_router(script)
    events: list[tuple[str, str]] = []

    first = await router.stream("react", ASK, tools=tools, on_chunk=lambda k, t: events.append((k, t)))
    second = await router.stream("react", ASK, tools=tools, on_chunk=lambda k, t: events.append((k, t)))

    assert first.tool_calls == [
        {"name": "read_file", "args": {"path": "test_greet.py"}, "id": "call_1", "type": "tool_call"}
    ]
    assert first.additional_kwargs["reasoning_content"] == "Read the test first."
    assert second.content == "The test expects a comma after Hello, so greet() needs one."
    assert second.tool_calls == []
    kinds = [kind for kind, _ in events]
    assert kinds.index("text") > max(i for i, kind in enumerate(kinds) if kind == "thought")
    assert kinds.count("text") >= 3, "content must stream in several chunks"
    assert "".join(t for k, t in events if k == "text") == second.content
    usage = router.usage_snapshot()["react"]
    assert usage.calls == 2
    assert usage.output_tokens > 0
    assert usage.input_tokens == 2 * (len(ASK[0].text) // 4)


async def test_comments_and_blank_lines_are_ignored(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text('// a demo\n\n{"content": "one"}\n   \n// more\n{"content": "two"}\n')
    router = scripted_router(script)
    assert (await router.stream("react", ASK)).content == "one"
    assert (await router.stream("react", ASK)).content == "two"


async def test_role_lines_go_to_their_role_and_the_cursor_is_shared(write_script: WriteScript) -> None:
    script = write_script(
        [
            {"content": "plan: read, then fix", "role": "plan.planner"},
            {"content": "any role may take this"},
            {"content": "7", "role": "lats.evaluation"},
        ]
    )
    router = scripted_router(script)

    assert (await router.stream("plan.planner", ASK)).content == "plan: read, then fix"
    assert (await router.stream("react", ASK)).content == "any role may take this"
    with pytest.raises(ModelError) as caught:
        await router.stream("lats.expansion", ASK)
    assert caught.value.info.kind == "script_mismatch"
    assert f"{script}:3" in str(caught.value)
    assert '"lats.evaluation"' in str(caught.value)
    assert '"lats.expansion"' in str(caught.value)
    assert (await router.stream("lats.evaluation", ASK)).content == "7", "a mismatch consumes nothing"


async def test_each_router_replays_from_the_top(write_script: WriteScript) -> None:
    script = write_script([{"content": "first"}, {"content": "second"}])
    one, two = scripted_router(script), scripted_router(script)
    assert (await one.stream("react", ASK)).content == "first"
    assert (await two.stream("react", ASK)).content == "first"
    assert (await one.stream("react", ASK)).content == "second"


async def test_running_out_names_the_file_the_count_and_the_role(write_script: WriteScript) -> None:
    script = write_script([{"content": "only one"}])
    router = scripted_router(script)
    await router.stream("react", ASK)

    with pytest.raises(ModelError) as caught:
        await router.stream("tot.critic", ASK)

    err = caught.value
    assert err.info.kind == "script_exhausted"
    assert f"scripted model {script} ran out after 1 responses" in err.info.message
    assert '"tot.critic"' in err.info.message
    assert "Fix the failing test" in err.info.message


async def test_calling_an_unbound_tool_lists_the_offered_ones(
    write_script: WriteScript, tools: list[BaseTool]
) -> None:
    script = write_script([{"tool_calls": [{"name": "write_file", "args": {"path": "a.py"}}]}])
    router = scripted_router(script)

    with pytest.raises(ModelError) as caught:
        await router.stream("react", ASK, tools=tools)

    err = caught.value
    assert err.info.kind == "script_mismatch"
    assert f"{script}:1" in err.info.message
    assert '"write_file"' in err.info.message
    assert "tools offered: read_file, grep" in err.info.message


async def test_tool_call_without_any_bound_tools(write_script: WriteScript) -> None:
    script = write_script([{"tool_calls": [{"name": "read_file", "args": {}}]}])
    with pytest.raises(ModelError, match="tools offered: none"):
        await scripted_router(script).stream("react", ASK)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"content": "ok"}\n{"content": "broken"\n', ":2: not valid JSON"),
        ('["a list"]\n', ":1: expected a JSON object"),
        ('{"content": "ok", "colour": "red"}\n', ":1: colour"),
        ('{"tool_calls": [{"args": {}}]}\n', ":1: tool_calls.0.name"),
    ],
)
async def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text(text)
    with pytest.raises(ModelError) as caught:
        await scripted_router(script).stream("react", ASK)
    assert caught.value.info.kind == "script_exhausted"
    assert f"{script}{expected}" in caught.value.info.message


async def test_missing_script_says_so(tmp_path: Path) -> None:
    router = ModelRouter(make_settings(model="scripted:nope.jsonl"), base_dir=tmp_path)
    with pytest.raises(ModelError, match="does not exist"):
        await router.stream("react", ASK)


async def test_latency_delays_the_response(write_script: WriteScript) -> None:
    script = write_script([{"content": "slow", "latency_ms": 200}])
    started = time.perf_counter()
    reply = await scripted_router(script).stream("react", ASK)
    assert reply.content == "slow"
    assert time.perf_counter() - started >= 0.2


async def test_cancellation_during_latency_is_prompt(write_script: WriteScript) -> None:
    script = write_script([{"content": "never", "latency_ms": 10_000}, {"content": "after"}])
    router = scripted_router(script, concurrency={"scripted": 1})
    model = router.chat_model("react")
    assert isinstance(model, ScriptedChatModel)

    task = asyncio.create_task(router.stream("react", ASK))
    for _ in range(100):
        if model.script.consumed:
            break
        await asyncio.sleep(0)
    assert model.script.consumed == 1, "the call should be inside its latency by now"
    task.cancel()
    for _ in range(100):  # loop turns, not time: a cancel that waited the latency out would need its 10 s
        if task.done():
            break
        await asyncio.sleep(0)
    assert task.cancelled(), "the cancel did not end the call's latency"
    assert (await router.stream("react", ASK)).content == "after", "the provider slot was released"


async def test_timeout_applies_to_scripted_latency(write_script: WriteScript) -> None:
    script = write_script([{"content": "late", "latency_ms": 5000}])
    with pytest.raises(ModelError) as caught:
        await scripted_router(script, first_token_timeout_s=0.1).stream("react", ASK)
    assert caught.value.info.kind == "model_timeout"


async def test_is_a_real_langchain_chat_model(write_script: WriteScript, tools: list[BaseTool]) -> None:
    script = write_script(
        [
            {"content": "sync"},
            {"content": "async", "thinking": "hmm"},
            {"content": "", "tool_calls": [{"name": "grep", "args": {"pattern": "x"}}]},
        ]
    )
    model = ScriptedChatModel.from_file(script)
    assert isinstance(model, BaseChatModel)

    assert model.invoke(ASK).content == "sync"
    reply = await model.ainvoke(ASK)
    assert (reply.content, reply.additional_kwargs["reasoning_content"]) == ("async", "hmm")
    chunks = [chunk async for chunk in model.bind_tools(tools).astream(ASK)]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.tool_calls == [
        {"name": "grep", "args": {"pattern": "x"}, "id": "call_1", "type": "tool_call"}
    ]
