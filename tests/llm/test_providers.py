"""ide.llm.providers: each OpenAI-compatible chat model gets a connection pool of its own.

langchain-openai's default async client is cached per server for the whole process; its idle connections
belong to the event loop that opened them, and a later loop's call that closed an expired one failed with
"Event loop is closed" (tests/realmodel/test_streaming.py, once in a full run)."""

from __future__ import annotations

import asyncio

from ide.llm.providers import build_chat_model
from ide.llm.spec import parse_model_spec
from ide.settings import Settings


def test_two_openai_models_share_no_connection_pool() -> None:
    settings = Settings().llm.model_copy(update={"openai_base_url": "http://127.0.0.1:9/v1"})
    spec = parse_model_spec("openai:some-model")
    first, second = (build_chat_model(spec, settings) for _ in range(2))
    pools = [model.root_async_client._client for model in (first, second)]  # type: ignore[attr-defined]
    assert pools[0] is not pools[1]
    assert asyncio.run(_closed(pools)) == [True, True]


async def _closed(pools: list[object]) -> list[bool]:
    for pool in pools:
        await pool.aclose()  # type: ignore[attr-defined]
    return [pool.is_closed for pool in pools]  # type: ignore[attr-defined]
