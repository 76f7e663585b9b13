"""Limits of what the backend takes in, sends and holds: an over-long JSON line kills ACP stdio readers, a
message the SDK cannot take must be answered before it reaches it, and memory freed must go back."""

from __future__ import annotations

import ctypes
import json
import math
import sys
from typing import Any

RAW_IO_CAP = 4000
"""Bytes of a tool's input or output sent as rawInput/rawOutput."""

DIFF_INLINE_CAP = 256_000
"""Characters of old + new text sent inline as diff content; larger files are reviewed by hunks only."""

MAX_NESTING = 64
"""Levels of arrays and objects a message may nest. ACP's own messages use fewer than ten; deeper ones
would overflow the recursion of every later step (validation, the error echoing them, the answer's
encoding), which then fails with a traceback instead of an answer."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class BadMessage(Exception):
    """A line the backend answers itself, with JSON-RPC ``code`` and the request's id when it has one."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _nested_deeper(value: Any, limit: int) -> bool:
    """True when ``value`` nests arrays and objects more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _valid_id(value: Any) -> bool:
    """JSON-RPC ids are strings, numbers or null (finite numbers: JSON cannot carry the rest back)."""
    if value is None or isinstance(value, str):
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_message(line: bytes) -> None:
    """Raise :class:`BadMessage` unless ``line`` is one JSON-RPC 2.0 request, notification or response
    that the SDK can take: strict JSON (no NaN, no infinite numbers), nested at most MAX_NESTING levels,
    an id of a JSON-RPC type, a string method, structured params."""
    try:
        message = json.loads(line, parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise BadMessage(PARSE_ERROR, "Parse error: nested too deeply to read") from None
    except ValueError as exc:
        raise BadMessage(PARSE_ERROR, f"Parse error: not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise BadMessage(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
    request_id = message.get("id")
    if not _valid_id(request_id):
        raise BadMessage(INVALID_REQUEST, "Invalid Request: the id must be a string, a number or null")
    if message.get("jsonrpc") != "2.0":
        raise BadMessage(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object", request_id)
    if "method" in message:
        if not isinstance(message["method"], str):
            raise BadMessage(INVALID_REQUEST, "Invalid Request: the method must be a string", request_id)
        if "params" in message and not isinstance(message["params"], (dict, list)):
            raise BadMessage(INVALID_REQUEST, "Invalid Request: params must be an object", request_id)
    elif "id" not in message:
        raise BadMessage(INVALID_REQUEST, "Invalid Request: a message needs a method or an id")
    if _nested_deeper(message, MAX_NESTING):
        raise BadMessage(
            INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_NESTING} levels", request_id
        )


PROMPT_CAP = 512_000
"""Characters of a prompt (its text and embedded files) a turn takes: more than the largest model window
holds. The rest would ride along in every later turn of the conversation and in its replay on
``session/load``."""


def cap_prompt(text: str) -> tuple[str, str | None]:
    """``text`` with its middle cut out when it is longer than PROMPT_CAP, and a note saying so."""
    if len(text) <= PROMPT_CAP:
        return text, None
    head, tail = PROMPT_CAP * 2 // 3, PROMPT_CAP // 3
    removed = len(text) - head - tail
    marker = f"\n[… {removed} characters of the prompt cut: a prompt holds at most {PROMPT_CAP} …]\n"
    note = (
        f"The prompt has {len(text)} characters; I kept its first {head} and last {tail} "
        f"(a turn takes at most {PROMPT_CAP}, more than a model's window). "
        "Attach large files by path instead."
    )
    return text[:head] + marker + text[-tail:], note


LARGE_ALLOCATION = 128 * 1024
"""Bytes from which glibc maps an allocation on its own, so that freeing it returns it to the system."""
_M_MMAP_THRESHOLD = -3


def return_freed_memory() -> None:
    """Keep glibc from holding on to large freed buffers (Linux; elsewhere nothing to do).

    glibc raises its mmap threshold each time a large buffer is freed, so later buffers of that size (a
    conversation's checkpoint read every turn, a big message) come from the heap and stay resident once
    freed: over a long session the resident memory only grows. A fixed threshold keeps it flat.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return
    mallopt(_M_MMAP_THRESHOLD, LARGE_ALLOCATION)
