"""Structured answers are constrained where the server can (Ollama ``format``), fall back to the prompt and
one repair where it refuses; a busy or failing server is retried once, never after text was streamed."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelError, ModelRouter
from ide.search.base import ask_structured
from tests.support.models import Verdict, make_settings

BUSY = {"status": 503, "error": "server busy, please try again.  maximum pending requests exceeded"}


ASK = [HumanMessage("Score this answer.")]


async def test_ollama_gets_the_json_schema_as_format(fake_ollama: Any) -> None:
    server = fake_ollama([{"content": '{"score": 7, "reason": "fine"}'}])
    verdict, _reply = await ask_structured(
        ModelRouter(make_settings(server.url)), "lats.evaluation", ASK, Verdict
    )
    assert verdict == Verdict(score=7, reason="fine")
    assert server.chat_bodies[0]["format"] == Verdict.model_json_schema()


async def test_a_server_that_refuses_the_format_is_asked_without_it(fake_ollama: Any) -> None:
    refusal = {"status": 400, "error": "invalid format: json schema not supported"}
    server = fake_ollama(
        [refusal, {"content": '{"score": 3, "reason": "meh"}'}, {"content": '{"score": 1, "reason": "x"}'}]
    )
    router = ModelRouter(make_settings(server.url, retry_backoff_s=0))
    verdict, _ = await ask_structured(router, "lats.evaluation", ASK, Verdict)
    assert verdict.score == 3
    first, second = server.chat_bodies
    assert "format" in first and second.get("format") in (None, "")
    await ask_structured(router, "lats.evaluation", ASK, Verdict)
    assert server.chat_bodies[2].get("format") in (None, ""), "remembered: not asked with the format again"


async def test_free_text_is_repaired_once_when_nothing_constrains_it(fake_ollama: Any) -> None:
    server = fake_ollama(
        [{"content": "I think it is pretty good, maybe 8."}, {"content": '{"score": 8, "reason": "good"}'}]
    )
    verdict, _ = await ask_structured(ModelRouter(make_settings(server.url)), "lats.evaluation", ASK, Verdict)
    assert verdict.score == 8
    assert "could not be used" in server.chat_bodies[1]["messages"][-1]["content"]


async def test_a_busy_server_is_retried_once_after_a_pause(fake_ollama: Any) -> None:
    server = fake_ollama([BUSY, {"content": "hello"}])
    router = ModelRouter(make_settings(server.url, retry_backoff_s=0.2))
    reply = await router.stream("react", ASK)
    assert reply.text == "hello" and len(server.chat_bodies) == 2
    assert router.usage_snapshot()["react"].calls == 1


async def test_a_server_busy_twice_fails_with_the_fix(fake_ollama: Any) -> None:
    server = fake_ollama([BUSY, BUSY, {"content": "never asked"}])
    with pytest.raises(ModelError) as caught:
        await ModelRouter(make_settings(server.url, retry_backoff_s=0)).stream("react", ASK)
    assert "server busy" in caught.value.info.message and caught.value.info.fix
    assert len(server.chat_bodies) == 2


async def test_no_retry_once_text_was_streamed(fake_ollama: Any) -> None:
    """A retry would show the user the start of the answer twice."""
    server = fake_ollama([{"content": "partial answer", "stream_error": "unexpected EOF"}, {"content": "x"}])
    shown: list[str] = []
    with pytest.raises(ModelError):
        await ModelRouter(make_settings(server.url, retry_backoff_s=0)).stream(
            "react", ASK, on_chunk=lambda kind, text: shown.append(text)
        )
    assert len(server.chat_bodies) == 1 and shown


@pytest.mark.parametrize(
    "bad", [{"status": 404, "error": 'model "x" not found'}, {"status": 401, "error": "no"}]
)
async def test_errors_that_a_retry_cannot_fix_are_not_retried(fake_ollama: Any, bad: dict[str, Any]) -> None:
    server = fake_ollama([bad, {"content": "x"}])
    with pytest.raises(ModelError):
        await ModelRouter(make_settings(server.url, retry_backoff_s=0)).stream("react", ASK)
    assert len(server.chat_bodies) == 1
