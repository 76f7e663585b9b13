"""Usage counted while answers stream, through the real langchain-openai client against the simulated
OpenAI-compatible server: the server's own count where it sends one, the streamed pieces until then, and
the spend of a call that is cancelled or cut short."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelError, ModelRouter
from ide.protocol import RoleUsage
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import make_settings

ANSWER = " ".join(f"step{n:03d}" for n in range(240))
"""1,919 characters (no loop to cut): 384 pieces of the simulator's stream, 479 tokens by its count."""


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def router_for(server: FakeOpenAI) -> ModelRouter:
    settings = make_settings(model=f"openai:{server.model}")
    settings.llm.openai_base_url = server.url
    return ModelRouter(settings)


async def test_usage_is_counted_while_the_answer_streams_and_the_servers_count_wins_at_the_end() -> None:
    with FakeOpenAI([{"content": ANSWER}]) as server:
        router = router_for(server)
        heard: list[dict[str, RoleUsage]] = []
        router.meter.on_spent = heard.append
        mid_call: list[RoleUsage] = []

        def on_chunk(kind: str, text: str) -> None:
            if len(mid_call) < 200:
                mid_call.append(router.meter.spent()["react"].model_copy())

        message = await router.stream("react", [HumanMessage("change the greeting")], on_chunk=on_chunk)

    assert server.bodies[0]["stream_options"] == {"include_usage": True}
    # Mid-call: one call in flight, its prompt and the pieces streamed so far, none of it finished yet.
    assert mid_call[0].calls == 1 and mid_call[0].input_tokens > 0
    assert mid_call[-1].output_tokens > mid_call[0].output_tokens > 0
    streamed = [spent["react"].output_tokens for spent in heard if "react" in spent]
    assert len(streamed) >= 5 and streamed == sorted(streamed)  # told as it grew, not only at the end
    # At the end: the server's own count (prompt_tokens / completion_tokens of its usage chunk).
    final = router.usage_snapshot()["react"]
    assert (final.calls, final.output_tokens) == (1, len(ANSWER.strip()) // 4)
    assert message.usage_metadata is not None
    assert final.input_tokens == message.usage_metadata["input_tokens"]
    assert heard[-1]["react"] == final.model_copy(update={"latency_ms": heard[-1]["react"].latency_ms})


async def test_a_cancelled_call_still_reports_what_it_spent() -> None:
    with FakeOpenAI([{"content": ANSWER, "token_ms": 5}]) as server:
        router = router_for(server)
        pieces: list[str] = []

        async def ask() -> None:
            await router.stream("react", [HumanMessage("change the greeting")], on_chunk=take)

        def take(kind: str, text: str) -> None:
            pieces.append(text)
            if len(pieces) == 20:
                call.cancel()  # Ctrl-C mid-answer

        call = asyncio.ensure_future(ask())
        with pytest.raises(asyncio.CancelledError):
            await call
    used = router.usage_snapshot()["react"]
    assert used.calls == 1
    assert used.input_tokens > 0
    # 20 pieces of 5 characters were read (a few more may have arrived with them): ~25 tokens, not 479.
    assert 25 <= used.output_tokens < 60
    assert router.meter.spent_tokens() == used.input_tokens + used.output_tokens  # nothing left in flight


async def test_a_stream_cut_short_reports_its_spend_and_a_refused_call_none() -> None:
    with FakeOpenAI([{"content": ANSWER, "drop": True}, {"status": 400, "error": "bad request"}]) as server:
        router = router_for(server)
        with pytest.raises(ModelError):
            await router.stream("react", [HumanMessage("change the greeting")])
        cut = router.usage_snapshot()["react"]
        assert cut.calls == 1 and cut.input_tokens > 0 and cut.output_tokens >= 1
        with pytest.raises(ModelError):
            await router.stream("react", [HumanMessage("change the greeting")])
    assert router.usage_snapshot()["react"] == cut  # the server refused it: nothing was spent
