"""The metering proxy of ``arbor eval --agent``: a local HTTP server in front of the model server that
counts what a foreign agent's model calls spent, and stops them when the run's token budget is spent.

Another agent does not tell Arbor what it spent (and one that does could be wrong), so each agent run
gets a proxy of its own on ``127.0.0.1`` and is pointed at it instead of the model server (its command
and ``[agents]`` env name the proxy: :func:`ide.eval.agents.pointed`). Every request is passed on to the
model server unchanged — same path, same headers but ``Host`` — and its answer streamed back as it comes;
while it passes, the proxy reads the server's own usage figures:

- OpenAI chat completions: ``usage`` (a streamed request is sent on with
  ``stream_options.include_usage``; when the agent had not asked for it, the usage-only chunk is not
  passed back, so the agent sees the stream it asked for);
- OpenAI Responses: ``usage`` of the answer or of ``response.completed``;
- Ollama (``/api/chat``, ``/api/generate``): ``prompt_eval_count`` and ``eval_count``;
- Gemini (``:generateContent``, ``:streamGenerateContent``): ``usageMetadata``;
- Anthropic messages: ``usage`` of ``message_start`` and ``message_delta``.

A request the server refuses (an HTTP error) is no model call and costs nothing. The server's figures
win. Until they come (a stream cut short, a server that gives none), the answer is
counted as :mod:`ide.llm.meter` counts Arbor's own calls: a token a streamed piece carrying text, or one
per four characters where that is more, and the request one token per four characters of its messages.

When the spend passes the budget, :attr:`MeteringProxy.over` is set (the evaluation then cancels the
agent and ends its process), every answer streaming is cut and every later request is answered 429 with
a message that says why: the agent is stopped mid-answer, whatever it does with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)
GENERATION_SUFFIXES = (
    "/chat/completions",
    "/completions",
    "/responses",
    "/api/chat",
    "/api/generate",
    ":generateContent",
    ":streamGenerateContent",
    "/messages",
)
"""Request paths that are model calls (the rest — model lists, health — pass unmetered)."""


@dataclass(eq=False)
class ProxiedCall:
    """One model call through the proxy: the request's estimate and what came back."""

    path: str
    prompt_tokens: int
    chunks: int = 0
    chars: int = 0
    served_input: int | None = None
    served_output: int | None = None

    @property
    def served(self) -> bool:
        """The server gave its own figures."""
        return self.served_input is not None or self.served_output is not None

    @property
    def input_tokens(self) -> int:
        return self.served_input if self.served_input is not None else self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        if self.served_output is not None:
            return self.served_output
        return max(self.chunks, -(-self.chars // CHARS_PER_TOKEN))


@dataclass
class Spend:
    """What one run's calls spent so far."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    served_calls: int = 0
    """Calls whose figures came from the server (the rest are counted from what streamed)."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def usage_of(event: Any) -> tuple[int | None, int | None]:
    """The (input, output) tokens a server's answer or streamed event reports, each None where it says
    nothing; cumulative where the protocol is (Gemini's chunks, Anthropic's ``message_delta``)."""
    if not isinstance(event, dict):
        return None, None
    if isinstance(event.get("response"), dict) and str(event.get("type", "")).startswith("response."):
        return usage_of(event["response"])  # Responses: response.completed / incomplete / failed
    if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
        return usage_of(event["message"])  # Anthropic: the prompt's count comes first
    usage = event.get("usage")
    if isinstance(usage, dict):
        found_in = _int(usage, "prompt_tokens", "input_tokens")
        found_out = _int(usage, "completion_tokens", "output_tokens")
        if found_in is not None or found_out is not None:
            return found_in, found_out
    meta = event.get("usageMetadata")
    if isinstance(meta, dict):
        out = _int(meta, "candidatesTokenCount")
        thoughts = _int(meta, "thoughtsTokenCount")
        if thoughts is not None:
            out = (out or 0) + thoughts
        return _int(meta, "promptTokenCount"), out
    if event.get("done") is True and ("prompt_eval_count" in event or "eval_count" in event):
        return _int(event, "prompt_eval_count"), _int(event, "eval_count")
    return None, None


def _int(mapping: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def text_chars(event: Any) -> int:
    """Characters of generated text (answer, reasoning, tool-call arguments) one answer or streamed event
    carries, in any of the proxied protocols; 0 for events that carry none."""
    if not isinstance(event, dict):
        return 0
    total = 0
    for choice in event.get("choices") or ():
        if isinstance(choice, dict):
            part = choice.get("delta") or choice.get("message") or {}
            total += _strings(part, "content", "reasoning_content", "reasoning")
            total += _strings(choice, "text")
            for call in (part.get("tool_calls") if isinstance(part, dict) else None) or ():
                if isinstance(call, dict):
                    total += _strings(call.get("function") or {}, "arguments")
    delta = event.get("delta")
    if isinstance(delta, str):  # Responses: output_text / function_call_arguments / reasoning deltas
        total += len(delta)
    elif isinstance(delta, dict):  # Anthropic: content_block_delta
        total += _strings(delta, "text", "partial_json", "thinking")
    message = event.get("message")
    if isinstance(message, dict) and "role" in message and isinstance(message.get("content"), str):
        total += _strings(message, "content", "thinking")  # Ollama's chat (Anthropic's content is a list)
    total += _strings(event, "response") if isinstance(event.get("response"), str) else 0  # Ollama generate
    for candidate in event.get("candidates") or ():
        parts = ((candidate or {}).get("content") or {}).get("parts") if isinstance(candidate, dict) else None
        for part in parts or ():
            if isinstance(part, dict):
                total += _strings(part, "text")
                if isinstance(part.get("functionCall"), dict):
                    total += len(json.dumps(part["functionCall"].get("args") or {}))
    if isinstance(event.get("output"), list):  # a Responses answer, not streamed
        for item in event["output"]:
            for piece in (item.get("content") if isinstance(item, dict) else None) or ():
                total += _strings(piece, "text") if isinstance(piece, dict) else 0
            total += _strings(item, "arguments") if isinstance(item, dict) else 0
    return total


def _strings(mapping: Any, *keys: str) -> int:
    if not isinstance(mapping, dict):
        return 0
    return sum(len(v) for k in keys if isinstance(v := mapping.get(k), str))


def prompt_estimate(body: Any) -> int:
    """Tokens of a request before the server says: a token per four characters of what it sends the
    model (messages, input, contents, prompt, system, tools)."""
    if not isinstance(body, dict):
        return 0
    keys = ("messages", "input", "contents", "prompt", "system", "systemInstruction", "instructions", "tools")
    sent = [body[k] for k in keys if k in body]
    return -(-len(json.dumps(sent, ensure_ascii=False)) // CHARS_PER_TOKEN) if sent else 0


class _Reader:
    """Splits a streamed answer into its events as it passes: SSE ``data:`` lines, NDJSON lines, or one
    JSON document at the end (a plain answer; Gemini's non-SSE stream, a JSON array)."""

    def __init__(self, content_type: str) -> None:
        kind = content_type.split(";")[0].strip().lower()
        self.lines = kind in ("text/event-stream", "application/x-ndjson", "application/jsonl")
        self.sse = kind == "text/event-stream"
        self._buffer = b""

    def feed(self, data: bytes) -> list[tuple[bytes, Any]]:
        """The lines ``data`` completed (without their ``\\n``), each with its event (None: no event)."""
        self._buffer += data
        if not self.lines:
            return []
        *complete, self._buffer = self._buffer.split(b"\n")
        return [(line, self._event(line)) for line in complete]

    def end(self) -> list[tuple[bytes, Any]]:
        """What is left at the end of the answer: its last line unended, or the whole plain answer's
        events (with no line)."""
        rest, self._buffer = self._buffer, b""
        if self.lines:
            return [(rest, self._event(rest))] if rest else []
        with contextlib.suppress(ValueError):
            document = json.loads(rest)
            return [(b"", event) for event in (document if isinstance(document, list) else [document])]
        return []

    def _event(self, line: bytes) -> Any:
        text = line.strip()
        if self.sse:
            if not text.startswith(b"data:"):
                return None
            text = text[5:].strip()
        if not text or text == b"[DONE]":
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None


@dataclass
class _Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    keep_alive: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


class MeteringProxy:
    """One run's proxy: ``async with MeteringProxy(upstream, budget) as proxy`` serves on
    :attr:`origin` until the block ends; :meth:`spend` is what passed so far, :attr:`over` is set when it
    passes ``budget_tokens``."""

    def __init__(self, upstream: str, budget_tokens: int | None = None) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the model server {upstream!r} is not an http(s) URL")
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        """The model server's origin; requests keep their path."""
        self.budget_tokens = budget_tokens
        self.calls: list[ProxiedCall] = []
        self.over = asyncio.Event()
        """Set once the calls passed the budget."""
        self.requests = 0
        """Requests of any kind passed on (model lists included)."""
        self._server: asyncio.Server | None = None
        self._client: httpx.AsyncClient | None = None
        self._serving: set[asyncio.Task[None]] = set()
        """The connections being served (waited for at :meth:`aclose`)."""
        self._streaming: set[httpx.Response] = set()
        """Answers being passed back (closed at :meth:`aclose`: the model server stops generating)."""
        self.port = 0

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``: what stands in for the model server's origin."""
        return f"http://127.0.0.1:{self.port}"

    def spend(self) -> Spend:
        spent = Spend(calls=len(self.calls))
        for call in self.calls:
            spent.input_tokens += call.input_tokens
            spent.output_tokens += call.output_tokens
            spent.served_calls += call.served
        return spent

    async def __aenter__(self) -> MeteringProxy:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S), follow_redirects=False, trust_env=False
        )
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for response in list(self._streaming):
                await response.aclose()  # an answer still streaming: its relay ends, the server stops
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*self._serving, return_exceptions=True), 5.0)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _check_budget(self) -> None:
        if (
            self.budget_tokens is not None
            and not self.over.is_set()
            and self.spend().tokens > self.budget_tokens
        ):
            self.over.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                if not await self._answer(request, writer) or not request.keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return
        except httpx.HTTPError as exc:  # the model server broke off mid-answer: the agent's answer ends too
            log.debug("the model server's answer broke off: %s", exc)
            return
        finally:
            self._serving.discard(task)
            writer.close()

    async def _answer(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        """Pass one request on and its answer back; False when the connection cannot go on."""
        path = urlsplit(request.target).path
        metered = request.method == "POST" and path.endswith(GENERATION_SUFFIXES)
        if metered and self.over.is_set():
            await _send_error(writer, 429, self._spent_message())
            return True
        body, strip_usage, parsed = request.body, False, None
        if metered:
            with contextlib.suppress(ValueError):
                parsed = json.loads(body) if body else None
            if isinstance(parsed, dict) and path.endswith("/chat/completions") and parsed.get("stream"):
                options = parsed.get("stream_options")
                if not (isinstance(options, dict) and options.get("include_usage")):
                    strip_usage = True
                    parsed["stream_options"] = {**(options or {}), "include_usage": True}
                    body = json.dumps(parsed).encode()
        call = ProxiedCall(path, prompt_estimate(parsed)) if metered else None
        if call is not None:
            self.calls.append(call)
        self.requests += 1
        headers = [(k, v) for k, v in request.headers if k.lower() not in HOP_HEADERS]
        headers.append(("Accept-Encoding", "identity"))
        assert self._client is not None
        upstream = self._client.build_request(
            request.method, self.upstream + request.target, headers=headers, content=body
        )
        try:
            response = await self._client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            await _send_error(writer, 502, f"arbor eval: the model server {self.upstream} failed: {exc}")
            return True
        if call is not None and response.status_code >= 400:
            self.calls.remove(call)  # refused (busy, too long, bad key): the model spent nothing on it
            call = None
        self._streaming.add(response)
        try:
            return await self._relay(response, writer, call, strip_usage)
        finally:
            self._streaming.discard(response)
            await response.aclose()
            self._check_budget()

    async def _relay(
        self, response: httpx.Response, writer: asyncio.StreamWriter, call: ProxiedCall | None, strip: bool
    ) -> bool:
        kept = [(k, v) for k, v in response.headers.items() if k.lower() not in HOP_HEADERS]
        head = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
        head += [f"{k}: {v}" for k, v in kept]
        head += ["Transfer-Encoding: chunked", "Connection: keep-alive", "", ""]
        writer.write("\r\n".join(head).encode("latin-1"))
        reader = _Reader(response.headers.get("content-type", ""))
        # Stripping, the reader's whole lines are passed (less the usage-only chunk the agent did not ask
        # for) and a partial line waits for its end; else the answer passes as it comes.
        strip = strip and reader.sse
        async for data in response.aiter_raw():
            if writer.is_closing():
                return False  # the agent went away (ended, cancelled): its answer is not read on
            if call is None:
                await _chunk(writer, data)
                continue
            lines = reader.feed(data)
            if strip:
                data = b"".join(line + b"\n" for line, event in lines if not _usage_only(event))
            self._count(call, lines)
            if data:
                await _chunk(writer, data)
            if self.over.is_set():
                return False  # cut mid-answer: the connection closes, the agent sees its answer end
        if call is not None:
            rest = reader.end()
            self._count(call, rest)
            tail = b"".join(line for line, event in rest if not _usage_only(event)) if strip else b""
            if tail:
                await _chunk(writer, tail)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    def _count(self, call: ProxiedCall, lines: list[tuple[bytes, Any]]) -> None:
        for _, event in lines:
            found_in, found_out = usage_of(event)
            if found_in is not None:
                call.served_input = found_in
            if found_out is not None:
                call.served_output = found_out
            chars = text_chars(event)
            if chars:
                call.chunks += 1
                call.chars += chars
        self._check_budget()

    def _spent_message(self) -> str:
        return (
            f"arbor eval: this run's token budget ({self.budget_tokens}) is spent "
            f"({self.spend().tokens} tokens); no more model calls"
        )


def _usage_only(event: Any) -> bool:
    """An OpenAI chat chunk that carries only the usage (``stream_options.include_usage``)."""
    return isinstance(event, dict) and not event.get("choices") and isinstance(event.get("usage"), dict)


async def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    await writer.drain()


async def _send_error(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "arbor_eval", "code": status}}).encode()
    reason = {429: "Too Many Requests", 502: "Bad Gateway", 400: "Bad Request"}.get(status, "Error")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    """One HTTP/1.1 request (None at a clean end of the connection); ValueError when it is not one."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    if not target.startswith("/"):
        raise ValueError(f"not a path: {target!r}")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    lowered = {k.lower(): v for k, v in headers}
    if "chunked" in lowered.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
            if len(body) > MAX_BODY_BYTES:
                raise ValueError("request body too large")
    else:
        length = int(lowered.get("content-length", "0") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        body = await reader.readexactly(length) if length else b""
    keep = lowered.get("connection", "").lower() != "close" and version.strip() == "HTTP/1.1"
    return _Request(method, target, headers, body, keep)
