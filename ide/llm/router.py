"""``ModelRouter``: one per agent session; maps roles to models, calls them under limits, meters usage."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from ide.llm.budget import (
    TRUNCATION_RATIO,
    Calibration,
    Fitted,
    answer_reserve,
    cut_to_fit,
    fit_messages,
    replace_with_summary,
    summary_request,
    task_text,
)
from ide.llm.degenerate import LoopGuard
from ide.llm.errors import ModelError, classify_error, timed_out
from ide.llm.fallback import Fallback, falls_back
from ide.llm.limits import provider_gate
from ide.llm.meter import MeteredCall, UsageMeter
from ide.llm.providers import build_chat_model, stream_keywords
from ide.llm.scripted import Script, ScriptedChatModel
from ide.llm.spec import ModelSpec, parse_model_spec
from ide.llm.textcalls import TextGate, recover_tool_calls
from ide.llm.thinking import ThinkSplitter
from ide.llm.tiers import ContextTier
from ide.llm.window import ServedWindow, model_window
from ide.llm.wire import openai_response_format, refused_format, retryable, unreadable_calls
from ide.protocol import RoleUsage
from ide.settings import LatsModels, PlanModels, Settings, TotModels

log = logging.getLogger(__name__)

TIMING_KEY = "arbor_timing"
STOPPED_KEY = "arbor_stopped"
"""Why an answer ended early, in its response_metadata: "repetition", "max_answer_tokens" or None."""
STOPPED_NOTES = {
    "repetition": "⚠ Arbor stopped this answer: the model kept repeating itself.",
    "max_answer_tokens": "⚠ The answer reached llm.max_answer_tokens ({cap} tokens) and was cut there.",
}
"""``AIMessage.response_metadata`` key: seconds to the first chunk and in all."""

TRUNCATED_KEY = "arbor_truncated"
"""``AIMessage.additional_kwargs`` key set when the server evaluated far less than was sent."""

ChunkKind = Literal["thought", "text"]
OnChunk = Callable[[str, str], Awaitable[None] | None]

DEFAULT_ROLES = ("default", "react")
COMPACTOR = "compactor"
"""Role of the model that summarises older steps when a conversation would overflow its window."""
"""Roles that always use ``llm.model``."""

ROLES: tuple[str, ...] = (
    *DEFAULT_ROLES,
    "orchestrator",
    "retrieval",
    "compactor",
    *(f"lats.{name}" for name in LatsModels.model_fields),
    *(f"tot.{name}" for name in TotModels.model_fields),
    *(f"plan.{name}" for name in PlanModels.model_fields),
)
"""Every fixed model role a router answers for; workflow agents add ``agent.<profile>`` roles."""

AGENT_ROLE_PREFIX = "agent."
"""Roles of workflow agent profiles: ``agent.code`` uses ``llm.agents.code``, else the default model."""

BOUND_CACHE = 32
"""Tool-bound models a router keeps for reuse."""


class ModelRouter:
    """Routes model roles to chat models for one session.

    ``stream`` is the metered path: it applies the per-provider concurrency and rate limits, the call
    timeout, error classification and usage accounting (counted as the answer streams, ``ide.llm.meter``).
    ``chat_model`` hands out the bare model for callers that need LangChain features (structured output)
    and do their own accounting.
    """

    def __init__(self, settings: Settings, *, base_dir: Path | None = None) -> None:
        self.settings = settings
        self.base_dir = base_dir
        self._models: dict[tuple[str, ...], BaseChatModel] = {}
        self._scripts: dict[str, Script] = {}
        self.meter = UsageMeter()
        """Usage by role, counted while answers stream (its ``on_spent`` hears the spend mid-call)."""
        self._windows: dict[str, ServedWindow] = {}
        self._bound: OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = OrderedDict()
        self._calibrations: dict[str, Calibration] = {}
        self.format_refused: set[str] = set()
        """Models whose server refused a JSON-schema format: later structured calls go unconstrained."""
        self.context: dict[str, tuple[int, int]] = {}
        """Role → (tokens of its last request, its window): the status bar's context fill."""
        self.compactions = 0
        """Requests whose messages were compacted to fit (older results elided, summarised or cut)."""
        self.on_context: Callable[[str, int, int], None] | None = None
        """Told (role, tokens, window) before every request, e.g. to show the fill in the window."""
        self.fallbacks: dict[str, Fallback] = {}
        self._untold: list[Fallback] = []
        """Roles whose own model could not be used, by role: they run on ``llm.model`` for the session."""
        self.on_notice: Callable[[str], Awaitable[None] | None] | None = None
        """Told a warning for the user (a role that fell back); without it the call's on_chunk hears it
        as a thought."""

    def spec_for(self, role: str, *, fallback: bool = True) -> ModelSpec:
        """The model spec for ``role``: its own setting if set, else ``llm.model``.

        With ``fallback`` a role whose own model could not be used gets ``llm.model``, and so does one whose
        own spec is bad (recorded here, told at the next call); without it, the role's own spec or its error.
        """
        own = self.own_setting(role)
        if own and fallback:
            if role in self.fallbacks:
                own = None
            else:
                try:
                    return parse_model_spec(own, base_dir=self.base_dir)
                except ModelError as err:
                    if self._record_fallback(role, err) is None:
                        raise
                    own = None
        return parse_model_spec(own or self.settings.llm.model, base_dir=self.base_dir)

    def own_setting(self, role: str) -> str | None:
        """The model setting of ``role`` itself, as written; None when it uses ``llm.model``."""
        llm = self.settings.llm
        value: str | None
        if role in DEFAULT_ROLES:
            value = None
        elif role in ("orchestrator", "retrieval", COMPACTOR):
            value = getattr(llm, role)
        elif role in ROLES:
            section, name = role.split(".", 1)
            value = getattr(getattr(llm, section), name)
        elif role.startswith(AGENT_ROLE_PREFIX) and len(role) > len(AGENT_ROLE_PREFIX):
            value = llm.agents.get(role[len(AGENT_ROLE_PREFIX) :])
        else:
            raise ModelError(
                "internal",
                f"Unknown model role {role!r}",
                f"Use one of: {', '.join(ROLES)}, or agent.<profile>.",
            )
        return value or None

    def chat_model(self, role: str, *, fallback: bool = True) -> BaseChatModel:
        """The LangChain chat model for ``role`` (one instance per spec, so roles share HTTP clients)."""
        spec = self.spec_for(role, fallback=fallback)
        if spec.provider == "scripted":
            # Scripted lines may be restricted to a role, so each role gets its own view of the
            # session's one cursor.
            key: tuple[str, ...] = (spec.provider, spec.model, role)
            if key not in self._models:
                script = self._scripts.setdefault(spec.model, Script(Path(spec.model)))
                self._models[key] = ScriptedChatModel(script=script, role=role)
            return self._models[key]
        key = (spec.provider, spec.model)
        if key not in self._models:
            self._models[key] = build_chat_model(spec, self.settings.llm)
        return self._models[key]

    async def stream(
        self,
        role: str,
        messages: list[BaseMessage],
        tools: Sequence[BaseTool] = (),
        on_chunk: OnChunk | None = None,
        *,
        schema: type[BaseModel] | None = None,
        fallback: bool = True,
    ) -> AIMessage:
        """Call the model for ``role`` with ``tools`` bound, streaming thoughts and text to ``on_chunk``.

        The request is fitted to the model's context window first (ide.llm.budget). With ``schema`` the
        answer is constrained to that JSON Schema where the server can (Ollama ``format``, OpenAI
        ``response_format``, Anthropic forced tool use); a server that refuses the format is asked again
        without it. A dropped connection, a 5xx or a busy server is retried once, after a pause, when
        nothing was streamed yet. Returns the whole answer: content without reasoning, tool calls
        (structured, or recovered from the text), reasoning in ``additional_kwargs["reasoning_content"]``,
        usage in ``usage_metadata``. Failures raise ModelError; cancellation propagates.

        A role whose own model cannot be created or reached (``ide.llm.fallback``) runs on ``llm.model``
        from then on, with a warning (``on_notice``) and a note in its usage; ``fallback=False`` (a probe
        of that very model) raises instead. Only the default model's own failure fails the call.
        """
        while True:
            fell_back = role in self.fallbacks
            try:
                self.spec_for(role, fallback=fallback)  # a bad spec of the role's own falls back here
                await self._tell(on_chunk)
                return await self._stream(role, messages, tools, on_chunk, schema, fallback)
            except ModelError as err:
                if not fallback or fell_back or not falls_back(err):
                    raise
                if self._record_fallback(role, err) is None:
                    raise
                await self._tell(on_chunk)

    def _record_fallback(self, role: str, err: ModelError) -> Fallback | None:
        """Send ``role`` to the default model after ``err`` from its own; None when it already uses it."""
        if role in self.fallbacks:
            return self.fallbacks[role]  # a concurrent call of the role fell back meanwhile
        own = self.own_setting(role)
        if not own:
            return None
        default = parse_model_spec(self.settings.llm.model, base_dir=self.base_dir)
        try:
            if str(parse_model_spec(own, base_dir=self.base_dir)) == str(default):
                return None
        except ModelError:
            pass  # a bad spec of the role's own
        record = Fallback(role=role, configured=own.strip(), used=default.raw, reason=err)
        self.fallbacks[role] = record
        self._untold.append(record)
        log.warning("%s", record.notice().strip())
        entry = self.meter.entry(role, default.raw)
        entry.fallback_from = record.configured
        entry.fallback_reason = err.info.message
        return record

    async def _tell(self, on_chunk: OnChunk | None) -> None:
        """Say the fallbacks not told yet: through ``on_notice``, else as a thought of this call."""
        while self._untold:
            notice = self._untold.pop(0).notice()
            result = self.on_notice(notice) if self.on_notice else on_chunk and on_chunk("thought", notice)
            if inspect.isawaitable(result):
                await result

    async def _stream(
        self,
        role: str,
        messages: list[BaseMessage],
        tools: Sequence[BaseTool],
        on_chunk: OnChunk | None,
        schema: type[BaseModel] | None,
        fallback: bool,
    ) -> AIMessage:
        spec = self.spec_for(role, fallback=fallback)
        llm = self.settings.llm
        try:
            model = self.chat_model(role, fallback=fallback)
        except Exception as exc:
            raise classify_error(exc, spec, llm) from exc
        fitted = await self._fit(role, spec, messages)
        sent = fitted.messages
        constrained = schema is not None and str(spec) not in self.format_refused
        gate = provider_gate(
            spec.provider,
            self._endpoint(spec),
            llm.concurrency.get(spec.provider, 4),
            llm.rate_limit_per_minute.get(spec.provider),
        )
        retried = False
        while True:
            runnable = self._runnable(model, spec, tools, schema if constrained else None)
            streamed = False

            async def forward(kind: str, text: str) -> None:
                nonlocal streamed
                streamed = True
                if on_chunk is not None:
                    result = on_chunk(kind, text)
                    if inspect.isawaitable(result):
                        await result

            try:
                async with gate:
                    call = self.meter.open(role, spec.raw, fitted.tokens)
                    try:
                        message = await self._collect(model, runnable, sent, spec, forward, tools, call)
                    except BaseException as exc:
                        # Cancelled or timed out: the server worked on it; refused outright: nothing spent.
                        worked = not isinstance(exc, ModelError) or exc.kind == "model_timeout"
                        self.meter.ended(call, spent=call.streamed or worked)
                        raise
                break
            except ModelError as err:
                if constrained and refused_format(err):
                    log.info("%s refused the JSON schema format (%s); asking without it", spec, err)
                    self.format_refused.add(str(spec))
                    constrained = False
                    continue
                if retried or streamed or not retryable(err):
                    raise
                retried = True
                log.info("%s failed (%s); retrying once in %g s", spec, err.info.message, llm.retry_backoff_s)
                await asyncio.sleep(llm.retry_backoff_s)
        if constrained and schema is not None and spec.provider == "anthropic" and message.tool_calls:
            # Forced tool use: the answer is the arguments of the one call to the schema's tool.
            message = message.model_copy(
                update={"content": json.dumps(message.tool_calls[0]["args"]), "tool_calls": []}
            )
        self._check_truncation(role, spec, sent, fitted, message)
        self.meter.answered(call, message)
        return message

    async def _fit(self, role: str, spec: ModelSpec, messages: list[BaseMessage]) -> Fitted:
        """``messages`` fitted to the window of ``role``'s model, the answer's room reserved."""
        window = await self.context_window(role)
        limit = window - answer_reserve(window)
        calibration = self._calibration(spec)
        fitted = fit_messages(messages, limit, calibration)
        if fitted.overflow_range is not None and role != COMPACTOR:
            start, end = fitted.overflow_range
            try:
                summary = await self.stream(
                    COMPACTOR, summary_request(fitted.messages[start:end], task_text(messages))
                )
                if summary.text.strip():
                    fitted = replace_with_summary(fitted, summary.text.strip(), calibration)
            except ModelError as exc:
                log.warning("could not summarise older steps (%s); cutting them instead", exc)
        if fitted.tokens > limit:
            fitted = cut_to_fit(fitted, limit, calibration)
        if fitted.notes:
            self.compactions += 1
        if fitted.changed or fitted.notes:
            log.info(
                "%s: %d → %d tokens for a %d-token window (%s)",
                role,
                fitted.tokens_before,
                fitted.tokens,
                window,
                "; ".join(fitted.notes),
            )
        self.context[role] = (fitted.tokens, window)
        if self.on_context is not None:
            self.on_context(role, fitted.tokens, window)
        return fitted

    def _calibration(self, spec: ModelSpec) -> Calibration:
        return self._calibrations.setdefault(str(spec), Calibration())

    def _check_truncation(
        self, role: str, spec: ModelSpec, sent: list[BaseMessage], fitted: Fitted, message: AIMessage
    ) -> None:
        """Learn the model's characters per token from the server's count, and notice when it cut."""
        usage = message.usage_metadata
        if usage is None or spec.provider == "scripted":
            return
        evaluated = usage.get("input_tokens", 0)
        window = self.context.get(role, (0, 0))[1]
        if evaluated and evaluated < fitted.tokens * TRUNCATION_RATIO:
            message.additional_kwargs[TRUNCATED_KEY] = {"sent": fitted.tokens, "evaluated": evaluated}
            log.warning(
                "%s evaluated %d of the ~%d prompt tokens sent: the server cut the prompt (its window is "
                "smaller than Arbor's budget of %d); raise llm.num_ctx or lower it to match the server",
                spec,
                evaluated,
                fitted.tokens,
                window,
            )
            return
        self._calibration(spec).learn(sent, evaluated)

    def _runnable(
        self, model: BaseChatModel, spec: ModelSpec, tools: Sequence[BaseTool], schema: type[BaseModel] | None
    ) -> Any:
        """``model`` with ``tools`` bound, constrained to ``schema``'s JSON where the provider can."""
        runnable = self._bind(model, tools) if tools else model
        if schema is None or spec.provider == "scripted":
            return runnable
        if spec.provider == "ollama":
            return runnable.bind(format=schema.model_json_schema())
        if spec.provider == "openai":
            return runnable.bind(response_format=openai_response_format(schema))
        if spec.provider == "anthropic":
            return model.bind_tools([schema], tool_choice=schema.__name__)
        return runnable

    async def _collect(
        self,
        model: BaseChatModel,
        runnable: Any,
        messages: list[BaseMessage],
        spec: ModelSpec,
        on_chunk: OnChunk | None,
        tools: Sequence[BaseTool] = (),
        call: MeteredCall | None = None,
    ) -> AIMessage:
        splitter = ThinkSplitter()
        answer: list[str] = []
        thoughts: list[str] = []
        shown: list[str] = []
        merged: AIMessageChunk | None = None
        names = [tool.name for tool in tools]
        # With tools bound, text that may be a tool call written out is held back until it is decided.
        gate = TextGate(names) if names else None

        async def emit(kind: ChunkKind, text: str) -> None:
            if kind == "text":
                answer.append(text)
                if gate is not None:
                    text = gate.feed(text)
            # Drop the blank lines models put between </think> and the answer, or before either.
            parts = shown if kind == "text" else thoughts
            if not parts:
                text = text.lstrip()
            if not text:
                return
            parts.append(text)
            if on_chunk is not None:
                result = on_chunk(kind, text)
                if inspect.isawaitable(result):
                    await result

        extra_kwargs = stream_keywords(model)
        llm = self.settings.llm
        started = time.perf_counter()
        first_chunk_s: float | None = None
        loops = LoopGuard()
        async with aclosing(runnable.astream(messages, **extra_kwargs)) as chunks:
            while True:
                # The first chunk may wait for the model to load; after it, only silence is bounded.
                first = merged is None
                limit = llm.first_token_timeout_s if first else llm.request_timeout_s
                try:
                    async with asyncio.timeout(limit):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    raise timed_out(spec, llm, first_chunk=first) from exc
                except Exception as exc:
                    # Only exceptions from the model are classified; on_chunk's own propagate as they are.
                    raise classify_error(exc, spec, llm, mid_answer=not first) from exc
                if not isinstance(chunk, AIMessageChunk):
                    continue
                if first_chunk_s is None:
                    first_chunk_s = time.perf_counter() - started
                if call is not None:
                    self.meter.feed(call, chunk)
                merged = chunk if merged is None else merged + chunk
                reasoning = chunk.additional_kwargs.get("reasoning_content")
                if isinstance(reasoning, str) and reasoning:
                    await emit("thought", reasoning)
                    loops.feed(reasoning)
                for kind, text in _content_parts(chunk.content):
                    loops.feed(text)
                    if kind == "thought":
                        await emit("thought", text)
                    else:
                        for split_kind, piece in splitter.feed(text):
                            await emit(split_kind, piece)
                if loops.looping:  # leaving the loop closes the stream: the server stops generating
                    break
            for split_kind, piece in splitter.flush():
                await emit(split_kind, piece)
        stopped = _why_stopped(merged, loops, llm.max_answer_tokens)
        if stopped:
            await emit("thought", STOPPED_NOTES[stopped].format(cap=llm.max_answer_tokens))

        if merged is None:
            raise ModelError(
                "bad_model_response", f"{spec} returned an empty stream", "Retry; check the model server log."
            )
        extra = {k: v for k, v in merged.additional_kwargs.items() if k != "reasoning_content"}
        if thoughts:
            extra["reasoning_content"] = "".join(thoughts)
        content = "".join(answer).strip()
        tool_calls = merged.tool_calls
        if gate is not None:
            rest, _held = gate.release()
            if rest.strip() and on_chunk is not None:
                result = on_chunk("text", rest if shown else rest.lstrip())
                if inspect.isawaitable(result):
                    await result
            if not tool_calls and merged.invalid_tool_calls:
                tool_calls = unreadable_calls(merged.invalid_tool_calls, names)
            if not tool_calls:
                recovery = recover_tool_calls(content, names)
                if recovery.calls:
                    tool_calls = recovery.calls
                    content = recovery.remainder
        timing = {"first_chunk_s": first_chunk_s or 0.0, "total_s": time.perf_counter() - started}
        return AIMessage(
            content=content,
            additional_kwargs=extra,
            tool_calls=tool_calls,
            invalid_tool_calls=merged.invalid_tool_calls,
            usage_metadata=merged.usage_metadata,
            response_metadata={**merged.response_metadata, TIMING_KEY: timing, STOPPED_KEY: stopped},
            id=merged.id,
        )

    def usage_snapshot(self) -> dict[str, RoleUsage]:
        """Usage so far, by role: the calls that ended (answered, cancelled, timed out or failed part-way)
        and the calls in flight as they stand, each counted as a call (copies: later calls do not change a
        snapshot). A turn cancelled while its model streams reports that call's spend even when the
        call's own task has not seen its cancellation yet (LangGraph runs nodes in tasks of their own)."""
        return self.meter.spent()

    async def window(self, role: str) -> ServedWindow:
        """The window the model for ``role`` runs with as Arbor uses it, and where that was read (Ollama:
        capped by num_ctx; an OpenAI-compatible server: asked of it; see :mod:`ide.llm.window`)."""
        spec = self.spec_for(role)
        llm = self.settings.llm
        if spec.provider == "scripted":
            return ServedWindow(llm.num_ctx, "llm.num_ctx")
        found = self._windows.get(spec.raw)
        if found is None:
            found = await model_window(spec, llm)
            if found.tokens is None:
                found = replace(found, tokens=llm.num_ctx, source=f"{found.source}; assuming llm.num_ctx")
            if found.settled:  # a server that could not be asked is asked again at the next call
                self._windows[spec.raw] = found
        return found

    async def context_window(self, role: str) -> int:
        """Tokens the model for ``role`` can attend to, as Arbor will run it."""
        return (await self.window(role)).tokens or self.settings.llm.num_ctx

    async def context_tier(self, role: str) -> ContextTier:
        return ContextTier.from_context_window(await self.context_window(role))

    def _bind(self, model: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
        """``model.bind_tools(tools)``, reused while the same tool objects come back (a search binds one
        tool list for hundreds of calls; converting the schemas each time cost ~1.6 ms a call)."""
        key = (id(model), *map(id, tools))
        found = self._bound.get(key)
        # The cache holds the tools themselves, so their ids cannot be reused by other objects meanwhile.
        if found is not None and all(a is b for a, b in zip(found[0], (model, *tools), strict=True)):
            self._bound.move_to_end(key)
            return found[1]
        runnable = model.bind_tools(list(tools))
        self._bound[key] = ((model, *tools), runnable)
        if len(self._bound) > BOUND_CACHE:
            self._bound.popitem(last=False)
        return runnable

    def _endpoint(self, spec: ModelSpec) -> str:
        llm = self.settings.llm
        if spec.provider == "ollama":
            return llm.ollama_host
        if spec.provider == "openai":
            return llm.openai_base_url or ""
        return ""


def _content_parts(content: str | list[Any]) -> list[tuple[ChunkKind, str]]:
    """Text and reasoning of one chunk's content (a string, or provider content blocks)."""
    if isinstance(content, str):
        return [("text", content)] if content else []
    parts: list[tuple[ChunkKind, str]] = []
    for block in content:
        if isinstance(block, str):
            parts.append(("text", block))
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                parts.append(("text", block["text"]))
            elif kind in ("thinking", "reasoning"):
                text = block.get("thinking") or block.get("reasoning") or ""
                if text:
                    parts.append(("thought", text))
    return parts


def _why_stopped(merged: AIMessageChunk | None, loops: LoopGuard, cap: int) -> str | None:
    """Why the answer ended early: a loop Arbor cut, or the server's token cap (finish/done reason)."""
    if loops.looping:
        return "repetition"
    meta = merged.response_metadata if merged is not None else {}
    if {meta.get("finish_reason"), meta.get("done_reason"), meta.get("stop_reason")} & {
        "length",
        "max_tokens",
    }:
        return "max_answer_tokens"
    return None
