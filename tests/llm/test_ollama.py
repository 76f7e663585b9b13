"""The real langchain-ollama path, end to end against the fake Ollama server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool

from ide.llm import ContextTier, ModelRouter
from ide.llm.wire import tls
from tests.support.fake_ollama import FakeOllama
from tests.support.models import MODEL, make_settings

Start = Callable[..., FakeOllama]
ASK = [HumanMessage("What does a.py do?")]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    async def __call__(self, kind: str, text: str) -> None:
        self.events.append((kind, text))

    def joined(self, kind: str) -> str:
        return "".join(text for k, text in self.events if k == kind)

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)


async def test_streams_text_in_pieces_and_sends_num_ctx(fake_ollama: Start) -> None:
    server = fake_ollama(
        [{"content": "It greets the user by name.", "prompt_eval_count": 120, "eval_count": 9}]
    )
    router = ModelRouter(make_settings(server.url, num_ctx=8192))
    seen = Recorder()

    reply = await router.stream("react", ASK, on_chunk=seen)

    assert reply.content == "It greets the user by name."
    assert seen.joined("text") == "It greets the user by name."
    assert seen.count("text") > 3, "text must arrive as it streams, not in one piece"
    body = server.chat_bodies[0]
    assert body["model"] == MODEL
    assert body["options"]["num_ctx"] == 8192
    assert body["messages"][-1] == {"role": "user", "content": "What does a.py do?"}
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (120, 9)


async def test_the_model_clients_share_one_tls_context_and_still_answer(
    fake_ollama: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx built a TLS context (certifi's roots parsed, ~4 ms) for each client: two per model and one per
    window or health ask. Now the process builds one; the calls work as before."""
    built: list[object] = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **k: built.append(1) or real(*a, **k))
    tls.cache_clear()
    server = fake_ollama([{"content": "Fine.", "prompt_eval_count": 9, "eval_count": 1}] * 2)
    for _ in range(2):  # two routers: two sessions' models
        router = ModelRouter(make_settings(server.url))
        reply = await router.stream("react", ASK, on_chunk=Recorder())
        assert reply.content == "Fine."
        await router.context_window("react")  # asks /api/show with a client of its own
        model: Any = router.chat_model("react")
        for client in (model._client._client, model._async_client._client):
            assert client._transport._pool._ssl_context is tls()
    assert len(server.chat_bodies) == 2
    assert len(built) == 1


async def test_ollama_thinking_field_becomes_thoughts_when_reasoning_is_unset(fake_ollama: Start) -> None:
    server = fake_ollama([{"thinking": "The user wants a summary.", "content": "A summary."}])
    router = ModelRouter(make_settings(server.url))
    seen = Recorder()

    reply = await router.stream("react", ASK, on_chunk=seen)

    assert "think" not in server.chat_bodies[0], "unset reasoning must leave the model's default alone"
    assert reply.content == "A summary."
    assert reply.additional_kwargs["reasoning_content"] == "The user wants a summary."
    assert seen.joined("thought") == "The user wants a summary."
    assert seen.events[0][0] == "thought"
    assert seen.joined("text") == "A summary."


async def test_reasoning_true_asks_ollama_to_think(fake_ollama: Start) -> None:
    server = fake_ollama(
        [{"thinking": "Check the file.", "content": "Done."}],
        models={MODEL: {"tools": True, "thinking": True}},
    )
    router = ModelRouter(make_settings(server.url, reasoning=True))
    seen = Recorder()

    reply = await router.stream("react", ASK, on_chunk=seen)

    assert server.chat_bodies[0]["think"] is True
    assert reply.additional_kwargs["reasoning_content"] == "Check the file."
    assert seen.joined("thought") == "Check the file."
    assert reply.content == "Done."


async def test_think_tags_split_across_chunks_are_thoughts(fake_ollama: Start) -> None:
    server = fake_ollama([{"chunks": ["<thi", "nk>Read a.", "py first.</th", "ink>\n\nIt ", "prints hi."]}])
    router = ModelRouter(make_settings(server.url))
    seen = Recorder()

    reply = await router.stream("react", ASK, on_chunk=seen)

    assert reply.content == "It prints hi."
    assert reply.additional_kwargs["reasoning_content"] == "Read a.py first."
    assert seen.joined("thought") == "Read a.py first."
    assert seen.joined("text") == "It prints hi."
    assert all("<" not in text for _, text in seen.events)


async def test_tool_calls_are_parsed_and_tools_are_sent(fake_ollama: Start, tools: list[BaseTool]) -> None:
    server = fake_ollama(
        [
            {
                "content": "",
                "tool_calls": [
                    {"name": "read_file", "args": {"path": "a.py"}},
                    {"name": "grep", "args": {"pattern": "def main"}},
                ],
            }
        ]
    )
    router = ModelRouter(make_settings(server.url))

    reply = await router.stream("react", ASK, tools=tools)

    assert [(call["name"], call["args"]) for call in reply.tool_calls] == [
        ("read_file", {"path": "a.py"}),
        ("grep", {"pattern": "def main"}),
    ]
    assert all(call["id"] for call in reply.tool_calls)
    sent = [tool["function"]["name"] for tool in server.chat_bodies[0]["tools"]]
    assert sent == ["read_file", "grep"]


async def test_usage_is_recorded_per_role(fake_ollama: Start) -> None:
    server = fake_ollama(
        [
            {"content": "one", "prompt_eval_count": 100, "eval_count": 10},
            {"content": "two", "prompt_eval_count": 200, "eval_count": 20},
            {"content": "three", "prompt_eval_count": 50, "eval_count": 5},
        ]
    )
    router = ModelRouter(make_settings(server.url))

    await router.stream("react", ASK)
    await router.stream("react", ASK)
    await router.stream("lats.evaluation", ASK)
    usage = router.usage_snapshot()

    assert set(usage) == {"react", "lats.evaluation"}
    react = usage["react"]
    assert (react.calls, react.input_tokens, react.output_tokens) == (2, 300, 30)
    assert react.model == f"ollama:{MODEL}"
    assert react.latency_ms > 0
    assert (usage["lats.evaluation"].calls, usage["lats.evaluation"].output_tokens) == (1, 5)


@pytest.mark.parametrize(("limit", "expected_overlap"), [(1, 1), (2, 2)])
async def test_concurrency_limit_holds_at_the_server(
    fake_ollama: Start, limit: int, expected_overlap: int
) -> None:
    server = fake_ollama([{"content": "ok", "latency_ms": 150} for _ in range(4)])
    router = ModelRouter(make_settings(server.url, concurrency={"ollama": limit}))

    replies = await asyncio.gather(*(router.stream(f"lats.{r}", ASK) for r in ("expansion",) * 4))

    assert [reply.content for reply in replies] == ["ok"] * 4
    assert server.max_in_flight == expected_overlap


async def test_routers_of_different_sessions_share_the_provider_limit(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "ok", "latency_ms": 100} for _ in range(3)])
    routers = [ModelRouter(make_settings(server.url, concurrency={"ollama": 1})) for _ in range(3)]

    await asyncio.gather(*(router.stream("react", ASK) for router in routers))

    assert server.max_in_flight == 1


async def test_cancellation_is_prompt_and_frees_the_slot(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "slow", "latency_ms": 5000}, {"content": "next"}])
    router = ModelRouter(make_settings(server.url, concurrency={"ollama": 1}))

    task = asyncio.create_task(router.stream("react", ASK))
    assert await asyncio.to_thread(server.wait_for_chats, 1)
    task.cancel()
    for _ in range(100):  # loop turns, not time: a cancel that waited for the answer would need its 5 s
        if task.done():
            break
        await asyncio.sleep(0)
    assert task.cancelled(), "the cancel waited for the server's answer"

    reply = await router.stream("react", ASK)
    assert reply.content == "next"


async def test_context_window_is_num_ctx_capped_by_the_model(fake_ollama: Start) -> None:
    server = fake_ollama(
        models={
            "tiny:1b": {"context_length": 4096},
            "long:8b": {"context_length": 262_144, "arch": "llama"},
        }
    )
    settings = make_settings(server.url, num_ctx=200_000, model="ollama:tiny:1b")
    settings.llm.retrieval = "ollama:long:8b"
    router = ModelRouter(settings)

    assert await router.context_window("react") == 4096
    assert await router.context_tier("react") is ContextTier.SMALL
    assert await router.context_window("retrieval") == 200_000
    assert await router.context_tier("retrieval") is ContextTier.LARGE
    shows = [r for r in server.requests if r.path == "/api/show"]
    await router.context_window("retrieval")
    assert len([r for r in server.requests if r.path == "/api/show"]) == len(shows) == 2


async def test_context_window_falls_back_to_num_ctx_when_the_server_is_down(dead_url: str) -> None:
    router = ModelRouter(make_settings(dead_url, num_ctx=4096))
    assert await router.context_window("react") == 4096


async def test_plain_ainvoke_through_chat_model_behaves_like_chat_ollama(fake_ollama: Start) -> None:
    server = fake_ollama([{"thinking": "hidden", "content": '{"answer": 42}'}])
    router = ModelRouter(make_settings(server.url))

    reply: Any = await router.chat_model("react").ainvoke(ASK)

    # No <think> folding outside router.stream: structured output must still see plain JSON.
    assert reply.content == '{"answer": 42}'
    assert server.chat_bodies[0]["options"]["num_ctx"] == 16384
