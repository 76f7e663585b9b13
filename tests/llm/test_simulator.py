"""Real server behaviour, simulated, through the real clients and Arbor's router: tool calls written as
text in every shape, silent front truncation at num_ctx, constrained output, slow first tokens and
stalls, a stream cut short, a busy queue — and the OpenAI-compatible path with its own quirks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama

from ide.llm import ModelError, ModelRouter
from ide.protocol.tree import is_recovered
from ide.search.base import ask_structured
from tests.support.fake_ollama import BUSY, TEXT_SHAPES, FakeOllama, render_text_tool_calls
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import Verdict, make_settings

CALLS = [{"name": "read_file", "args": {"path": "pkg/a.py"}}, {"name": "read_file", "args": {"path": "b.py"}}]


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


ASK = [HumanMessage("Read pkg/a.py and b.py.")]


@pytest.mark.parametrize("shape", TEXT_SHAPES)
async def test_every_text_shape_arrives_as_content_and_is_recovered(shape: str) -> None:
    with FakeOllama(
        responses=[{"tool_calls": CALLS, "prose": "Reading both."}, {"tool_calls": CALLS}],
        text_tool_calls=shape,
    ) as server:
        raw = (
            await ChatOllama(model="qwen2.5-coder:7b", base_url=server.url)
            .bind_tools([read_file])
            .ainvoke(ASK)
        )
        assert raw.tool_calls == [] and render_text_tool_calls(CALLS, shape) in str(raw.content)
        shown: list[str] = []
        router = ModelRouter(make_settings(server.url))
        reply = await router.stream(
            "react", ASK, tools=[read_file], on_chunk=lambda kind, text: shown.append(text)
        )
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [(c["name"], c["args"]) for c in CALLS]
    assert all(is_recovered(c["id"]) for c in reply.tool_calls)
    assert router.usage_snapshot()["react"].recovered_calls == 2
    assert "".join(shown).strip() == ""  # the prose went in the first reply, not this one
    assert reply.text == ""


async def test_prose_stays_and_the_call_never_shows(fake_ollama: Any) -> None:
    server = fake_ollama(
        [{"tool_calls": CALLS[:1], "prose": "Let me look at the file.", "text_tool_calls": "qwen"}]
    )
    shown: list[str] = []
    reply = await ModelRouter(make_settings(server.url)).stream(
        "react", ASK, tools=[read_file], on_chunk=lambda kind, text: shown.append(text)
    )
    assert "".join(shown).strip() == "Let me look at the file." == reply.text
    assert len(reply.tool_calls) == 1


async def test_a_corrupt_call_is_told_exactly_what_was_wrong(fake_ollama: Any, tmp_path: Any) -> None:
    from ide.changes import ChangeSet
    from ide.settings import Settings
    from ide.tools import toolbox as make_toolbox

    server = fake_ollama([{"tool_calls": CALLS[:1], "text_tool_calls": "qwen", "corrupt_arguments": True}])
    reply = await ModelRouter(make_settings(server.url)).stream("react", ASK, tools=[read_file])
    # Inside <tool_call> tags a cut-off object is still recognisably meant as a call…
    [call] = reply.tool_calls
    assert call["name"] == "read_file" and "__invalid_json__" in call["args"]
    # …and the tool refuses it with what was wrong, which the model reads as its observation.
    outcome = make_toolbox(tmp_path, Settings(), ChangeSet(tmp_path)).call(call["name"], call["args"])
    assert outcome.failed and "not a valid JSON object" in outcome.output and "path" in outcome.output


async def test_front_truncation_is_what_ollama_does_and_the_budget_prevents_it() -> None:
    task = HumanMessage("TASK-MARKER: summarise the files.")
    messages: list[Any] = [SystemMessage("SYSTEM-MARKER"), task]
    for n in range(12):
        call = {"name": "read_file", "args": {"path": f"f{n}.py"}, "id": f"c{n}", "type": "tool_call"}
        messages += [
            AIMessage("", tool_calls=[call]),
            ToolMessage("y = 2\n" * 1000, tool_call_id=f"c{n}", name="read_file"),
        ]
    with FakeOllama(responses=[{"content": "I forgot"}, {"content": "fine"}]) as server:
        # Without a budget (the raw client), Ollama silently drops the front: system prompt and task.
        await ChatOllama(model="qwen2.5-coder:7b", base_url=server.url, num_ctx=8192).ainvoke(messages)
        cut = server.seen[0]
        assert cut.truncated and cut.tokens == 8192 and cut.sent_tokens > 8192
        assert "TASK-MARKER" not in cut.text and "SYSTEM-MARKER" not in cut.text
        # Through the router every request fits, and the task is still there.
        await ModelRouter(make_settings(server.url, num_ctx=8192)).stream("react", messages)
        fitted = server.seen[1]
        assert not fitted.truncated and "TASK-MARKER" in fitted.text and "SYSTEM-MARKER" in fitted.text


async def test_a_model_that_answers_free_text_unless_constrained(fake_ollama: Any) -> None:
    answer = {"content": "Pretty good, I'd say 8.", "json": {"score": 8, "reason": "good"}}
    server = fake_ollama([answer])
    verdict, _ = await ask_structured(ModelRouter(make_settings(server.url)), "lats.evaluation", ASK, Verdict)
    assert verdict.score == 8 and len(server.chat_bodies) == 1


async def test_a_slow_first_token_and_a_stall_are_told_apart(fake_ollama: Any) -> None:
    loading = fake_ollama([{"content": "late", "first_token_ms": 800}])
    err = None
    with pytest.raises(ModelError) as caught:
        await ModelRouter(make_settings(loading.url, first_token_timeout_s=0.2)).stream("react", ASK)
    err = caught.value
    assert "sent nothing within" in err.info.message and "first_token_timeout_s" in (err.info.fix or "")
    patient = fake_ollama([{"content": "late but fine", "first_token_ms": 300}])
    reply = await ModelRouter(
        make_settings(patient.url, first_token_timeout_s=5, request_timeout_s=0.2)
    ).stream("react", ASK)
    assert reply.text == "late but fine"
    stalling = fake_ollama([{"content": "one two three", "token_ms": 600}])
    with pytest.raises(ModelError) as caught:
        await ModelRouter(make_settings(stalling.url, request_timeout_s=0.2, retry_backoff_s=0)).stream(
            "react", ASK
        )
    assert "stopped sending" in caught.value.info.message


async def test_a_connection_dropped_mid_answer_is_an_error_not_a_retry(fake_ollama: Any) -> None:
    server = fake_ollama([{"content": "partial answer here", "drop": True}, {"content": "x"}])
    with pytest.raises(ModelError) as caught:
        await ModelRouter(make_settings(server.url, retry_backoff_s=0)).stream("react", ASK)
    assert caught.value.info.kind == "bad_model_response" and len(server.chat_bodies) == 1
    assert "closed in the middle of the answer" in caught.value.info.message


async def test_a_full_queue_answers_503_and_the_router_waits_and_retries() -> None:
    with FakeOllama(
        responses=[{"content": "first", "latency_ms": 400}, {"content": "second"}], max_pending=1
    ) as server:
        router = ModelRouter(make_settings(server.url, retry_backoff_s=0.6))
        first, second = await asyncio.gather(router.stream("react", ASK), router.stream("tot.critic", ASK))
    assert {first.text, second.text} == {"first", "second"}
    assert BUSY["status"] == 503


async def test_openai_compatible_text_calls_refused_format_and_bad_arguments() -> None:
    with FakeOpenAI(
        responses=[
            {"tool_calls": CALLS[:1], "text_tool_calls": "qwen"},
            {"content": '{"score": 6, "reason": "ok"}'},
            {"tool_calls": CALLS[:1], "bad_arguments": True},
        ],
        reject_response_format=True,
    ) as server:
        settings = make_settings(model="openai:local-model", openai_base_url=server.url, retry_backoff_s=0)
        router = ModelRouter(settings)
        recovered = await router.stream("react", ASK, tools=[read_file])
        assert [c["args"] for c in recovered.tool_calls] == [{"path": "pkg/a.py"}]
        verdict, _ = await ask_structured(router, "lats.evaluation", ASK, Verdict)
        assert verdict.score == 6
        assert "response_format" in server.bodies[1] and "response_format" not in server.bodies[2]
        broken = await router.stream("react", ASK, tools=[read_file])
        [call] = broken.tool_calls
        # The client salvages what it can of the arguments ({}); the tool then says what is missing.
        assert call["name"] == "read_file" and call["args"] in ({}, {"__invalid_json__": "{not json"})


async def test_openai_compatible_servers_refuse_an_overlong_prompt() -> None:
    with FakeOpenAI(responses=[{"content": "x"}], context_length=100) as server:
        settings = make_settings(model="openai:local-model", openai_base_url=server.url)
        with pytest.raises(ModelError) as caught:
            await ModelRouter(settings).stream("react", [HumanMessage("word " * 2000)])
    assert caught.value.info.kind == "context_overflow"
    assert json.dumps(server.bodies[0])  # it was sent: the window of a hosted model is not known here
