"""A small real server speaking the Gemini API's ``generateContent`` family for tests (stdlib only,
127.0.0.1), as Gemini CLI reaches it with ``GOOGLE_GEMINI_BASE_URL``.

Usage::

    with FakeGemini(side=script) as server:
        env = {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "test-key"}

Endpoints, as ``generativelanguage.googleapis.com`` answers them: ``POST
/v1beta/models/{model}:streamGenerateContent?alt=sse`` (server-sent events, one
``GenerateContentResponse`` per ``data:`` line, ``finishReason`` and ``usageMetadata`` on the last),
``POST …:generateContent`` (one JSON ``GenerateContentResponse``) and ``POST …:countTokens``
(``{"totalTokens": N}``). Anything else is a 404 in the API's error shape
(``{"error": {"code", "message", "status"}}``); a missing ``x-goog-api-key`` is a 403 as the real API says it.

Answers come from ``side(request)`` (a :class:`GeminiRequest`: model, method, parsed body), else from
``responses`` in order, in the scripted-model format of the other fakes: ``content`` (text, streamed in
pieces), ``tool_calls: [{"name", "args"}]`` (``functionCall`` parts), ``json`` (the text of a request
with ``responseMimeType: application/json``), ``status``/``error`` (an HTTP error). With neither, a
request is answered 500: a real agent retries that (Gemini CLI backs off for over 90 s), so a script
should answer every call. Recorded: ``requests`` (every generate request, in order), ``gets`` and
``unknown`` (paths asked that the API has no answer for here).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tests.support.fake_ollama import count_tokens
from tests.support.loopback import JsonHandler, LoopbackServer

PIECE_CHARS = 8
API_VERSION = "v1beta"
METHODS = ("streamGenerateContent", "generateContent", "countTokens")
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}
"""The API's ``error.status`` for an HTTP status (google.rpc codes)."""
UNREGISTERED = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key "
    "or other form of API consumer identity to call this API."
)
"""The API's 403 message for a request without a key."""


@dataclass(frozen=True)
class GeminiRequest:
    """One ``POST /v1beta/models/{model}:{method}`` the fake was sent."""

    model: str
    method: str
    body: dict[str, Any]

    @property
    def tools(self) -> list[str]:
        """The names of the function declarations offered to the model."""
        return [
            declaration["name"]
            for tool in self.body.get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
        ]

    @property
    def wants_json(self) -> bool:
        """A structured answer was asked (``responseMimeType: application/json``): a side call."""
        config = self.body.get("generationConfig") or {}
        return config.get("responseMimeType") == "application/json"


Answer = Mapping[str, Any]


class FakeGemini:
    def __init__(
        self,
        responses: Iterable[Answer] = (),
        *,
        side: Callable[[GeminiRequest], Answer | None] | None = None,
    ) -> None:
        self.responses = [dict(r) for r in responses]
        self.side = side
        self.requests: list[GeminiRequest] = []
        self.gets: list[str] = []
        self.unknown: list[str] = []
        self._next = 0
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    @property
    def url(self) -> str:
        """The base URL (no API version: the client adds ``/v1beta``)."""
        assert self._server is not None
        return self._server.origin

    def __enter__(self) -> FakeGemini:
        self._server = LoopbackServer(type("Handler", (_Handler,), {"fake": self}), "fake-gemini")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.stop()

    def answer(self, request: GeminiRequest) -> dict[str, Any] | None:
        with self._lock:
            self.requests.append(request)
        answered = self.side(request) if self.side is not None else None
        if answered is not None:
            return dict(answered)
        with self._lock:
            if self._next >= len(self.responses):
                return None
            self._next += 1
            return self.responses[self._next - 1]


def candidate_parts(answer: Answer, request: GeminiRequest) -> list[dict[str, Any]]:
    """The ``parts`` of the model's content for ``answer``: text, then one ``functionCall`` per call."""
    parts: list[dict[str, Any]] = []
    text = json.dumps(answer["json"]) if "json" in answer and request.wants_json else answer.get("content")
    if text:
        parts.append({"text": str(text)})
    for call in answer.get("tool_calls") or []:
        parts.append({"functionCall": {"name": call["name"], "args": dict(call.get("args") or {})}})
    return parts


def usage(request: GeminiRequest, parts: list[dict[str, Any]]) -> dict[str, int]:
    prompt = count_tokens(json.dumps(request.body.get("contents") or []), 4.0)
    answer = max(1, count_tokens(json.dumps(parts), 4.0))
    return {"promptTokenCount": prompt, "candidatesTokenCount": answer, "totalTokenCount": prompt + answer}


class _Handler(JsonHandler):
    fake: FakeGemini
    content_type = "application/json; charset=UTF-8"
    gone = False

    def _error(self, status: int, message: str) -> None:
        error = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "INTERNAL")}
        self._json(status, {"error": error})

    def do_GET(self) -> None:
        with self.fake._lock:
            self.fake.gets.append(self.path)
        self._error(404, f"fake gemini: nothing at GET {urlsplit(self.path).path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = urlsplit(self.path).path
        prefix = f"/{API_VERSION}/models/"
        model, _, method = path.removeprefix(prefix).partition(":")
        if not path.startswith(prefix) or method not in METHODS:
            with self.fake._lock:
                self.fake.unknown.append(self.path)
            self._error(404, f"fake gemini: nothing at POST {path}")
            return
        if not self.headers.get("x-goog-api-key"):
            self._error(403, UNREGISTERED)
            return
        request = GeminiRequest(model=model, method=method, body=body)
        if method == "countTokens":
            contents = body.get("contents") or (body.get("generateContentRequest") or {}).get("contents")
            self._json(200, {"totalTokens": count_tokens(json.dumps(contents or []), 4.0)})
            return
        answer = self.fake.answer(request)
        if answer is None:
            self._error(500, "fake gemini: no scripted response left")
            return
        if "status" in answer:
            self._error(int(answer["status"]), str(answer.get("error", "fake failure")))
            return
        parts = candidate_parts(answer, request)
        counted = usage(request, parts)
        if method == "generateContent":
            self._json(200, self._response(model, parts, counted, finished=True))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # Text in pieces, as the API streams it; each call whole (the API never splits a functionCall).
        pieces: list[dict[str, Any]] = []
        for part in parts:
            text = part.get("text")
            if text is None:
                pieces.append(part)
            else:
                pieces += [{"text": text[i : i + PIECE_CHARS]} for i in range(0, len(text), PIECE_CHARS)]
        for index, piece in enumerate(pieces or [{"text": ""}]):
            last = index == max(len(pieces), 1) - 1
            self._event(self._response(model, [piece], counted, finished=last))
        self._chunk(b"")  # the chunked body's end

    def _response(
        self, model: str, parts: list[dict[str, Any]], counted: dict[str, int], *, finished: bool
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        response: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": "fake-1"}
        if finished:
            candidate["finishReason"] = "STOP"
            response["usageMetadata"] = counted
        else:
            response["usageMetadata"] = {"promptTokenCount": counted["promptTokenCount"]}
        return response

    def _event(self, payload: dict[str, Any]) -> None:
        self._chunk(f"data: {json.dumps(payload)}\r\n\r\n".encode())

    def _chunk(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.gone = True  # the client stopped reading (a cancel): the rest is not sent
