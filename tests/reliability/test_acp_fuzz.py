"""Ten thousand generated ACP messages against one real ``arbor acp``: valid requests, mutated params,
wrong types, invalid JSON, wrong versions, unknown methods, huge ids, depth bombs, oversized lines,
notifications and stray responses. The backend stays alive, answers every request that carries an id
exactly once, keeps its memory, logs no traceback, and exits when its input closes.

Every message is made by a seeded generator that also says what must come back: an answer to its id,
one error with a null id (the backend could not read an id), or nothing (a notification or a response).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.rawwire import RawWire, id_key, open_fds, rss_kib

SEED = 2027
MESSAGES = 10_000
BATCH = 250
"""Messages per write: the writes go on while the reader thread takes the answers."""
ANSWER_TIMEOUT_S = 40.0
RSS_GROWTH_BOUND_KIB = 50 * 1024
"""Growth of the backend's resident memory over the run, measured after a warm-up."""
FDS_GROWTH_BOUND = 5

NULL = "null"
"""Expected: one error answer whose id is null (the message carried no id the backend could read)."""
NONE = "none"
"""Expected: no answer (a notification, a response to nothing, a blank line)."""


@dataclass
class Plan:
    """The messages to send and what each must bring back."""

    lines: list[bytes] = field(default_factory=list)
    expected_ids: list[Any] = field(default_factory=list)
    nulls: int = 0
    silent: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, data: bytes, expect: Any) -> None:
        assert b"\n" not in data
        self.lines.append(data)
        self.kinds[kind] += 1
        if expect == NULL:
            self.nulls += 1
        elif expect == NONE:
            self.silent += 1
        else:
            self.expected_ids.append(id_key(expect))


class Generator:
    """Seeded messages over the sessions and workspace of a running backend."""

    def __init__(self, seed: int, workspace: Path, sessions: list[str], first_id: int = 1_000_000) -> None:
        self.rng = random.Random(seed)
        self.workspace = workspace
        self.sessions = sessions
        self._next = first_id
        self.prompts_left = 40
        self.sessions_left = 25

    def new_id(self) -> Any:
        """A fresh id of a JSON-RPC type: mostly ints, some strings, some fractional numbers."""
        self._next += 1
        roll = self.rng.random()
        if roll < 0.7:
            return self._next
        if roll < 0.9:
            return f"s-{self._next}"
        return self._next + 0.5

    def huge_id(self) -> Any:
        self._next += 1
        roll = self.rng.random()
        if roll < 0.4:
            return 10 ** self.rng.randint(19, 4000) + self._next
        if roll < 0.6:
            return -(10 ** self.rng.randint(19, 300)) - self._next
        return f"h-{self._next}-" + "x" * self.rng.randint(1_000, 100_000)

    def session(self) -> str:
        return self.rng.choice(self.sessions)

    def valid(self) -> tuple[str, dict[str, Any]]:
        """A well-formed request the backend can serve (its answer may still be an error)."""
        cwd = str(self.workspace)
        choices: list[Callable[[], tuple[str, dict[str, Any]]]] = [
            lambda: ("initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
            lambda: ("session/list", {"cwd": cwd}),
            lambda: ("session/set_mode", {"sessionId": self.session(), "modeId": "react"}),
            lambda: ("_arbor/review/changeset", {"session_id": self.session()}),
            lambda: ("_arbor/review/history", {"cwd": cwd, "limit": self.rng.randint(1, 20)}),
            lambda: (
                "_arbor/review/decide",
                {"session_id": self.session(), "decision": "accepted", "all": True},
            ),
            lambda: ("_arbor/review/apply", {"session_id": self.session()}),
            lambda: ("_arbor/index/status", {"cwd": cwd}),
            lambda: ("_arbor/index/search", {"cwd": cwd, "query": self.rng.choice(["greet", "", "x" * 50])}),
            lambda: ("_arbor/index/outline", {"cwd": cwd, "path": "pkg/greet.py"}),
            lambda: ("_arbor/workflows/list", {"session_id": self.session()}),
            lambda: ("_arbor/memory/search", {"session_id": self.session(), "query": "greet"}),
            lambda: ("_arbor/tree/branch", {"session_id": self.session(), "changeset_id": "nope"}),
            lambda: ("_arbor/model/probes", {"cwd": cwd}),
            lambda: ("session/load", {"cwd": cwd, "sessionId": self.session(), "mcpServers": []}),
        ]
        if self.sessions_left > 0 and self.rng.random() < 0.05:
            self.sessions_left -= 1
            return "session/new", {"cwd": cwd, "mcpServers": []}
        if self.prompts_left > 0 and self.rng.random() < 0.05:
            self.prompts_left -= 1
            prompt = [{"type": "text", "text": self.rng.choice(["hello", "what does greet do?"])}]
            return "session/prompt", {"sessionId": self.session(), "prompt": prompt}
        return self.rng.choice(choices)()

    def wrong_value(self, depth_ok: bool = True) -> Any:
        """A value of the wrong type or shape for any field."""
        options: list[Any] = [
            None,
            True,
            -1,
            0,
            2**63,
            10**300,
            -(10**80),
            1.5e300,
            "",
            "\u202e\u200b" + "é" * 5,
            "../../../../etc/passwd",
            "/",
            "x" * self.rng.randint(1, 20_000),
            [],
            [1, "a", None],
            {},
            {"nested": {"deeper": [1, 2, {"x": None}]}},
        ]
        if depth_ok:
            options.append(nest(self.rng.randint(2, 40)))
        return self.rng.choice(options)

    def mutated_params(self, params: dict[str, Any]) -> Any:
        """``params`` with one field dropped, retyped or added, or replaced by a list."""
        params = dict(params)
        roll = self.rng.random()
        if roll < 0.08:
            return self.rng.choice([[], [params], [1, 2, 3]])
        if params and roll < 0.35:
            del params[self.rng.choice(sorted(params))]
        elif params and roll < 0.9:
            params[self.rng.choice(sorted(params))] = self.wrong_value()
        else:
            params[self.rng.choice(["extra", "_meta", "sessionId", "session_id", "cwd", "limit"])] = (
                self.wrong_value()
            )
        return params


def nest(levels: int, inner: Any = 0) -> Any:
    """``inner`` inside ``levels`` alternating arrays and objects."""
    value = inner
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def request(request_id: Any, method: Any, params: Any, version: Any = "2.0") -> bytes:
    message: dict[str, Any] = {"jsonrpc": version, "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def notification(method: Any, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()


def make_plan(gen: Generator, count: int) -> Plan:
    plan = Plan()
    rng = gen.rng
    ext_methods = [
        "_arbor/review/changeset",
        "_arbor/review/decide",
        "_arbor/review/apply",
        "_arbor/review/rollback",
        "_arbor/review/history",
        "_arbor/index/status",
        "_arbor/index/search",
        "_arbor/index/outline",
        "_arbor/lsp/definition",
        "_arbor/lsp/references",
        "_arbor/lsp/hover",
        "_arbor/memory/search",
        "_arbor/memory/delete",
        "_arbor/memory/keep",
        "_arbor/memory/export",
        "_arbor/model/probe",
        "_arbor/model/probes",
        "_arbor/model/health",
        "_arbor/tree/branch",
        "_arbor/workflows/list",
        "_arbor/workflows/select",
        "_arbor/external/open",
        "_arbor/external/read",
        "_arbor/external/write",
    ]
    ext_params = {
        "session_id": gen.session(),
        "cwd": str(gen.workspace),
        "path": str(gen.workspace / "pkg" / "greet.py"),
        "line": 1,
        "column": 1,
        "query": "greet",
        "decision": "rejected",
        "id": 1,
        "name": "auto",
        "changeset_id": "x",
        "content": "x",
    }
    weights = {
        "valid": 18,
        "mutated_params": 22,
        "ext_wrong_params": 12,
        "wrong_version": 5,
        "unknown_method": 5,
        "invalid_json": 10,
        "huge_id": 5,
        "wrong_id_type": 3,
        "depth": 3,
        "notification": 7,
        "response": 4,
        "not_object": 3,
        "blank": 1,
        "oversized": 0.15,
        "explicit_null_id": 1,
    }
    kinds = list(weights)
    while len(plan.lines) < count:
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        if kind == "valid":
            rid = gen.new_id()
            plan.add(kind, request(rid, *gen.valid()), rid)
        elif kind == "mutated_params":
            method, params = gen.valid()
            rid = gen.new_id()
            plan.add(kind, request(rid, method, gen.mutated_params(params)), rid)
        elif kind == "ext_wrong_params":
            method = rng.choice(ext_methods)
            chosen = rng.sample(sorted(ext_params), rng.randint(0, 4))
            params = {key: ext_params[key] if rng.random() < 0.6 else gen.wrong_value() for key in chosen}
            rid = gen.new_id()
            if rng.random() < 0.85:
                plan.add(kind, request(rid, method, params), rid)
            else:
                plan.add(kind, notification(method, params), NONE)
        elif kind == "wrong_version":
            version = rng.choice(["1.0", "2", 2, 2.0, None, "", ["2.0"]])
            method, params = gen.valid()
            if rng.random() < 0.7:
                rid = gen.new_id()
                plan.add(kind, request(rid, method, params, version), rid)
            else:
                body = {"jsonrpc": version, "method": method, "params": params}
                plan.add(kind, json.dumps(body).encode(), NULL)
        elif kind == "unknown_method":
            method = rng.choice(
                ["nope", "session/nope", "_arbor/nope", "_arbor/review", "_", "", "rpc.x", "Initialize"]
            ) + rng.choice(["", str(rng.randint(0, 9))])
            if rng.random() < 0.7:
                rid = gen.new_id()
                plan.add(kind, request(rid, method, {"x": 1}), rid)
            else:
                plan.add(kind, notification(method, {"x": 1}), NONE)
        elif kind == "invalid_json":
            method, params = gen.valid()
            valid = request(gen.new_id(), method, params)
            roll = rng.random()
            if roll < 0.5:
                data = valid[: rng.randint(1, len(valid) - 1)]
            elif roll < 0.7:
                at = rng.randint(1, len(valid) - 1)
                data = valid[:at] + b"\xff" + valid[at:]
            elif roll < 0.85:
                data = bytes(rng.choice(b'{}[]":,ab01 \t\\') for _ in range(rng.randint(1, 60)))
                data = b"{" + data  # never valid JSON: an object that does not close
            else:
                data = rng.choice(
                    [
                        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":NaN}}',
                        b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"x":Infinity}}',
                        b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"x":1e999}}',
                        b'{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"x":' + b"9" * 5000 + b"}}",
                        b"{'jsonrpc': '2.0'}",
                        b"\x00\x01\x02",
                    ]
                )
            plan.add(kind, data, NULL)
        elif kind == "huge_id":
            rid = gen.huge_id()
            plan.add(kind, request(rid, *gen.valid()), rid)
        elif kind == "wrong_id_type":
            rid = rng.choice([True, False, [1], {"id": 1}, [], {}])
            plan.add(kind, request(rid, *gen.valid()), NULL)
        elif kind == "depth":
            if rng.random() < 0.8:
                rid = gen.new_id()
                params = {"cwd": nest(rng.randint(70, 500))}
                plan.add(kind, request(rid, rng.choice(["session/new", "_arbor/index/search"]), params), rid)
            else:
                levels = rng.randint(2_000, 100_000)
                plan.add(kind, b"[" * levels + b"]" * levels, NULL)
        elif kind == "notification":
            roll = rng.random()
            if roll < 0.4:
                plan.add(kind, notification("session/cancel", {"sessionId": gen.session()}), NONE)
            elif roll < 0.7:
                params = rng.choice([{}, {"sessionId": gen.wrong_value()}, {"session_id": gen.session()}])
                plan.add(kind, notification("session/cancel", params), NONE)
            else:
                method = rng.choice(["_arbor/anything", "_zed/x", "session/update", "$/cancelRequest"])
                plan.add(kind, notification(method, {"x": gen.wrong_value()}), NONE)
        elif kind == "response":
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": rng.choice([gen.new_id(), None, 0, 1])}
            if rng.random() < 0.5:
                body["result"] = gen.wrong_value()
            else:
                body["error"] = {"code": -1, "message": "no"}
            plan.add(kind, json.dumps(body).encode(), NONE)
        elif kind == "not_object":
            value = rng.choice([[], [json.loads(request(1, "initialize", {}))], 1, "x", None, True, 1.5])
            plan.add(kind, json.dumps(value).encode(), NULL)
        elif kind == "blank":
            plan.add(kind, rng.choice([b"", b"   ", b"\t", b"\r"]), NONE)
        elif kind == "oversized":
            rid = gen.new_id()
            big = "y" * rng.randint(1_000_000, 4_000_000)
            method, params = rng.choice(
                [
                    (
                        "session/prompt",
                        {"sessionId": gen.session(), "prompt": [{"type": "text", "text": big}]},
                    ),
                    ("_arbor/index/search", {"cwd": str(gen.workspace), "query": big}),
                    ("session/new", {"cwd": "/" + big, "mcpServers": []}),
                    ("_arbor/external/write", {"session_id": "nope", "path": "a", "content": big}),
                ]
            )
            plan.add(kind, request(rid, method, params), rid)
        elif kind == "explicit_null_id":
            plan.add(kind, request(None, "initialize", {"protocolVersion": 1}), NULL)
    return plan


def batches(lines: list[bytes]) -> Iterator[bytes]:
    for start in range(0, len(lines), BATCH):
        yield b"".join(line + b"\n" for line in lines[start : start + BATCH])


@pytest.fixture
def backend(
    tmp_path: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> Iterator[RawWire]:
    import os

    # Each session replays the script from its top: its first prompt is answered, later ones run out.
    script = write_script([{"content": "Fine."}])
    env = {**os.environ, "ARBOR_MODEL": f"scripted:{script}"}
    wire = RawWire(env, tmp_path / "backend.stderr", answer=lambda _: {"outcome": {"outcome": "cancelled"}})
    yield wire
    if wire.proc.poll() is None:
        wire.proc.kill()
        wire.proc.wait()


def send(backend: RawWire, plan: Plan) -> set[Any]:
    """Write ``plan`` in pipelined batches and wait for every answer it must bring back; its ids."""
    nulls_before = len(backend.by_id.get(None, []))
    for chunk in batches(plan.lines):
        backend.write(chunk)
    expected = set(plan.expected_ids)
    assert len(expected) == len(plan.expected_ids), "the generator gave an id twice"
    backend.wait(
        lambda: (
            all(key in backend.by_id for key in expected)
            and len(backend.by_id.get(None, [])) - nulls_before >= plan.nulls
        ),
        ANSWER_TIMEOUT_S,
        f"answers to {len(expected)} requests and {plan.nulls} unreadable messages",
    )
    return expected


@pytest.mark.own_interpreter  # reads the backend's memory and descriptors from /proc
@pytest.mark.long
def test_ten_thousand_generated_messages_leave_the_backend_serving(
    backend: RawWire, git_workspace: Path
) -> None:
    started = time.monotonic()
    assert "result" in backend.request(1, "initialize", {"protocolVersion": 1}, timeout=30)
    sessions = []
    for n in range(3):
        answer = backend.request(10 + n, "session/new", {"cwd": str(git_workspace), "mcpServers": []})
        sessions.append(answer["result"]["sessionId"])
    prompt = [{"type": "text", "text": "warm up"}]
    warm = backend.request(20, "session/prompt", {"sessionId": sessions[0], "prompt": prompt}, timeout=30)
    assert warm["result"]["stopReason"] == "end_turn", warm
    # A warm-up round of the same kinds of messages: what loads on first use is not growth.
    warm_ids = send(backend, make_plan(Generator(SEED + 1, git_workspace, sessions, first_id=500_000), 1_000))
    warm_nulls = len(backend.by_id.get(None, []))
    rss_start, fds_start = rss_kib(backend.pid), open_fds(backend.pid)

    plan = make_plan(Generator(SEED, git_workspace, sessions), MESSAGES)
    warmed = backend.answers
    expected = send(backend, plan)

    # Alive: a new client's first steps still work on the same process.
    assert "result" in backend.request(90, "initialize", {"protocolVersion": 1})
    fresh = backend.request(91, "session/new", {"cwd": str(git_workspace), "mcpServers": []})
    view = backend.request(92, "_arbor/review/changeset", {"session_id": fresh["result"]["sessionId"]})
    assert view["result"]["files"] == [], view
    rss_end, fds_end = rss_kib(backend.pid), open_fds(backend.pid)

    duplicated = {
        key: len(found) for key, found in backend.by_id.items() if key is not None and len(found) > 1
    }
    unexpected = set(backend.by_id) - expected - warm_ids - {None, 1, 10, 11, 12, 20, 90, 91, 92}
    nulls = len(backend.by_id.get(None, [])) - warm_nulls
    stderr = backend.stderr()
    exit_code = backend.close()
    elapsed = time.monotonic() - started
    answers = backend.answers - warmed - 3
    print(
        f"\nfuzz: {len(plan.lines)} messages ({dict(plan.kinds)}), {len(expected)} with ids, "
        f"{answers} answers, {nulls} null-id errors (expected {plan.nulls}), {plan.silent} unanswered by "
        f"design; RSS {rss_start // 1024} → {rss_end // 1024} MiB, fds {fds_start} → {fds_end}; "
        f"exit {exit_code}; {elapsed:.1f} s (with start-up and a warm-up round of 1,000)"
    )
    assert not duplicated, f"answered more than once: {list(duplicated.items())[:5]}"
    assert not unexpected, f"answers to ids never sent: {sorted(map(repr, unexpected))[:5]}"
    assert nulls == plan.nulls, f"{nulls} errors with a null id, expected {plan.nulls}"
    assert not backend.unreadable, f"the backend wrote lines that are not JSON: {backend.unreadable[:3]}"
    assert exit_code == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[stderr.index("Traceback") - 500 :][:4000]
    assert rss_end - rss_start < RSS_GROWTH_BOUND_KIB, f"RSS grew {(rss_end - rss_start) // 1024} MiB"
    assert fds_end - fds_start <= FDS_GROWTH_BOUND, f"open files grew from {fds_start} to {fds_end}"
