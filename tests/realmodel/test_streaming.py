"""Streaming from the real llama-server through Arbor's router: the answer comes in pieces and its usage is
counted as it streams (the server's own count at the end), a cancel mid-answer stops the server and still
reports the call's spend, and a server killed mid-answer is a clear error at once, not a hang."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelError, ModelRouter
from ide.protocol import RoleUsage
from tests.support.models import make_settings
from tests.support.realmodel import RealServer, llama_server

ASK = [HumanMessage("Tell me a long story about the sea, the ships and the sailors.")]
STOPPED_WITHIN_S = 3.0
"""A cancelled answer's slot is idle again within this (its 400-token cap takes ~7 s at 55 tokens/s)."""


def router_for(server: RealServer, monkeypatch: pytest.MonkeyPatch, cap: int) -> ModelRouter:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    settings = make_settings(model=f"openai:{server.model}", temperature=0.0, max_answer_tokens=cap)
    settings.llm.openai_base_url = server.url
    return ModelRouter(settings)


async def test_the_answer_streams_in_pieces_and_its_usage_is_counted_as_it_comes(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    router = router_for(real_server, monkeypatch, cap=64)
    counted: list[RoleUsage] = []

    def on_chunk(kind: str, text: str) -> None:
        counted.append(router.meter.spent()["react"].model_copy())

    message = await router.stream("react", ASK, on_chunk=on_chunk)

    assert len(counted) > 10  # a token or so a piece, not one block at the end
    assert counted[0].calls == 1 and counted[0].input_tokens > 0
    mid = [c.output_tokens for c in counted]
    assert mid == sorted(mid) and 0 < mid[len(mid) // 2] < mid[-1]
    # The server's own count (stream_options.include_usage) is what the call records.
    assert message.usage_metadata is not None
    used = router.usage_snapshot()["react"]
    assert (used.calls, used.output_tokens) == (1, message.usage_metadata["output_tokens"])
    assert used.input_tokens == message.usage_metadata["input_tokens"]
    assert 0 < used.output_tokens <= 64


async def test_a_cancel_mid_answer_stops_the_server_and_reports_the_spend(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    router = router_for(real_server, monkeypatch, cap=400)
    pieces: list[str] = []

    def on_chunk(kind: str, text: str) -> None:
        pieces.append(text)
        if len(pieces) == 20:
            call.cancel()  # Ctrl-C

    call = asyncio.ensure_future(router.stream("react", ASK, on_chunk=on_chunk))
    with pytest.raises(asyncio.CancelledError):
        await call

    used = router.usage_snapshot()["react"]
    assert used.calls == 1 and used.input_tokens > 0
    assert 20 <= used.output_tokens < 60  # what streamed before the cancel, not 0 and not the cap
    deadline = time.monotonic() + STOPPED_WITHIN_S
    while real_server.slot_busy():
        assert time.monotonic() < deadline, "the server went on generating after the cancel"
        await asyncio.sleep(0.1)  # polling the server's slot state: it has no event to wait on


async def test_a_server_killed_mid_answer_is_a_clear_error_with_the_spend_counted(
    real_build: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    with llama_server(*real_build, context=2048) as server:
        assert server.process is not None
        router = router_for(server, monkeypatch, cap=400)
        pieces: list[str] = []
        killed: list[float] = []

        def on_chunk(kind: str, text: str) -> None:
            pieces.append(text)
            if len(pieces) == 10:
                server.process.kill()  # type: ignore[union-attr]
                killed.append(time.monotonic())

        with pytest.raises(ModelError) as caught:
            async with asyncio.timeout(120):  # a hang fails here (the prompt is slow on a busy machine)
                await router.stream("react", ASK, on_chunk=on_chunk)
        # Timed from the kill: what comes before it is the model's prompt and first pieces, not the error.
        assert killed and time.monotonic() - killed[0] < 15
    said = caught.value.info.text()
    assert f"The connection to {server.url} closed in the middle of the answer" in said, said
    used = router.usage_snapshot()["react"]
    assert used.calls == 1 and used.output_tokens >= 10
