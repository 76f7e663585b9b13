"""An ACP peer that looks like Arbor's backend but leaves some requests unanswered, spoken as raw JSON lines.

``SILENT_METHODS`` (comma-separated wire names) are never answered until ``_arbor/test/release`` comes;
then each held one is answered (late) before the release itself, so a client that has the release's answer
has read the late ones too. ``_arbor/external/write`` is answered as ``arbor acp`` answers a line over its
50 MB limit: an error with a null id, which matches no request. Other ``_arbor/*`` requests answer
``{"ok": true}``, ``session/set_mode`` an empty result; unknown ones "method not found".
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

EXTENSIONS = [
    "arbor/test/slow",
    "arbor/test/quick",
    "arbor/test/release",
    "arbor/external/open",
    "arbor/external/write",
    "arbor/review/decide",
    "arbor/review/apply",
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def result_of(method: str, late: bool = False) -> Any:
    if method == "initialize":
        meta = {"version": "0", "model": "none", "architectures": [], "extensions": EXTENSIONS}
        return {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False, "_meta": {"arbor": meta}},
            "agentInfo": {"name": "silent", "version": "1"},
        }
    if method == "session/new":
        return {"sessionId": "silent-session"}
    if method.startswith("session/"):
        return {}
    if method == "_arbor/external/open":
        return {"session_id": "review-session"}
    return {"ok": True, "late": late}


def main() -> None:
    silent = set(filter(None, os.environ.get("SILENT_METHODS", "").split(",")))
    held: list[tuple[Any, str]] = []
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is None or "id" not in message:
            continue  # a response or a notification
        if method == "_arbor/external/write":
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "message too long"}})
        elif method in silent:
            held.append((request_id, method))
        elif method == "_arbor/test/release":
            for late_id, late_method in held:
                answer(late_id, result_of(late_method, late=True))
            held.clear()
            answer(request_id, {"ok": True, "late": False})
        elif method in ("initialize", "session/new", "session/set_mode") or method.startswith("_arbor/"):
            answer(request_id, result_of(method))
        else:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )


if __name__ == "__main__":
    main()
