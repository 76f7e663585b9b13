"""A small real HTTP server that speaks enough of Ollama's API for tests (stdlib only, 127.0.0.1).

Usage::

    from tests.support.fake_ollama import FakeOllama

    with FakeOllama(
        responses=[{"content": "Hello there", "thinking": "greet back"},
                   {"tool_calls": [{"name": "read_file", "args": {"path": "a.py"}}]}],
        models={"qwen2.5-coder:7b": {"tools": True, "context_length": 32768}},
    ) as server:
        settings.llm.ollama_host = server.url
        ...
        assert server.chat_bodies[0]["options"]["num_ctx"] == 16384
        assert server.max_in_flight == 1

Endpoints: ``POST /api/chat`` (NDJSON stream like Ollama's, or one JSON object when ``"stream": false``),
``GET /api/tags``, ``POST /api/show`` (``capabilities`` and ``model_info["<arch>.context_length"]``),
``GET /api/version``, ``GET /``, ``POST /api/embed`` (bag-of-words vectors, so texts sharing words are close).

``responses`` are consumed in order, one per /api/chat request, in the scripted-model format
(``content``, ``thinking``, ``tool_calls: [{"name", "args"}]``, ``latency_ms``; ``role`` is ignored), plus
keys only the fake knows:

- ``"chunks": ["<thi", "nk>…"]`` — the exact content pieces to stream (default: 5-character pieces);
- ``"status": 500, "error": "boom"`` — answer with that HTTP status and ``{"error": ...}``;
- ``"garbage": true`` — after the first content piece, send a line that is not JSON;
- ``"stream_error": "text"`` — after the first content piece, send ``{"error": "text"}`` (Ollama does this
  for failures during generation);
- ``"done_reason"``, ``"prompt_eval_count"``, ``"eval_count"`` — override the final chunk's fields.

``responder(body)`` answers a chat from its parsed body (a response dict, or None to take the next of
``responses``): a model simulator (``tests/support/eval_model.py``).

``models`` maps model names to ``{"tools": bool = True, "thinking": bool = False, "context_length": int =
32768, "arch": str = "qwen2", "capabilities": bool = True}`` (``capabilities: False`` imitates an old server
that does not report them). Failures it produces by itself, like Ollama: an unknown model → 404
``model "x" not found, try pulling it first``; tools sent to a model without ``tools`` → 400
``registry.ollama.ai/library/x does not support tools``; ``"think": true`` to a model without ``thinking``
→ 400; no response left → 500.

Recorded: ``requests`` (every request: method, path, parsed JSON body), ``chat_bodies`` (bodies of
/api/chat), ``max_in_flight`` (most /api/chat requests being answered at once). ``wait_for_chats(n)``
blocks until n chat requests have arrived (from async tests: ``await asyncio.to_thread(server.wait_for_chats,
1)``), so tests wait for events, not for time. Delays are capped at 5 s and end early when the server
closes.

It is also a **simulator of how real servers misbehave** (each switch is a real, reported behaviour):

- text tool calls — ``FakeOllama(text_tool_calls=SHAPE)`` or a response's ``"text_tool_calls": SHAPE``
  sends a response's ``tool_calls`` as text in ``content`` with ``tool_calls`` empty, as qwen2.5-coder
  does (ollama/ollama#12174): ``bare``, ``list``, ``fence``, ``qwen`` (``<tool_call>`` tags), ``mistral``
  (``[TOOL_CALLS]``), ``llama`` (``<|python_tag|>``), ``qwen3-coder`` (``<function=…>``); ``"prose"`` puts
  text before the calls, ``"corrupt_arguments": true`` cuts the JSON short (see
  :func:`render_text_tool_calls`);
- silent front truncation at ``num_ctx`` — the prompt is counted with a stand-in tokenizer
  (:func:`count_tokens`: characters / ``chars_per_token`` (default 4) + 4 per message) against
  ``options.num_ctx`` (Ollama's 2,048 when absent, capped by the model's ``context_length``); a longer
  prompt silently loses its FRONT, system prompt and task first, and ``prompt_eval_count`` reports what
  was kept. ``server.seen[i]`` records, for chat request ``i``, the text the model saw and whether it was
  cut;
- constrained output — a response's ``"json": {...}`` is what the model answers when the request carries
  ``format`` (a JSON schema); without ``format`` it answers its free-text ``content``. A model with
  ``"format": False`` rejects ``format`` with HTTP 400;
- token rate — ``"first_token_ms"`` (a model loading) and ``"token_ms"`` (between chunks), per response
  or per model;
- busy — :data:`BUSY` is Ollama's 503 answer; ``FakeOllama(max_pending=N)`` gives it when more than N
  chats are in flight;
- a dropped connection — ``"drop": true`` closes the socket after the first content piece.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.loopback import JsonHandler, LoopbackServer

MAX_DELAY_S = 5.0
BUSY = {"status": 503, "error": "server busy, please try again.  maximum pending requests exceeded"}
"""Ollama's answer when its queue is full (OLLAMA_MAX_QUEUE)."""
DEFAULT_NUM_CTX = 2048
MESSAGE_OVERHEAD = 4
TEXT_SHAPES = ("bare", "list", "fence", "qwen", "mistral", "llama", "qwen3-coder")


def render_text_tool_calls(calls: Iterable[Mapping[str, Any]], shape: str, *, corrupt: bool = False) -> str:
    """Tool calls (``{"name", "args"}``) written out as a model writes them in ``content``."""
    items = [{"name": c["name"], "arguments": c.get("args", {})} for c in calls]

    def dump(value: Any) -> str:
        text = json.dumps(value)
        return text[:-1] if corrupt else text  # a reply cut short: the closing brace is missing

    if shape == "bare":
        return "\n".join(dump(item) for item in items)
    if shape == "list":
        return dump(items)
    if shape == "fence":
        return "```json\n" + (dump(items[0]) if len(items) == 1 else dump(items)) + "\n```"
    if shape == "qwen":
        return "\n".join(f"<tool_call>\n{dump(item)}\n</tool_call>" for item in items)
    if shape == "mistral":
        return "[TOOL_CALLS] " + dump(items)
    if shape == "llama":
        return "<|python_tag|>" + "; ".join(
            dump({"name": item["name"], "parameters": item["arguments"]}) for item in items
        )
    if shape == "qwen3-coder":
        blocks = []
        for item in items:
            params = "".join(
                f"<parameter={key}>\n{value if isinstance(value, str) else json.dumps(value)}\n</parameter>\n"
                for key, value in item["arguments"].items()
            )
            blocks.append(f"<function={item['name']}>\n{params}</function>")
        return "\n".join(blocks)
    raise ValueError(f"unknown text tool-call shape {shape!r}; there are {', '.join(TEXT_SHAPES)}")


def count_tokens(text: str, chars_per_token: float) -> int:
    """The stand-in tokenizer: deterministic, close to real ones on code (3.5–4.5 characters a token)."""
    return -(-len(text) // max(1, int(chars_per_token)))


@dataclass(frozen=True)
class Seen:
    """What the model saw of one chat request: the prompt text it kept, and whether the front was cut."""

    text: str
    tokens: int
    sent_tokens: int
    truncated: bool


PIECE_CHARS = 5
DEFAULT_MODELS: dict[str, dict[str, Any]] = {
    "qwen2.5-coder:7b": {"tools": True, "context_length": 32768},
    "qwen3:8b": {"tools": True, "thinking": True, "context_length": 40960, "arch": "qwen3"},
}
CREATED_AT = "2025-01-01T00:00:00.000000Z"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any


def _full_name(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


class FakeOllama:
    """The fake server; start it with ``with FakeOllama(...) as server`` (or ``start()``/``close()``)."""

    def __init__(
        self,
        responses: Iterable[Mapping[str, Any]] = (),
        models: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        version: str = "0.12.6",
        text_tool_calls: str | None = None,
        max_pending: int | None = None,
        chars_per_token: float = 4.0,
        responder: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.responder = responder
        """Answers a parsed /api/chat body with a response (same format as ``responses``), or None to
        take the next of ``responses``; called on the server's threads."""
        self.responses: list[dict[str, Any]] = [dict(r) for r in responses]
        self.models: dict[str, dict[str, Any]] = {
            name: dict(config) for name, config in (DEFAULT_MODELS if models is None else models).items()
        }
        self.version = version
        self.text_tool_calls = text_tool_calls
        self.max_pending = max_pending
        self.chars_per_token = chars_per_token
        self.seen: list[Seen] = []
        """What the model saw of each chat request, in order (front truncation at num_ctx)."""
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._next_response = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._server: LoopbackServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOllama is not started")
        return self._server.origin

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path == "/api/chat"]

    @property
    def responses_left(self) -> int:
        return len(self.responses) - self._next_response

    def start(self) -> FakeOllama:
        self._server = LoopbackServer(type("Handler", (_Handler,), {"fake": self}), "fake-ollama")
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def find_model(self, name: str) -> tuple[str, dict[str, Any]] | None:
        for known, config in self.models.items():
            if _full_name(known) == _full_name(name):
                return known, config
        return None

    def wait_for_chats(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` /api/chat requests have arrived; False if ``timeout`` s pass first."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.chat_bodies) >= count, timeout)

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._arrived:
            self.requests.append(RecordedRequest(method, path, body))
            self._arrived.notify_all()

    def _take_response(self) -> dict[str, Any] | None:
        with self._lock:
            if self._next_response >= len(self.responses):
                return None
            response = self.responses[self._next_response]
            self._next_response += 1
            return response

    def _enter_chat(self) -> bool:
        """Count a chat in; False when the queue is full (``max_pending``)."""
        with self._lock:
            if self.max_pending is not None and self._in_flight >= self.max_pending:
                return False
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return True

    def _leave_chat(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _delay(self, milliseconds: float) -> None:
        if milliseconds > 0:
            self._closing.wait(min(milliseconds / 1000, MAX_DELAY_S))


class _Handler(JsonHandler):
    fake: FakeOllama
    content_type = "application/json; charset=utf-8"

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send_error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def do_GET(self) -> None:
        self.fake._record("GET", self.path, None)
        if self.path == "/api/tags":
            self._json(200, {"models": [_tag(name, config) for name, config in self.fake.models.items()]})
        elif self.path == "/api/version":
            self._json(200, {"version": self.fake.version})
        elif self.path == "/":
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._send_error(404, "404 page not found")

    def do_POST(self) -> None:
        body = self._read_body()
        self.fake._record("POST", self.path, body)
        if not isinstance(body, dict):
            self._send_error(400, "invalid request body")
        elif self.path == "/api/show":
            self._show(body)
        elif self.path == "/api/chat":
            if not self.fake._enter_chat():
                self._send_error(BUSY["status"], BUSY["error"])
                return
            try:
                self._chat(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (cancelled); nothing to answer
            finally:
                self.fake._leave_chat()
        elif self.path == "/api/embed":
            self._embed(body)
        else:
            self._send_error(404, "404 page not found")

    def _embed(self, body: dict[str, Any]) -> None:
        """Bag-of-words vectors (a word's hash picks its dimension): texts sharing words are close."""
        texts = body.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        vectors = []
        for text in texts:
            vector = [0.0] * 64
            for word in re.findall(r"[a-z0-9]+", str(text).lower()):
                vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
            vectors.append(vector)
        self._json(200, {"model": body.get("model"), "embeddings": vectors})

    def _not_found(self, name: str) -> None:
        self._send_error(404, f'model "{name}" not found, try pulling it first')

    def _show(self, body: dict[str, Any]) -> None:
        name = str(body.get("model") or body.get("name") or "")
        found = self.fake.find_model(name)
        if found is None:
            self._not_found(name)
            return
        _, config = found
        arch = config.get("arch", "qwen2")
        payload: dict[str, Any] = {
            "modelfile": f"FROM {name}",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": arch, "parameter_size": "7.6B"},
            "model_info": {
                "general.architecture": arch,
                f"{arch}.context_length": config.get("context_length", 32768),
            },
        }
        if config.get("capabilities", True):
            capabilities = ["completion"]
            if config.get("tools", True):
                capabilities.append("tools")
            if config.get("thinking", False):
                capabilities.append("thinking")
            payload["capabilities"] = capabilities
        self._json(200, payload)

    def _chat(self, body: dict[str, Any]) -> None:
        name = str(body.get("model") or "")
        found = self.fake.find_model(name)
        if found is None:
            self._not_found(name)
            return
        model, config = found
        if body.get("tools") and not config.get("tools", True):
            self._send_error(400, f"registry.ollama.ai/library/{model} does not support tools")
            return
        if body.get("think") is True and not config.get("thinking", False):
            self._send_error(400, f'"{model}" does not support thinking')
            return
        if body.get("format") and config.get("format") is False:
            self._send_error(400, f"invalid format: {model} does not support a JSON schema format")
            return
        seen = self._see(body, config)
        hook = self.fake.responder
        answer = hook(body) if hook is not None else None
        response = dict(answer) if answer is not None else self.fake._take_response()
        if response is None:
            self._send_error(500, "fake ollama: no scripted response left")
            return
        self.fake._delay(float(response.get("latency_ms") or 0))
        if "status" in response:
            self._send_error(int(response["status"]), str(response.get("error", "fake failure")))
            return
        response = self._shape(response, body, config)
        final = _final_fields(model, body, response)
        if "prompt_eval_count" not in response:
            final["prompt_eval_count"] = seen.tokens
        if body.get("stream", True) is False:
            message: dict[str, Any] = {"role": "assistant", "content": "".join(_content_pieces(response))}
            if response.get("thinking") and body.get("think") is not False:
                message["thinking"] = response["thinking"]
            if response.get("tool_calls"):
                message["tool_calls"] = _tool_calls(response)
            self._json(200, {**final, "message": message})
            return
        self._stream(model, body, response, final)

    def _see(self, body: dict[str, Any], config: Mapping[str, Any]) -> Seen:
        """What the model sees of the prompt: Ollama cuts an over-long one from the front, silently."""
        options = body.get("options") or {}
        window = int(options.get("num_ctx") or DEFAULT_NUM_CTX)
        window = min(window, int(config.get("context_length", window)))
        cpt = float(config.get("chars_per_token", self.fake.chars_per_token))
        parts = []
        for message in body.get("messages") or []:
            text = str(message.get("content") or "")
            if message.get("tool_calls"):
                text += json.dumps(message["tool_calls"])
            parts.append(f"<|{message.get('role', 'user')}|>\n{text}\n")
        prompt = "".join(parts)
        sent = count_tokens(prompt, cpt) + MESSAGE_OVERHEAD * len(parts)
        if sent <= window:
            seen = Seen(prompt, sent, sent, False)
        else:
            keep = int(window * cpt) - MESSAGE_OVERHEAD * len(parts)
            seen = Seen(prompt[-max(keep, 0) :] if keep > 0 else "", window, sent, True)
        with self.fake._lock:
            self.fake.seen.append(seen)
        return seen

    def _shape(
        self, response: dict[str, Any], body: dict[str, Any], config: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The scripted answer as this model would give it: constrained JSON, or calls written as text."""
        response = dict(response)
        for key in ("first_token_ms", "token_ms"):
            if key not in response and key in config:
                response[key] = config[key]
        if "json" in response and body.get("format"):
            response["content"] = json.dumps(response["json"])
        shape = response.get("text_tool_calls") or self.fake.text_tool_calls
        if shape and response.get("tool_calls") and body.get("tools"):
            text = render_text_tool_calls(
                response["tool_calls"], shape, corrupt=bool(response.get("corrupt_arguments"))
            )
            prose = str(response.get("prose") or "")
            response["content"] = f"{prose}\n{text}" if prose else text
            response["tool_calls"] = []
        return response

    def _stream(
        self, model: str, body: dict[str, Any], response: dict[str, Any], final: dict[str, Any]
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def message(**fields: Any) -> None:
            line = {
                "model": model,
                "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": "", **fields},
                "done": False,
            }
            self._write_line(json.dumps(line))

        self.fake._delay(float(response.get("first_token_ms") or 0))
        gap = float(response.get("token_ms") or 0)
        thinking = response.get("thinking")
        if thinking and body.get("think") is not False:
            for piece in _split(thinking):
                message(thinking=piece)
                self.fake._delay(gap)
        pieces = _content_pieces(response)
        for index, piece in enumerate(pieces):
            message(content=piece)
            if index == 0 and response.get("drop"):
                # The connection dies mid-answer: no end of stream, no final chunk.
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.fake._delay(gap)
            if index == 0 and response.get("garbage"):
                self._write_line("<html>this is not json</html>")
                self._end_stream()
                return
            if index == 0 and response.get("stream_error"):
                self._write_line(json.dumps({"error": response["stream_error"]}))
                self._end_stream()
                return
        if response.get("tool_calls"):
            message(tool_calls=_tool_calls(response))
        self._write_line(json.dumps({**final, "message": {"role": "assistant", "content": ""}}))
        self._end_stream()

    def _write_line(self, line: str) -> None:
        data = (line + "\n").encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _split(text: str) -> list[str]:
    return [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)]


def _content_pieces(response: Mapping[str, Any]) -> list[str]:
    if "chunks" in response:
        return [str(piece) for piece in response["chunks"]]
    return _split(str(response.get("content") or ""))


def _tool_calls(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"function": {"name": call["name"], "arguments": call.get("args", {})}}
        for call in response.get("tool_calls") or []
    ]


def _final_fields(model: str, body: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
    output = len("".join(_content_pieces(response)) + str(response.get("thinking") or "")) // 4
    return {
        "model": model,
        "created_at": CREATED_AT,
        "done": True,
        "done_reason": response.get("done_reason", "stop"),
        "total_duration": 1_000_000,
        "load_duration": 1_000,
        "prompt_eval_count": response.get("prompt_eval_count", max(prompt, 1)),
        "prompt_eval_duration": 1_000,
        "eval_count": response.get("eval_count", max(output, 1)),
        "eval_duration": 1_000,
    }


def _tag(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    full = _full_name(name)
    arch = config.get("arch", "qwen2")
    return {
        "name": full,
        "model": full,
        "modified_at": CREATED_AT,
        "size": 4_683_087_332,
        "digest": "0" * 64,
        "details": {
            "format": "gguf",
            "family": arch,
            "parameter_size": "7.6B",
            "quantization_level": "Q4_K_M",
        },
    }
