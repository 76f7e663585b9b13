"""Failures of the model server become ModelErrors of the right kind, with the fix in the text."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool

from ide.llm import ModelError, ModelRouter, parse_model_spec
from ide.llm.errors import classify_error
from tests.support.fake_ollama import FakeOllama
from tests.support.models import MODEL, make_settings

Start = Callable[..., FakeOllama]
ASK = [HumanMessage("hi")]


async def failure(router: ModelRouter, tools: list[BaseTool] | tuple[()] = ()) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await router.stream("react", ASK, tools=tools)
    return caught.value


async def test_connection_refused_says_start_ollama(dead_url: str) -> None:
    err = await failure(ModelRouter(make_settings(dead_url)))
    assert err.info.kind == "model_unreachable"
    assert err.info.message == f"Ollama is not reachable at {dead_url}"
    assert "ollama serve" in (err.info.fix or "")
    assert "OLLAMA_HOST" in str(err)


async def test_unknown_model_says_pull_it(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "unused"}], models={"llama3.1:8b": {}})
    err = await failure(ModelRouter(make_settings(server.url)))
    assert err.info.kind == "model_not_found"
    assert f'"ollama pull {MODEL}"' in (err.info.fix or "")
    assert server.responses_left == 1


async def test_garbage_line_is_a_bad_response(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "partial answer", "garbage": True}])
    err = await failure(ModelRouter(make_settings(server.url)))
    assert err.info.kind == "bad_model_response"
    assert server.url in err.info.message


async def test_http_500_is_reported_with_the_server_message(fake_ollama: Start) -> None:
    fault = {"status": 500, "error": "llama runner process has terminated"}
    server = fake_ollama([fault, fault])  # one retry, then the failure is reported
    err = await failure(ModelRouter(make_settings(server.url, retry_backoff_s=0)))
    assert err.info.kind == "bad_model_response"
    assert "HTTP 500" in err.info.message
    assert "llama runner process has terminated" in err.info.message
    assert "ollama serve" in (err.info.fix or "")


async def test_error_line_mid_stream(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "starting", "stream_error": "unexpected EOF"}])
    err = await failure(ModelRouter(make_settings(server.url)))
    assert err.info.kind == "bad_model_response"
    assert "unexpected EOF" in err.info.message


async def test_toolless_model_names_a_tool_capable_one(fake_ollama: Start, tools: list[BaseTool]) -> None:
    server = fake_ollama([{"content": "unused"}], models={MODEL: {"tools": False}})
    err = await failure(ModelRouter(make_settings(server.url)), tools)
    assert err.info.kind == "no_tool_support"
    assert "ARBOR_MODEL" in (err.info.fix or "")
    assert "ollama:" in (err.info.fix or "")


async def test_reasoning_on_a_model_that_cannot_think(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "unused"}], models={MODEL: {"thinking": False}})
    err = await failure(ModelRouter(make_settings(server.url, reasoning=True)))
    assert err.info.kind == "settings"
    assert "llm.reasoning" in (err.info.fix or "")


async def test_context_overflow_says_raise_num_ctx(fake_ollama: Start) -> None:
    server = fake_ollama([{"status": 400, "error": "the input length exceeds the context length"}])
    err = await failure(ModelRouter(make_settings(server.url)))
    assert err.info.kind == "context_overflow"
    assert "ARBOR_LLM_NUM_CTX" in (err.info.fix or "")


async def test_slow_server_times_out(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "late", "latency_ms": 3000}])
    err = await failure(ModelRouter(make_settings(server.url, first_token_timeout_s=0.3)))
    assert err.info.kind == "model_timeout"
    assert "first_token_timeout_s" in (err.info.fix or "")


async def test_callback_errors_are_not_disguised_as_model_errors(fake_ollama: Start) -> None:
    server = fake_ollama([{"content": "hello"}])

    def broken(kind: str, text: str) -> None:
        raise KeyError("ui went away")

    with pytest.raises(KeyError):
        await ModelRouter(make_settings(server.url)).stream("react", ASK, on_chunk=broken)


async def test_missing_extra_is_provider_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import fails as if not installed
    router = ModelRouter(make_settings(model="openai:gpt-4o-mini"))
    err = await failure(router)
    assert err.info.kind == "provider_missing"
    assert "pip install 'arbor-ide[openai]'" in (err.info.fix or "")


class APIStatusError(Exception):
    """Shaped like the openai/anthropic SDK errors, which are matched by name and status code."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class APIConnectionError(Exception):
    pass


class RateLimitError(APIStatusError):
    pass


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (APIConnectionError("Connection error."), "model_unreachable"),
        (APIStatusError("Incorrect API key provided", 401), "model_auth"),
        (APIStatusError("The model `gpt-9` does not exist", 404), "model_not_found"),
        (APIStatusError("This model's maximum context length is 128000 tokens", 400), "context_overflow"),
        (RateLimitError("Rate limit reached", 429), "bad_model_response"),
        (TimeoutError(), "model_timeout"),
        (ImportError("No module named 'langchain_openai'", name="langchain_openai"), "provider_missing"),
        (RuntimeError("something odd"), "internal"),
    ],
)
def test_classifier_for_hosted_providers(exc: Exception, kind: str) -> None:
    spec = parse_model_spec("openai:gpt-4o-mini")
    err = classify_error(exc, spec, make_settings().llm)
    assert err.info.kind == kind
    assert err.info.message


def test_model_errors_pickle() -> None:
    import pickle

    err: Any = pickle.loads(pickle.dumps(ModelError("model_timeout", "slow", "wait")))
    assert (err.info.kind, err.info.message, err.info.fix) == ("model_timeout", "slow", "wait")


async def test_missing_api_key_is_provider_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", type(sys)("langchain_anthropic"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    err = await failure(ModelRouter(make_settings(model="anthropic:claude-sonnet-4-5")))
    assert err.info.kind == "provider_missing"
    assert "ANTHROPIC_API_KEY" in (err.info.fix or "")
