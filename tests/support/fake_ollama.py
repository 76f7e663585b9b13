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
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_DELAY_S = 5.0
PIECE_CHARS = 5
DEFAULT_MODELS: dict[str, dict[str, Any]] = {"qwen2.5-coder:7b": {"tools": True, "context_length": 32768}}
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
    ) -> None:
        self.responses: list[dict[str, Any]] = [dict(r) for r in responses]
        self.models: dict[str, dict[str, Any]] = {
            name: dict(config) for name, config in (DEFAULT_MODELS if models is None else models).items()
        }
        self.version = version
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._next_response = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOllama is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path == "/api/chat"]

    @property
    def responses_left(self) -> int:
        return len(self.responses) - self._next_response

    def start(self) -> FakeOllama:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll interval keeps close() quick (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-ollama", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

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

    def _enter_chat(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave_chat(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _delay(self, milliseconds: float) -> None:
        if milliseconds > 0:
            self._closing.wait(min(milliseconds / 1000, MAX_DELAY_S))


class _QuietServer(ThreadingHTTPServer):
    """Clients hanging up mid-stream (timeouts, cancelled turns) are expected here: no traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOllama
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": message})

    def do_GET(self) -> None:
        self.fake._record("GET", self.path, None)
        if self.path == "/api/tags":
            self._send_json(
                200, {"models": [_tag(name, config) for name, config in self.fake.models.items()]}
            )
        elif self.path == "/api/version":
            self._send_json(200, {"version": self.fake.version})
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
            self.fake._enter_chat()
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
        self._send_json(200, {"model": body.get("model"), "embeddings": vectors})

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
        self._send_json(200, payload)

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
        response = self.fake._take_response()
        if response is None:
            self._send_error(500, "fake ollama: no scripted response left")
            return
        self.fake._delay(float(response.get("latency_ms") or 0))
        if "status" in response:
            self._send_error(int(response["status"]), str(response.get("error", "fake failure")))
            return
        final = _final_fields(model, body, response)
        if body.get("stream", True) is False:
            message: dict[str, Any] = {"role": "assistant", "content": "".join(_content_pieces(response))}
            if response.get("thinking") and body.get("think") is not False:
                message["thinking"] = response["thinking"]
            if response.get("tool_calls"):
                message["tool_calls"] = _tool_calls(response)
            self._send_json(200, {**final, "message": message})
            return
        self._stream(model, body, response, final)

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

        thinking = response.get("thinking")
        if thinking and body.get("think") is not False:
            for piece in _split(thinking):
                message(thinking=piece)
        pieces = _content_pieces(response)
        for index, piece in enumerate(pieces):
            message(content=piece)
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
