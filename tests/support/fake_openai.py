"""A small real OpenAI-compatible server for tests (stdlib only, 127.0.0.1), with the quirks of the local
servers people point Arbor at (llama.cpp, vLLM, LM Studio, oMLX): tool calls written as text, a
``response_format`` some refuse, over-long prompts refused, 503 busy, a stream cut short.

Usage::

    with FakeOpenAI(responses=[{"content": "hi"}]) as server:
        settings.llm.openai_base_url = server.url   # ends in /v1

Responses use the scripted-model format of :mod:`tests.support.fake_ollama` (``content``, ``tool_calls``
``[{"name", "args"}]``, ``status``/``error``, ``json``, ``text_tool_calls``, ``prose``,
``corrupt_arguments``, ``first_token_ms``, ``token_ms`` (between content pieces), ``drop``) plus
``"bad_arguments": true``: structured tool calls whose ``function.arguments`` is not valid JSON.
Server options: ``text_tool_calls=SHAPE``,
``reject_response_format=True`` (HTTP 400, as servers without structured output answer),
``context_length`` (a longer prompt is refused with HTTP 400, as OpenAI-compatible servers do — they do
not truncate), ``says_window`` (``"llama-server"``: ``/props`` and ``meta.n_ctx`` in ``/v1/models``;
``"vllm"``: ``max_model_len`` in ``/v1/models``; ``"lmstudio"``: ``/api/v0/models/<id>``; None: nowhere,
as many servers). A ``max_completion_tokens`` (or ``max_tokens``) cap cuts the answer with
``finish_reason`` "length". ``side(body)`` may answer a request itself (a mapping in the same format)
before the script is consulted: a real agent's side calls (a title, a next-speaker check) then leave the
script alone. ``/v1/responses`` (the Responses API, streamed only, as Codex uses it) answers from the same
script: ``content`` as a message, ``tool_calls`` as ``function_call`` items. Recorded: ``bodies`` of
/v1/chat/completions (``response_bodies`` of /v1/responses), ``gets`` (paths asked with GET),
``closed_early`` (streams the client stopped reading), ``usages`` (each answer's token counts),
``authorizations`` (each POST's ``Authorization`` header: the key the client sent).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tests.support.fake_ollama import MAX_DELAY_S, count_tokens, render_text_tool_calls
from tests.support.loopback import JsonHandler, LoopbackServer

PIECE_CHARS = 5


class FakeOpenAI:
    def __init__(
        self,
        responses: Iterable[Mapping[str, Any]] = (),
        *,
        model: str = "local-model",
        text_tool_calls: str | None = None,
        reject_response_format: bool = False,
        context_length: int = 32768,
        says_window: str | None = None,
        side: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.responses = [dict(r) for r in responses]
        self.side = side
        self.model = model
        self.text_tool_calls = text_tool_calls
        self.reject_response_format = reject_response_format
        self.context_length = context_length
        self.says_window = says_window
        self.gets: list[str] = []
        self.closed_early = 0
        self.bodies: list[dict[str, Any]] = []
        self.response_bodies: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of each POST, in order (None where there was none)."""
        self.usages: list[tuple[int, int]] = []
        """(input, output) tokens of each answer's usage, as the server computed it (sent or not)."""
        self._next = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: LoopbackServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"{self._server.origin}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._server = LoopbackServer(type("Handler", (_Handler,), {"fake": self}), "fake-openai")
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.stop()

    def take(self) -> dict[str, Any] | None:
        with self._lock:
            if self._next >= len(self.responses):
                return None
            self._next += 1
            return self.responses[self._next - 1]

    def delay(self, milliseconds: float) -> None:
        if milliseconds > 0:
            self._closing.wait(min(milliseconds / 1000, MAX_DELAY_S))


class _Handler(JsonHandler):
    fake: FakeOpenAI
    gone = False
    """The client stopped reading this response (a cancel, a loop cut): the rest is not sent."""

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})

    def do_GET(self) -> None:
        fake, path = self.fake, self.path.rstrip("/")
        fake.gets.append(path)
        says, window = fake.says_window, fake.context_length
        if path == "/v1/models":
            entry: dict[str, Any] = {"id": fake.model, "object": "model"}
            if says == "vllm":
                entry["max_model_len"] = window
            elif says == "llama-server":
                entry["meta"] = {"n_ctx": window, "n_ctx_train": 4 * window}
            self._json(200, {"object": "list", "data": [entry]})
        elif path == "/props" and says == "llama-server":
            self._json(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
        elif path == f"/api/v0/models/{fake.model}" and says == "lmstudio":
            loaded = {"id": fake.model, "max_context_length": 4 * window, "loaded_context_length": window}
            self._json(200, loaded)
        else:
            self._error(404, "not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.fake._lock:
            self.fake.authorizations.append(self.headers.get("Authorization"))
        if self.path.rstrip("/") == "/v1/responses":
            self._responses(body)
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, "not found")
            return
        with self.fake._lock:
            self.fake.bodies.append(body)
        if body.get("response_format") and self.fake.reject_response_format:
            self._error(400, "response_format is not supported by this server")
            return
        prompt = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
        tokens = count_tokens(prompt, 4.0)
        if tokens > self.fake.context_length:
            self._error(
                400,
                f"the request exceeds the available context size ({tokens} tokens, "
                f"context length {self.fake.context_length}); try increasing the context size",
            )
            return
        answered = self.fake.side(body) if self.fake.side is not None else None
        response = dict(answered) if answered is not None else self.fake.take()
        if response is None:
            self._error(500, "fake openai: no scripted response left")
            return
        if "status" in response:
            self._error(int(response["status"]), str(response.get("error", "fake failure")))
            return
        response = dict(response)
        if "json" in response and body.get("response_format"):
            response["content"] = json.dumps(response["json"])
        shape = response.get("text_tool_calls") or self.fake.text_tool_calls
        calls = list(response.get("tool_calls") or [])
        if shape and calls and body.get("tools"):
            text = render_text_tool_calls(calls, shape, corrupt=bool(response.get("corrupt_arguments")))
            prose = str(response.get("prose") or "")
            response["content"] = f"{prose}\n{text}" if prose else text
            calls = []
        structured = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": "{not json"
                    if response.get("bad_arguments")
                    else json.dumps(call.get("args", {})),
                },
            }
            for index, call in enumerate(calls)
        ]
        self.fake.delay(float(response.get("first_token_ms") or 0))
        content = str(response.get("content") or "")
        finish_reason = "tool_calls" if structured else "stop"
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if cap and len(content) > 4 * int(cap):  # cut at the cap, as servers do (4 characters a token)
            content, finish_reason = content[: 4 * int(cap)], "length"
        usage = {"prompt_tokens": tokens, "completion_tokens": max(1, len(content) // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        with self.fake._lock:
            self.fake.usages.append((usage["prompt_tokens"], usage["completion_tokens"]))
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if structured:
                message["tool_calls"] = structured
            self._json(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": self.fake.model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": finish_reason,
                        }
                    ],
                    "usage": usage,
                },
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(
            delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None
        ) -> None:
            chunk = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": self.fake.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **(extra or {}),
            }
            self._write(f"data: {json.dumps(chunk)}\n\n")

        event({"role": "assistant", "content": ""})
        pieces = [content[i : i + PIECE_CHARS] for i in range(0, len(content), PIECE_CHARS)]
        gap = float(response.get("token_ms") or 0)
        for index, piece in enumerate(pieces):
            if self.gone or self.fake._closing.is_set():
                return  # the client stopped reading (a cancel): a real server stops generating too
            if index and gap:
                self.fake.delay(gap)
            event({"content": piece})
            if index == 0 and response.get("drop"):
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
        for index, call in enumerate(structured):
            arguments = call["function"]["arguments"]
            event(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            for start in range(0, len(arguments), 8):
                event(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": arguments[start : start + 8]}}
                        ]
                    }
                )
        event({}, finish_reason)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": self.fake.model,
                "choices": [],
                "usage": usage,
            }
            self._write(f"data: {json.dumps(chunk)}\n\n")
        self._write("data: [DONE]\n\n")
        if not self.gone:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _write(self, text: str) -> None:
        if self.gone:
            return
        data = text.encode()
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.gone = True
            with self.fake._lock:
                self.fake.closed_early += 1

    def _responses(self, body: dict[str, Any]) -> None:
        """A streamed Responses API answer: the events Codex reads, in the order OpenAI sends them."""
        fake = self.fake
        with fake._lock:
            fake.response_bodies.append(body)
            serial = len(fake.response_bodies)  # ids unique over the server's life, as OpenAI's are
        if not body.get("stream"):
            self._error(400, "fake openai: /v1/responses is served streamed only")
            return
        answered = fake.side(body) if fake.side is not None else None
        response = dict(answered) if answered is not None else fake.take()
        if response is None:
            self._error(500, "fake openai: no scripted response left")
            return
        if "status" in response:
            self._error(int(response["status"]), str(response.get("error", "fake failure")))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(kind: str, **fields: Any) -> None:
            self._write(f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n")

        event(
            "response.created",
            response={"id": f"resp_{serial}", "object": "response", "status": "in_progress"},
        )
        items: list[dict[str, Any]] = []
        content = str(response.get("content") or "")
        if content:
            message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress"}
            event("response.output_item.added", output_index=0, item={**message, "content": []})
            for start in range(0, len(content), PIECE_CHARS):
                piece = content[start : start + PIECE_CHARS]
                event(
                    "response.output_text.delta",
                    item_id="msg_1",
                    output_index=0,
                    content_index=0,
                    delta=piece,
                )
            text = [{"type": "output_text", "text": content, "annotations": []}]
            items.append({**message, "status": "completed", "content": text})
            event("response.output_item.done", output_index=0, item=items[-1])
        for index, call in enumerate(response.get("tool_calls") or []):
            item = {
                "type": "function_call",
                "id": f"fc_{serial}_{index}",
                "call_id": f"call_{serial}_{index}",
                "name": call["name"],
                "arguments": json.dumps(call.get("args", {})),
                "status": "completed",
            }
            items.append(item)
            event("response.output_item.done", output_index=len(items) - 1, item=item)
        tokens = count_tokens(json.dumps(body.get("input") or []), 4.0)
        usage = {"input_tokens": tokens, "output_tokens": max(1, len(content) // 4)}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        with self.fake._lock:
            self.fake.usages.append((usage["input_tokens"], usage["output_tokens"]))
        done = {
            "id": f"resp_{serial}",
            "object": "response",
            "status": "completed",
            "output": items,
            "usage": usage,
        }
        event("response.completed", response=done)
        if not self.gone:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
