"""The context budget: every request fits the model's window, with room left for the answer.

Ollama cuts an over-long prompt from the front without a word — the system prompt and the task go first —
so Arbor counts before it sends. Tokens are estimated from characters with a per-model ratio that
calibrates itself from what the server reports it evaluated (``prompt_eval_count`` / usage). When a
conversation would overflow, :func:`fit_messages` keeps the system prompt, the task and the latest steps
whole and replaces older tool observations by one-line stubs; what still does not fit is summarised by
the caller (role ``compactor``) or, last, cut in its middle.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

DEFAULT_CHARS_PER_TOKEN = 3.5
"""Code and English prose run 3.5–4.5 characters a token on the tokenizers of local models; starting low
over-counts a little, which only compacts a little early."""
MIN_CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN = 2.0, 6.0
MESSAGE_OVERHEAD_TOKENS = 6
"""Role markers and separators a chat template adds per message."""
KEEP_LAST_MESSAGES = 4
"""The latest steps (a model reply and the observations it asked for) are kept whole."""
TRUNCATION_RATIO = 0.5
"""The server evaluating less than this share of the estimate means it cut the prompt: a model's real
ratio stays within 2–6 characters a token, so a miscalibrated estimate is off by less than that."""


def answer_reserve(window: int) -> int:
    """Tokens left free for the model's answer: a fifth of the window, between 512 and 4,096."""
    return max(512, min(4096, window // 5))


def message_chars(message: BaseMessage) -> int:
    """Characters a message puts into the prompt: its text, tool calls and their arguments."""
    size = len(message.text) if isinstance(message.content, list) else len(message.content or "")
    if isinstance(message, AIMessage) and message.tool_calls:
        size += len(json.dumps([[c["name"], c["args"]] for c in message.tool_calls], default=str))
    return size


@dataclass
class Calibration:
    """Characters per token of one model, learnt from the server's own counts."""

    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    samples: int = 0

    def tokens(self, messages: Sequence[BaseMessage]) -> int:
        return self.tokens_of(sum(message_chars(m) for m in messages), len(messages))

    def tokens_of(self, chars: int, count: int) -> int:
        """Tokens of ``count`` messages holding ``chars`` characters (callers that change one message at a
        time keep the sum: recounting every message after each change made a long conversation's fit
        quadratic, seconds a request at a few hundred turns)."""
        return math.ceil(chars / self.chars_per_token) + MESSAGE_OVERHEAD_TOKENS * count

    def learn(self, messages: Sequence[BaseMessage], evaluated: int) -> None:
        """Fold in a server's count of the tokens it evaluated for ``messages`` (not cut by it)."""
        text_tokens = evaluated - MESSAGE_OVERHEAD_TOKENS * len(messages)
        chars = sum(message_chars(m) for m in messages)
        if text_tokens <= 0 or chars < 200:
            return
        observed = min(MAX_CHARS_PER_TOKEN, max(MIN_CHARS_PER_TOKEN, chars / text_tokens))
        # Weighted towards the lower (safer) ratio: over-counting wastes a little room, under-counting
        # lets the server cut the task.
        weight = 1 / (self.samples + 1) if self.samples < 4 else 0.2
        self.chars_per_token += weight * (observed - self.chars_per_token)
        self.samples += 1


@dataclass
class Fitted:
    """What :func:`fit_messages` did: the messages to send and how they were made to fit."""

    messages: list[BaseMessage]
    tokens_before: int
    tokens: int
    elided: int = 0
    cut: int = 0
    overflow_range: tuple[int, int] | None = None
    """Indexes [start, end) of ``messages`` still too big after stubbing: the caller may summarise them."""
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.elided > 0 or self.cut > 0


def fit_messages(messages: Sequence[BaseMessage], limit: int, calibration: Calibration) -> Fitted:
    """``messages`` made to fit ``limit`` tokens by stubbing older tool observations (oldest first).

    Protected: leading system messages, the first human message (the task) and the last
    :data:`KEEP_LAST_MESSAGES` messages. When stubs are not enough, ``overflow_range`` names the older
    messages a summary could replace; :func:`cut_to_fit` is the last resort.
    """
    out = list(messages)
    sizes = [message_chars(m) for m in out]
    chars = sum(sizes)
    before = calibration.tokens_of(chars, len(out))
    fitted = Fitted(out, before, before)
    if before <= limit:
        return fitted
    protected = _protected(out)
    calls = _calls_by_id(out)
    for index, message in enumerate(out):
        if fitted.tokens <= limit:
            break
        if index in protected or not isinstance(message, ToolMessage) or _is_stub(message):
            continue
        stub = ToolMessage(
            content=_stub_text(message, calls.get(message.tool_call_id)),
            tool_call_id=message.tool_call_id,
            name=message.name,
            status=message.status,
        )
        out[index] = stub
        chars += message_chars(stub) - sizes[index]
        sizes[index] = message_chars(stub)
        fitted.elided += 1
        fitted.tokens = calibration.tokens_of(chars, len(out))
    if fitted.elided:
        fitted.notes.append(f"{fitted.elided} older tool result(s) elided")
    if fitted.tokens > limit:
        start = _first_unprotected(out, protected)
        end = _tail_start(out)
        later = [i for i in _task_index(out) if start is not None and start < i < end]
        if later:
            end = min(later)  # the summary never swallows this turn's request
        if start is not None and end > start:
            fitted.overflow_range = (start, end)
    return fitted


def cut_to_fit(fitted: Fitted, limit: int, calibration: Calibration) -> Fitted:
    """Last resort: cut the middle out of the longest messages until ``limit`` holds (the system prompt and
    the task are cut last)."""
    out = fitted.messages
    sizes = [message_chars(m) for m in out]
    chars = sum(sizes)
    protected_heads = {i for i, m in enumerate(out) if isinstance(m, SystemMessage)} | _task_index(out)
    order = sorted(range(len(out)), key=lambda i: (i in protected_heads, -sizes[i]))
    for index in order:
        excess = calibration.tokens_of(chars, len(out)) - limit
        if excess <= 0:
            break
        message = out[index]
        text = message.content if isinstance(message.content, str) else message.text
        drop = math.ceil(excess * calibration.chars_per_token) + 200
        if len(text) <= drop + 400:
            keep_head, keep_tail = len(text) // 3, len(text) // 6
        else:
            keep = len(text) - drop
            keep_head, keep_tail = keep * 2 // 3, keep // 3
        removed = len(text) - keep_head - keep_tail
        if removed <= 0:
            continue
        marker = f"\n[… {removed} characters cut to fit the model's context window …]\n"
        out[index] = message.model_copy(
            update={"content": text[:keep_head] + marker + text[len(text) - keep_tail :]}
        )
        chars += message_chars(out[index]) - sizes[index]
        sizes[index] = message_chars(out[index])
        fitted.cut += 1
    fitted.tokens = calibration.tokens(out)
    fitted.notes.append(f"{fitted.cut} message(s) cut in the middle")
    return fitted


def summary_request(older: Sequence[BaseMessage], task: str) -> list[BaseMessage]:
    """The compactor's prompt: summarise older steps of a run so the agent can go on without them."""
    lines = []
    for message in older:
        if isinstance(message, AIMessage):
            calls = ", ".join(
                f"{c['name']}({json.dumps(c['args'], default=str)[:200]})" for c in message.tool_calls
            )
            lines.append(f"Agent: {message.text[:1500]}" + (f" [called {calls}]" if calls else ""))
        elif isinstance(message, ToolMessage):
            lines.append(f"Result of {message.name}: {message.text[:1500]}")
        else:
            lines.append(f"{message.type}: {message.text[:1500]}")
    return [
        SystemMessage(
            "You compress an agent's earlier steps so it can continue its task. Keep every fact it "
            "learnt that may matter (file paths with line numbers, names, errors, decisions, edits "
            "made); drop chatter. Answer with the summary only, at most 300 words."
        ),
        HumanMessage(f"The task: {task[:2000]}\n\nThe earlier steps:\n" + "\n".join(lines)),
    ]


def replace_with_summary(fitted: Fitted, summary: str, calibration: Calibration) -> Fitted:
    """``fitted`` with its overflow range replaced by one message holding ``summary``."""
    assert fitted.overflow_range is not None
    start, end = fitted.overflow_range
    replaced = end - start
    note = HumanMessage(
        f"(Summary of {replaced} earlier messages, compacted to fit the context window)\n{summary}"
    )
    fitted.messages = [*fitted.messages[:start], note, *fitted.messages[end:]]
    fitted.tokens = calibration.tokens(fitted.messages)
    fitted.overflow_range = None
    fitted.notes.append(f"{replaced} older message(s) summarised")
    return fitted


def task_text(messages: Sequence[BaseMessage]) -> str:
    """The task: the first human message's text."""
    return next((m.text for m in messages if isinstance(m, HumanMessage)), "")


def _protected(messages: list[BaseMessage]) -> set[int]:
    leading = set()
    for index, message in enumerate(messages):
        if not isinstance(message, SystemMessage):
            break
        leading.add(index)
    tail = set(range(_tail_start(messages), len(messages)))
    return leading | _task_index(messages) | tail


def _task_index(messages: list[BaseMessage]) -> set[int]:
    """The first human message (the session's task) and the last one (this turn's request)."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    return {humans[0], humans[-1]} if humans else set()


def _tail_start(messages: list[BaseMessage]) -> int:
    """Where the kept latest steps begin: never in the middle of a reply's tool results."""
    start = max(0, len(messages) - KEEP_LAST_MESSAGES)
    while start > 0 and isinstance(messages[start], ToolMessage):
        start -= 1
    return start


def _first_unprotected(messages: list[BaseMessage], protected: set[int]) -> int | None:
    task = _task_index(messages)
    after = min(task) + 1 if task else 0
    while after < len(messages) and isinstance(messages[after], SystemMessage):
        after += 1
    return after if after not in protected else None


def _calls_by_id(messages: list[BaseMessage]) -> dict[str, dict]:  # type: ignore[type-arg]
    return {
        call.get("id") or "": call
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    }


def _is_stub(message: ToolMessage) -> bool:
    return isinstance(message.content, str) and message.content.endswith("read again if needed)")


def _stub_text(message: ToolMessage, call: dict | None) -> str:  # type: ignore[type-arg]
    """``read_file app.py 1–400: 12.3 KB — elided…``: what was asked and how big the answer was."""
    name = message.name or (call or {}).get("name") or "tool"
    args = (call or {}).get("args") or {}
    target = args.get("path") or args.get("pattern") or args.get("query") or ""
    span = ""
    if "start_line" in args or "end_line" in args:
        span = f" {args.get('start_line', 1)}–{args.get('end_line', 'end')}"
    size = len(message.text)
    shown = f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"
    return f"{name} {target}{span}: {shown} — elided to fit the context window (read again if needed)"
