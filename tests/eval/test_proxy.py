"""The metering proxy of ``arbor eval --agent`` between real clients and simulated model servers: the
answer passes as the server gave it, the spend is the server's own count (OpenAI chat and Responses,
Ollama, Gemini), and a spent budget cuts the answer streaming and refuses the next call."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from ide.client.agentproc import AgentChoice
from ide.eval.agents import pointed
from ide.eval.proxy import MeteringProxy, text_chars, usage_of
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI

ANSWER = "The quick brown fox jumps over the lazy dog, again and again and again."
MESSAGES = [{"role": "user", "content": "say something long"}]


def _client(proxy: MeteringProxy, server: FakeOpenAI) -> openai.AsyncOpenAI:
    base = proxy.origin + httpx.URL(server.url).path
    return openai.AsyncOpenAI(base_url=base, api_key="test-key", max_retries=0)


async def test_a_streamed_chat_passes_unchanged_and_is_counted_from_the_servers_usage() -> None:
    with FakeOpenAI([{"content": ANSWER}, {"content": ANSWER}]) as server:
        direct = openai.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0)
        stream = await direct.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        told = [chunk async for chunk in stream][-1].usage
        async with MeteringProxy(server.url) as proxy:
            stream = await _client(proxy, server).chat.completions.create(
                model="m", messages=MESSAGES, stream=True
            )
            chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    # The proxy asked the server for its usage, and kept the usage-only chunk the agent had not asked for.
    assert server.bodies[-1]["stream_options"] == {"include_usage": True}
    assert all(chunk.choices for chunk in chunks)
    spent = proxy.spend()
    assert (spent.calls, spent.served_calls) == (1, 1)
    assert (spent.input_tokens, spent.output_tokens) == (told.prompt_tokens, told.completion_tokens)


async def test_a_chat_that_asks_for_usage_still_gets_it_and_a_plain_answer_is_counted() -> None:
    with FakeOpenAI([{"content": ANSWER}, {"content": "short"}]) as server:
        async with MeteringProxy(server.url) as proxy:
            client = _client(proxy, server)
            stream = await client.chat.completions.create(
                model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
            )
            last = [chunk async for chunk in stream][-1]
            plain = await client.chat.completions.create(model="m", messages=MESSAGES)
            listed = await client.models.list()
    assert last.usage is not None and not last.choices
    assert plain.choices[0].message.content == "short" and plain.usage is not None
    assert [m.id for m in listed.data] == ["local-model"]
    spent = proxy.spend()
    assert spent.calls == 2  # the model list passed, not counted as a call
    assert spent.input_tokens == last.usage.prompt_tokens + plain.usage.prompt_tokens
    assert spent.output_tokens == last.usage.completion_tokens + plain.usage.completion_tokens


async def test_a_responses_stream_is_counted_from_response_completed() -> None:
    with FakeOpenAI([{"content": ANSWER}]) as server:
        async with MeteringProxy(server.url) as proxy:
            stream = await _client(proxy, server).responses.create(model="m", input="say it", stream=True)
            events = [event async for event in stream]
    completed = next(e for e in events if e.type == "response.completed")
    assert completed.response.output_text == ANSWER
    spent = proxy.spend()
    assert spent.served_calls == 1
    assert spent.input_tokens == completed.response.usage.input_tokens
    assert spent.output_tokens == completed.response.usage.output_tokens


async def test_ollama_chat_is_counted_from_its_final_chunk() -> None:
    with FakeOllama(responses=[{"content": ANSWER, "prompt_eval_count": 17, "eval_count": 23}]) as server:
        async with MeteringProxy(server.url) as proxy, httpx.AsyncClient() as client:
            body = {"model": "qwen3:8b", "messages": MESSAGES, "stream": True}
            async with client.stream("POST", proxy.origin + "/api/chat", json=body) as answer:
                lines = [json.loads(line) async for line in answer.aiter_lines() if line]
    assert "".join(line["message"]["content"] for line in lines) == ANSWER
    assert (proxy.spend().input_tokens, proxy.spend().output_tokens) == (17, 23)


async def test_gemini_stream_is_counted_from_its_usage_metadata() -> None:
    with FakeGemini(responses=[{"content": ANSWER}]) as server:
        async with MeteringProxy(server.url) as proxy, httpx.AsyncClient() as client:
            path = httpx.URL(server.url).path.rstrip("/")
            url = f"{proxy.origin}{path}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
            body = {"contents": [{"role": "user", "parts": [{"text": "say it"}]}]}
            headers = {"x-goog-api-key": "test-key"}
            async with client.stream("POST", url, json=body, headers=headers) as answer:
                assert answer.status_code == 200, await answer.aread()
                events = [
                    json.loads(line[5:]) async for line in answer.aiter_lines() if line.startswith("data:")
                ]
    told = events[-1]["usageMetadata"]
    spent = proxy.spend()
    assert spent.input_tokens == told["promptTokenCount"]
    assert spent.output_tokens == told["candidatesTokenCount"] + told.get("thoughtsTokenCount", 0)


async def test_a_spent_budget_cuts_the_answer_streaming_and_refuses_the_next_call() -> None:
    long = "word " * 400  # 400 five-character pieces: about 400 tokens streamed
    with FakeOpenAI([{"content": long, "token_ms": 2}]) as server:
        async with MeteringProxy(server.url, budget_tokens=60) as proxy:
            client = _client(proxy, server)
            got: list[str] = []

            async def read() -> None:
                stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                async for chunk in stream:
                    got.extend(c.delta.content or "" for c in chunk.choices)

            with pytest.raises((openai.APIError, httpx.HTTPError)):
                await read()
            assert proxy.over.is_set()
            assert 0 < len("".join(got)) < len(long) // 2  # stopped mid-answer
            with pytest.raises(openai.RateLimitError, match="token budget \\(60\\) is spent"):
                await client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(server.bodies) == 1  # the refused call never reached the server
    assert proxy.spend().tokens > 60


def test_usage_and_text_of_each_protocols_events() -> None:
    anthropic_start = {
        "type": "message_start",
        "message": {"usage": {"input_tokens": 12, "output_tokens": 1}},
    }
    assert usage_of(anthropic_start) == (12, 1)
    assert usage_of({"type": "message_delta", "usage": {"output_tokens": 40}}) == (None, 40)
    assert text_chars({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "abcd"}}) == 4
    assert usage_of({"done": True, "prompt_eval_count": 3, "eval_count": 4}) == (3, 4)
    assert usage_of({"done": False, "message": {"role": "assistant", "content": "x"}}) == (None, None)
    assert text_chars({"message": {"role": "assistant", "content": "xyz"}}) == 3
    tool = {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": '{"a":1}'}}]}}]}
    assert text_chars(tool) == 7
    assert text_chars({"type": "response.output_text.delta", "delta": "hello"}) == 5
    assert usage_of({"usageMetadata": {"promptTokenCount": 5}}) == (5, None)
    assert usage_of({"usage": {"prompt_tokens": True}}) == (None, None)  # not a count
    assert usage_of("text") == (None, None)


def test_an_agent_is_pointed_at_the_proxy_where_it_named_the_model_server() -> None:
    server = "http://127.0.0.1:8080/v1"
    proxy = "http://127.0.0.1:5555"
    qwen = AgentChoice("qwen", ["qwen", "--openai-base-url", server, "-m", "{model}"], {})
    got, metered = pointed(qwen, proxy, server, "gemma")
    assert (got.command, metered) == (["qwen", "--openai-base-url", f"{proxy}/v1", "-m", "gemma"], True)
    aider = AgentChoice("aider", ["aider", "--message", "{prompt}"], {"OPENAI_API_BASE": "{base_url}"})
    got, metered = pointed(aider, proxy, server, "gemma")
    assert (got.env, got.command[-1], metered) == ({"OPENAI_API_BASE": f"{proxy}/v1"}, "{prompt}", True)
    passed = AgentChoice("codex", ["codex-acp"], {}, pass_env=("OPENAI_BASE_URL", "HOME"))
    environ = {"OPENAI_BASE_URL": server, "HOME": "/home/u"}
    got, metered = pointed(passed, proxy, server, "gemma", environ)
    assert (got.env, metered) == ({"OPENAI_BASE_URL": f"{proxy}/v1"}, True)
    blind = AgentChoice("other", ["other-agent", "-m", "{model}"], {})
    assert pointed(blind, proxy, server, "gemma") == (
        AgentChoice("other", ["other-agent", "-m", "gemma"], {}),
        False,
    )


async def test_the_proxy_listens_on_loopback_only_and_refuses_what_is_not_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        MeteringProxy("file:///etc/passwd")
    with FakeOpenAI() as server:
        async with MeteringProxy(server.url) as proxy:
            assert proxy.origin.startswith("http://127.0.0.1:")
            async with httpx.AsyncClient() as client:
                bad = await client.get(proxy.origin + "/v1/models", headers={"Host": "evil.example"})
    assert bad.status_code == 200  # Host is the proxy's, never followed: the server answered
    assert proxy.upstream == httpx.URL(server.url).copy_with(path="").__str__().rstrip("/")


async def test_a_refused_request_is_passed_back_and_costs_nothing() -> None:
    with FakeOpenAI([{"status": 503, "error": "busy"}, {"content": "fine"}]) as server:
        async with MeteringProxy(server.url) as proxy:
            client = _client(proxy, server)
            with pytest.raises(openai.InternalServerError, match="busy"):
                await client.chat.completions.create(model="m", messages=MESSAGES)
            answer = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert answer.choices[0].message.content == "fine"
    spent = proxy.spend()
    assert (spent.calls, spent.input_tokens, spent.output_tokens) == (1, *server.usages[-1])
