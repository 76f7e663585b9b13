"""The real llama-server tells its window (`-c 8192`), and Arbor budgets with it instead of 128k."""

from __future__ import annotations

import pytest

from ide.llm import ModelRouter
from tests.support.models import make_settings
from tests.support.realmodel import RealServer


async def test_the_window_is_read_from_the_real_server(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    settings = make_settings(model=f"openai:{real_server.model}", num_ctx=16384)
    settings.llm.openai_base_url = real_server.url
    window = await ModelRouter(settings).window("react")
    assert window.tokens == real_server.context == 8192
    assert window.source.startswith("llama-server /props")


async def test_the_probe_of_the_real_base_model_is_bounded_and_names_its_missing_template(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from ide.llm.probe import PROBE_LIMIT_S, probe

    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    settings = make_settings(model=f"openai:{real_server.model}", num_ctx=16384)
    settings.llm.openai_base_url = real_server.url
    started = time.monotonic()
    result = await probe(ModelRouter(settings), "react", ["react"])
    assert time.monotonic() - started < PROBE_LIMIT_S + 5
    assert result.context_window == 8192
    assert result.template is not None and "carries no chat template" in result.template
    assert "base model" in result.describe() and "context 8192 tokens" in result.describe()
