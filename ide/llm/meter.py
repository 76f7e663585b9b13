"""What one session's model calls spent, by role, counted while the answers stream.

Every call is metered from the moment it is sent: a call that is cancelled (Ctrl-C, a search's branch
stopped, an evaluation over its budget), times out or fails part-way still reports its spend, and what
the calls streaming now have spent so far can be watched (``UsageMeter.on_spent``, e.g. to stop a run
once it passes a token budget, mid-call).

The server's count wins where it gives one (OpenAI's ``stream_options.include_usage``, which our
ChatOpenAI asks for; Ollama's final chunk; Anthropic's message events). Until it comes, or when it never
does, a streamed answer is counted: each chunk carrying content, reasoning or tool-call arguments is a
token (local servers stream about one token a chunk), or one token per 4 characters where that is more
(servers that send bigger pieces). The prompt is Arbor's own estimate of the request it fitted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk

from ide.protocol import RoleUsage
from ide.protocol.tree import recovered_calls

CHARS_PER_TOKEN = 4
SPENT_STEP_TOKENS = 32
"""Streamed tokens between two reports to ``on_spent`` (also told when a call starts and ends)."""

OnSpent = Callable[[dict[str, RoleUsage]], None]


@dataclass(eq=False)
class MeteredCall:
    """One model call in flight: the prompt Arbor sent and what has streamed back so far."""

    role: str
    model: str
    prompt_tokens: int
    """Arbor's estimate of the request (the server's count replaces it when it gives one)."""
    chunks: int = 0
    chars: int = 0
    served_input: int = 0
    served_output: int = 0
    served: bool = False
    started: float = field(default_factory=time.perf_counter)

    @property
    def streamed(self) -> bool:
        """Something came back: the server took the request and worked on it."""
        return self.chunks > 0 or self.served

    @property
    def input_tokens(self) -> int:
        return self.served_input or self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        counted = max(self.chunks, -(-self.chars // CHARS_PER_TOKEN))
        return max(self.served_output, counted)

    def feed(self, chunk: AIMessageChunk) -> None:
        """Count one streamed chunk: its text, reasoning and tool-call arguments, and any server usage."""
        size = _text_size(chunk.content)
        reasoning = chunk.additional_kwargs.get("reasoning_content")
        if isinstance(reasoning, str):
            size += len(reasoning)
        for part in chunk.tool_call_chunks:
            size += len(part.get("args") or "") + len(part.get("name") or "")
        if size:
            self.chunks += 1
            self.chars += size
        usage = chunk.usage_metadata
        if usage:
            # Chunks' usages add up (LangChain's merge); most servers send one, at the end.
            self.served = True
            self.served_input += int(usage.get("input_tokens") or 0)
            self.served_output += int(usage.get("output_tokens") or 0)


class UsageMeter:
    """Usage by role of one session: calls that ended (answered, cancelled, timed out, failed) and the
    calls streaming now."""

    def __init__(self) -> None:
        self._usage: dict[str, RoleUsage] = {}
        self._open: list[MeteredCall] = []
        self._ended_tokens = 0
        self._told = 0
        self.on_spent: OnSpent | None = None
        """Told the session's spend so far, calls in flight included, as calls start, stream and end."""

    def entry(self, role: str, model: str) -> RoleUsage:
        """The running figures of ``role`` (made on first use, for ``model``)."""
        return self._usage.setdefault(role, RoleUsage(model=model))

    def open(self, role: str, model: str, prompt_tokens: int) -> MeteredCall:
        """Start metering a call about to be sent with a request of ``prompt_tokens``."""
        call = MeteredCall(role=role, model=model, prompt_tokens=prompt_tokens)
        self._open.append(call)
        self._tell()
        return call

    def feed(self, call: MeteredCall, chunk: AIMessageChunk) -> None:
        call.feed(chunk)
        if self.on_spent is not None and self.spent_tokens() - self._told >= SPENT_STEP_TOKENS:
            self._tell()

    def answered(self, call: MeteredCall, message: AIMessage) -> None:
        """The call ended with ``message``: the server's usage where it gave one, else the streamed count
        (also set as the message's ``usage_metadata``, so trees and callers see the same figures)."""
        usage = message.usage_metadata
        if not usage:
            output = max(call.output_tokens, _estimate(message))
            usage = {
                "input_tokens": call.prompt_tokens,
                "output_tokens": output,
                "total_tokens": call.prompt_tokens + output,
            }
            message.usage_metadata = usage  # type: ignore[assignment]
        self._close(call, usage["input_tokens"], usage["output_tokens"], recovered_calls(message.tool_calls))

    def ended(self, call: MeteredCall, *, spent: bool) -> None:
        """The call ended without an answer (cancelled, timed out, failed): what it streamed counts, and
        its prompt when ``spent`` (the server worked on it); a call refused outright counts nothing."""
        if not spent:
            self._open.remove(call)
            self._tell()
            return
        self._close(call, call.input_tokens, call.output_tokens, 0)

    def _close(self, call: MeteredCall, input_tokens: int, output_tokens: int, recovered: int) -> None:
        self._open.remove(call)
        entry = self.entry(call.role, call.model)
        entry.model = call.model
        entry.calls += 1
        entry.input_tokens += input_tokens
        entry.output_tokens += output_tokens
        entry.latency_ms += (time.perf_counter() - call.started) * 1000
        entry.recovered_calls += recovered
        self._ended_tokens += input_tokens + output_tokens
        self._tell()

    def snapshot(self) -> dict[str, RoleUsage]:
        """Usage of the calls that ended, by role (copies: later calls do not change a snapshot)."""
        return {role: usage.model_copy() for role, usage in self._usage.items()}

    def spent(self) -> dict[str, RoleUsage]:
        """Usage so far with the calls in flight counted as they stand (each as one call)."""
        usage = self.snapshot()
        for call in self._open:
            entry = usage.setdefault(call.role, RoleUsage(model=call.model))
            entry.calls += 1
            entry.input_tokens += call.input_tokens
            entry.output_tokens += call.output_tokens
        return usage

    def spent_tokens(self) -> int:
        """Tokens in and out so far, the calls in flight counted as they stand."""
        return self._ended_tokens + sum(c.input_tokens + c.output_tokens for c in self._open)

    def _tell(self) -> None:
        if self.on_spent is None:
            return
        self._told = self.spent_tokens()
        self.on_spent(self.spent())


def _text_size(content: str | list[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    size = 0
    for block in content:
        if isinstance(block, str):
            size += len(block)
        elif isinstance(block, dict):
            size += sum(len(block.get(key) or "") for key in ("text", "thinking", "reasoning"))
    return size


def _estimate(message: AIMessage) -> int:
    """Output tokens of a whole answer by its length (a model that sent it in one piece)."""
    reasoning = message.additional_kwargs.get("reasoning_content", "")
    return (len(message.text) + len(reasoning if isinstance(reasoning, str) else "")) // CHARS_PER_TOKEN
