"""The context window of an OpenAI-compatible server is asked of the server (llama-server, vLLM, LM Studio),
never assumed to be a hosted model's 128k; unknown is said, and the overflow advice names the server's
own setting."""

from __future__ import annotations

import pytest

from ide.llm import ModelRouter
from ide.llm.errors import classify_error
from ide.llm.probe import probe
from ide.llm.spec import parse_model_spec
from ide.llm.window import server_root
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import make_settings
from tests.support.net import closed_port

MODEL = "local-model"
ANSWER = {"content": '{"language": "Python", "year": 1991}'}
CALL = {"tool_calls": [{"name": "read_file", "args": {"path": "README.md"}}]}


def openai_router(server: FakeOpenAI, **llm: object) -> ModelRouter:
    settings = make_settings(model=f"openai:{MODEL}", num_ctx=16384, **llm)
    settings.llm.openai_base_url = server.url
    return ModelRouter(settings)


@pytest.mark.parametrize(
    ("server_kind", "source"),
    [
        ("llama-server", "llama-server /props"),
        ("vllm", "/v1/models"),
        ("lmstudio", "LM Studio /api/v0/models"),
    ],
)
async def test_the_window_is_the_one_the_server_runs_the_model_with(
    monkeypatch: pytest.MonkeyPatch, server_kind: str, source: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(model=MODEL, context_length=8192, says_window=server_kind) as server:
        router = openai_router(server)
        window = await router.window("react")
        assert (window.tokens, await router.context_window("react")) == (8192, 8192)
        assert window.source.startswith(source) and server_root(server.url) in window.source
        asked = len(server.gets)
        assert await router.context_window("react") == 8192
        assert len(server.gets) == asked, "asked once per model, then remembered"


async def test_a_server_that_does_not_say_leaves_the_window_unknown_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI([CALL, ANSWER], model=MODEL, context_length=8192) as server:
        router = openai_router(server)
        window = await router.window("react")
        assert window.tokens == 16384 != 128_000  # llm.num_ctx, not a hosted model's window
        assert "does not say" in window.source and "assuming llm.num_ctx" in window.source
        result = await probe(router, "react", ["react"])
    assert result.context_window == 16384
    assert "context 16384 tokens" in result.describe() and "assuming llm.num_ctx" in result.describe()
    # Asked once: what the server does not say is not asked again at every model call of the probe.
    assert sorted(server.gets) == sorted(["/props", "/v1/models", f"/api/v0/models/{MODEL}"])


async def test_a_server_that_cannot_be_reached_is_asked_again_at_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = make_settings(model=f"openai:{MODEL}", num_ctx=16384)
    settings.llm.openai_base_url = f"http://127.0.0.1:{closed_port()}/v1"
    router = ModelRouter(settings)
    window = await router.window("react")
    assert window.tokens == 16384 and "could not be reached" in window.source
    with FakeOpenAI(model=MODEL, context_length=8192, says_window="vllm") as server:
        settings.llm.openai_base_url = server.url
        assert (await router.window("react")).tokens == 8192


async def test_the_setting_overrides_what_the_server_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(model=MODEL, context_length=8192, says_window="llama-server") as server:
        router = openai_router(server, context_window=4096)
        window = await router.window("react")
        assert (window.tokens, window.source) == (4096, "llm.context_window")
        assert server.gets == []


async def test_hosted_models_keep_their_published_windows_and_unknown_names_are_said() -> None:
    settings = make_settings(model="openai:gpt-4o-mini", num_ctx=16384)
    settings.llm.retrieval = "openai:some-new-model"
    router = ModelRouter(settings)
    assert (await router.window("react")).tokens == 128_000
    unknown = await router.window("retrieval")
    assert unknown.tokens == 16384 and "publishes no window" in unknown.source


def test_the_overflow_advice_names_the_setting_that_sizes_the_window() -> None:
    overflow = ValueError("the request exceeds the available context size (8192 tokens)")
    local = make_settings(model=f"openai:{MODEL}")
    local.llm.openai_base_url = "http://127.0.0.1:8080/v1"
    fix = classify_error(overflow, parse_model_spec(f"openai:{MODEL}"), local.llm).info.fix or ""
    assert "-c" in fix and "--max-model-len" in fix and "llm.num_ctx" not in fix
    ollama = make_settings()
    fix = classify_error(overflow, parse_model_spec("ollama:qwen3:8b"), ollama.llm).info.fix or ""
    assert "llm.num_ctx" in fix
