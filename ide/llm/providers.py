"""Build the LangChain chat model for a ``ModelSpec`` (Ollama built in; OpenAI/Anthropic optional extras)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel

from ide.llm.errors import api_key_missing, provider_missing
from ide.llm.spec import ModelSpec
from ide.llm.wire import tls
from ide.settings import LlmSettings

CONNECT_TIMEOUT_S = 10.0


def stream_keywords(model: object) -> dict[str, Any]:
    """Keywords for ``model.astream`` beyond the messages: Arbor's Ollama model folds unrequested thinking
    into ``<think>`` tags when asked (``ide/llm/ollama_chat.py``); other providers would send such a keyword
    to their API. Without an import: while that module is not loaded, no model can be one of its."""
    module = sys.modules.get("ide.llm.ollama_chat")
    if module is not None and isinstance(model, module.ArborChatOllama):
        return {module.FOLD_THINKING: True}
    return {}


def build_chat_model(spec: ModelSpec, settings: LlmSettings) -> BaseChatModel:
    """A chat model for a network provider (``scripted`` is built by the router, which owns its cursor)."""
    if spec.provider == "ollama":
        # Imported here: langchain_ollama and the ollama client take 0.3 s to import, which a session on
        # any other provider (or the scripted model) need not pay.
        from ide.llm.ollama_chat import ArborChatOllama

        return ArborChatOllama(
            model=spec.model,
            base_url=settings.ollama_host,
            # Always explicit: Ollama's own default (2k) truncates longer prompts without a word.
            num_ctx=settings.num_ctx,
            num_predict=settings.max_answer_tokens,
            temperature=settings.temperature,
            reasoning=settings.reasoning,
            # A dead host should fail in seconds; the router bounds the first chunk and the silences
            # between chunks itself, so the client only needs to outlast the longer of the two.
            client_kwargs={
                "timeout": httpx.Timeout(_read_timeout(settings), connect=CONNECT_TIMEOUT_S),
                "verify": tls(),  # one context for the sync and async clients of every model
            },
        )
    if spec.provider == "openai":
        module = _import_extra("langchain_openai", "openai")
        key = os.environ.get("OPENAI_API_KEY")
        if not key and not settings.openai_base_url:
            raise api_key_missing("openai")
        kwargs: dict[str, Any] = {
            "model": spec.model,
            "temperature": settings.temperature,
            "max_tokens": settings.max_answer_tokens,
            "timeout": _read_timeout(settings),
            "stream_usage": True,
            # The router retries once itself (after a pause, and only when nothing was streamed).
            "max_retries": 0,
        }
        if "stream_chunk_timeout" in module.ChatOpenAI.model_fields:
            # Off: its per-chunk asyncio.wait_for swallows a cancel that lands as a chunk arrives (Python
            # 3.11), so a stopped call streamed on to its end. The router bounds the silences itself.
            kwargs["stream_chunk_timeout"] = 0
        if settings.openai_base_url:
            kwargs["base_url"] = settings.openai_base_url
            # Local OpenAI-compatible servers usually ignore the key, but the client insists on one.
            kwargs["api_key"] = key or "unused"
        # A connection pool of this model's own: langchain-openai's default is one cached per server for
        # the whole process, whose idle connections belong to the event loop that opened them — a call on
        # a later loop (a test's, an eval run's) that closes an expired one failed "Event loop is closed".
        openai = _import_extra("openai", "openai")
        kwargs["http_async_client"] = openai.DefaultAsyncHttpxClient(timeout=kwargs["timeout"])
        return module.ChatOpenAI(**kwargs)
    if spec.provider == "anthropic":
        module = _import_extra("langchain_anthropic", "anthropic")
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise api_key_missing("anthropic")
        return module.ChatAnthropic(
            model=spec.model,
            temperature=settings.temperature,
            max_tokens=settings.max_answer_tokens,
            timeout=_read_timeout(settings),
            max_retries=0,
        )
    raise ValueError(f"no network chat model for provider {spec.provider!r}")


def _read_timeout(settings: LlmSettings) -> float:
    return max(settings.request_timeout_s, settings.first_token_timeout_s)


def _import_extra(module_name: str, provider: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise provider_missing(provider, package=module_name.replace("_", "-")) from None


# Published context windows, by model-name prefix (longest prefix wins); others get DEFAULT_CONTEXT_WINDOW.
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def known_context_window(model: str) -> int:
    name = model.lower()
    matches = [prefix for prefix in KNOWN_CONTEXT_WINDOWS if name.startswith(prefix)]
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW
