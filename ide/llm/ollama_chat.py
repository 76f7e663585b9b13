"""Arbor's Ollama chat model: ChatOllama that keeps a thinking model's reasoning (imported only when a
session uses Ollama; ``ide.llm.providers.build_chat_model`` makes it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_ollama import ChatOllama

FOLD_THINKING = "fold_thinking"
"""Call keyword of :class:`ArborChatOllama`: fold unrequested thinking into ``<think>`` tags."""


class ArborChatOllama(ChatOllama):
    """ChatOllama that can keep Ollama's ``thinking`` field when ``reasoning`` is unset.

    Current Ollama servers send a thinking model's reasoning in ``message.thinking`` even when ``think``
    is not requested; ChatOllama drops it unless ``reasoning=True``, and asking for ``think: true`` fails
    on models that cannot think. So when a call passes ``fold_thinking=True`` (``ModelRouter.stream`` does)
    and reasoning is unset, the thinking is folded into the content as ``<think>…</think>`` (what older
    servers sent), and the router's splitter takes it back out. Other calls (``ainvoke``, structured
    output) behave exactly like ChatOllama.
    """

    async def _acreate_chat_stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> AsyncIterator[Mapping[str, Any] | str]:
        fold = kwargs.pop(FOLD_THINKING, False) and kwargs.get("reasoning", self.reasoning) is None
        thinking_open = False
        async for part in super()._acreate_chat_stream(messages, stop, **kwargs):
            if not fold or isinstance(part, str) or "message" not in part or part["message"] is None:
                yield part
                continue
            message = part["message"]
            thinking = message.get("thinking") or ""
            content = message.get("content") or ""
            prefix = ""
            if thinking:
                prefix = ("" if thinking_open else "<think>") + thinking
                thinking_open = True
            if thinking_open and (content or part.get("done")):
                prefix += "</think>"
                thinking_open = False
            if prefix:
                message["content"] = prefix + content
                message["thinking"] = None
            yield part
