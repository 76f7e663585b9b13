"""Cancelling a ReAct run stops its model call whenever the cancel lands: while the graph is awaited, and
while an event of the graph is being sent to the client (a slow client's pipe). The second case left the
graph's node streaming on to the end of its answer, so an evaluation over its token budget spent the whole
answer (found in CI: 3,801 tokens against a 2,500 budget). The real graph, the real langchain-openai
client, the simulated OpenAI-compatible server streaming one long answer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ide.changes import ChangeSet
from ide.llm import ModelRouter
from ide.search.base import RunContext
from ide.search.react import ReactArchitecture
from ide.search.tree import TreeRecorder
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import make_settings

LONG = " ".join(f"step{n:04d}" for n in range(1600))
"""About six seconds of answer at 2 ms a piece: a call that runs on is plain."""

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


async def test_a_cancel_while_an_event_is_being_sent_stops_the_model_call(tmp_path: Path) -> None:
    sending = asyncio.Event()
    never = asyncio.Event()

    async def slow_client(event: dict[str, Any]) -> None:
        if event.get("type") == "text":
            sending.set()
            await never.wait()  # the client's pipe is full: the cancel lands here

    with FakeOpenAI([{"content": LONG, "token_ms": 2.0}]) as server:
        settings = make_settings(model="openai:local-model", context_window=32768)
        settings.llm.openai_base_url = server.url
        router = ModelRouter(settings)
        ctx = RunContext(
            task="say the steps",
            settings=settings,
            router=router,
            changeset=ChangeSet(tmp_path),
            recorder=TreeRecorder(architecture="react", emit=lambda event: None),
            progress=slow_client,
            session_id="cancel",
            thread_id="cancel",
        )
        run = asyncio.create_task(ReactArchitecture().run(ctx))
        await asyncio.wait_for(sending.wait(), 30)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        # The call ended with the run: its spend is final, and the server saw the stream closed.
        assert router.meter.spent_tokens() == sum(
            u.input_tokens + u.output_tokens for u in router.meter.snapshot().values()
        )
        (usage,) = router.meter.snapshot().values()
        assert usage.calls == 1 and usage.output_tokens < 1000
        for _ in range(200):  # the server notices at its next piece (2 ms)
            if server.closed_early:
                break
            await asyncio.sleep(0.01)
        assert server.closed_early == 1
