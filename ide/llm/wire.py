"""What the router asks of providers and reads back: JSON-schema formats, unreadable calls, retries."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel

from ide.llm.errors import ModelError, status_code
from ide.llm.textcalls import INVALID_JSON

_FORMAT_WORDS = ("format", "response_format", "json_schema", "structured output", "schema")
_DROPPED = frozenset(
    {"RemoteProtocolError", "ReadError", "IncompleteRead", "ChunkedEncodingError", "APIConnectionError"}
)
"""Exception types of a connection dropped mid-answer (httpx, urllib3, requests, openai)."""


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS context of this process's HTTP clients to model servers. httpx builds one for each client
    (certifi's roots read and parsed again, ~4 ms) and a session makes several; this is that same default
    (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured as httpx does), built once."""
    return httpx.create_ssl_context()


def openai_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """``response_format`` asking an OpenAI-compatible server for ``schema``'s JSON, strictly: every
    object closed (``additionalProperties: false``) and every property required, as strict mode wants."""

    def strict(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: strict(value) for key, value in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            return node
        if isinstance(node, list):
            return [strict(item) for item in node]
        return node

    return {
        "type": "json_schema",
        "json_schema": {
            "name": schema.__name__,
            "schema": strict(schema.model_json_schema()),
            "strict": True,
        },
    }


def unreadable_calls(invalid: list[Any], names: Sequence[str]) -> list[Any]:
    """Structured calls whose arguments were not JSON, as calls the tool refuses with the reason (so the
    model reads what was wrong instead of the turn ending with no action)."""
    calls = []
    for index, call in enumerate(invalid):
        if call.get("name") in names:
            raw = call.get("args") or ""
            calls.append(
                {
                    "name": call["name"],
                    "args": {INVALID_JSON: raw if isinstance(raw, str) else json.dumps(raw)},
                    "id": call.get("id") or f"invalid_{index}",
                    "type": "tool_call",
                }
            )
    return calls


def refused_format(err: ModelError) -> bool:
    """A server that does not take the JSON-schema format answers 400 naming it."""
    status = status_code(err.__cause__) if err.__cause__ is not None else None
    text = err.info.message.lower()
    return (status == 400 or "http 400" in text) and any(word in text for word in _FORMAT_WORDS)


def retryable(err: ModelError) -> bool:
    """A dropped connection, a 5xx or a busy server: worth one more try."""
    cause = err.__cause__
    if cause is not None:
        if {cls.__name__ for cls in type(cause).__mro__} & _DROPPED:
            return True
        status = status_code(cause)
        if status is not None and status >= 500:
            return True
    return "server busy" in err.info.message.lower()
