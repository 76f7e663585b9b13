"""A cancelled model call stops: the cancel reaches the stream whenever it lands, even as a chunk arrives.

langchain-openai bounds each chunk's wait with ``asyncio.wait_for``, which on Python 3.11 returns the chunk
and drops the cancel when both happen at once: 96 cancels in 100 were swallowed against a fast stream, and
the call streamed on to the end of its answer (an eval run over its token budget spent all of it). The
real langchain-openai client through the router, the simulated server streaming fast."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelRouter
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import make_settings

LONG = " ".join(f"step{n:04d}" for n in range(400))
TRIES = 20

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


async def test_every_cancel_of_a_streaming_call_stops_it() -> None:
    with FakeOpenAI([{"content": LONG, "token_ms": 0.5}] * TRIES) as server:
        settings = make_settings(model="openai:local-model", context_window=32768)
        settings.llm.openai_base_url = server.url
        router = ModelRouter(settings)
        outcomes = []
        for _ in range(TRIES):
            pieces = 0

            def on_chunk(kind: str, text: str) -> None:
                nonlocal pieces
                pieces += 1

            call = asyncio.create_task(router.stream("react", [HumanMessage("count")], on_chunk=on_chunk))
            for _ in range(20_000):  # bounded: the stream is well under way within a second
                if pieces >= 20:
                    break
                await asyncio.sleep(0.001)
            call.cancel()  # from another task, as a chunk may be arriving
            try:
                await call
                outcomes.append(f"streamed on to the end ({pieces} pieces)")
            except asyncio.CancelledError:
                outcomes.append("stopped")
        assert outcomes == ["stopped"] * TRIES
        # Every call's spend is counted where it stopped, and the server saw every stream closed.
        (usage,) = router.meter.snapshot().values()
        assert usage.calls == TRIES
        for _ in range(500):  # the server notices at its next piece (0.5 ms)
            if server.closed_early == TRIES:
                break
            await asyncio.sleep(0.01)
        assert server.closed_early == TRIES
