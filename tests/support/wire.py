"""The ACP traffic of a test's session with ``arbor acp``, recorded at the client's pipes, normalised and
compared with a golden file (``tests/golden/NAME.jsonl``, one message a line).

What is recorded is every JSON-RPC message either side sent, in the order the client wrote or received
it: the bytes the client writes to the backend's stdin and the bytes that arrive from its stdout, split
into lines, each parsed and written again with sorted keys; the search tree's notifications, batched by
the clock, are listed apart (:func:`golden_lines`). The normaliser (:class:`Normaliser`) then
replaces only what differs from run to run by nature, and nothing else:

- the test's temporary paths, the ones it names (the workspace, pytest's ``tmp_path``, the foreign
  agent's shadow workspace that the backend makes with ``mkdtemp``) → ``<workspace>``, ``<tmp>``,
  ``<shadow>``, wherever they occur in a string (a ``cwd``, a diff's ``path``, the scripted model's
  ``scripted:<tmp>/script0.jsonl``); the workspace has a path of fixed length
  (:func:`at_fixed_length`), as token estimates count its characters in the prompts;
- random ids, 32 hex digits as ``uuid4().hex`` writes them (session, run and batch ids) or the hyphenated
  form → ``<uuid-N>``, numbered by first appearance in the scenario, so that the same id stays the same
  placeholder and a message naming another session shows;
- git object names, 40 hex digits (an Apply's commit: its message names the random batch id) →
  ``<commit-N>``, numbered the same way;
- the clock: the value of a key in :data:`TIME_KEYS` that is a number (epoch seconds) → ``<epoch>``, or an
  ISO 8601 string → ``<iso-time>``;
- durations: the value of a key in :data:`DURATION_KEYS` that is a number → ``<duration>``.

A value of a time or duration key that is of any other type is kept, so a changed type fails. Hunk ids
are not replaced: they are hashes of the hunk's text, the same in every run. Token counts are estimates
from the text (the scripted model's and Arbor's own), so they are kept too.

``ARBOR_UPDATE_GOLDEN=1`` writes the recording as the new golden file instead of comparing (read when
this module is imported: tests/conftest.py clears every ``ARBOR_*`` variable for each test).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE_GOLDEN = os.environ.get("ARBOR_UPDATE_GOLDEN") == "1"
"""Rewrite the golden files from this run instead of comparing with them."""

TIME_KEYS = frozenset({"at", "created_at", "updated_at"})
"""Keys whose value is a moment: a tree event's and node's times, an applied batch's ``created_at``."""
DURATION_KEYS = frozenset({"latency_ms", "wall_s"})
"""Keys whose value is how long something took: a model call's latency, a run's wall time."""

_UUID = re.compile(
    r"(?<![0-9a-fA-F-])(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-fA-F-])"
)
_COMMIT = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{40}(?![0-9a-fA-F])")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?$")

WORKSPACE_PATH_LENGTH = 200
"""The workspace's path is in the agent's prompts, and so in every token estimate on the wire (a context
report, a usage report, a tree node's figures): a recorded workspace has a path of this length wherever
pytest's temp dir is (``popen-gw0/`` under xdist, ``pytest-9`` becoming ``pytest-10``)."""

TREE = "_arbor/tree"
"""The search tree's notification, whose batching follows the clock (:func:`golden_lines`)."""

CLIENT = "client"
AGENT = "agent"


@dataclass
class WireTap:
    """The messages crossing one backend's stdio, as ``(sender, message)`` in the client's order."""

    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _partial: dict[str, bytes] = field(default_factory=lambda: {CLIENT: b"", AGENT: b""})

    def attach(self, proc: asyncio.subprocess.Process) -> None:
        """Record what the client writes to ``proc``'s stdin and what arrives from its stdout, before the
        client's connection sees a byte (the backend speaks only when spoken to)."""
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        write, feed = stdin.write, stdout.feed_data

        def recorded_write(data: bytes) -> None:
            self._take(CLIENT, data)
            write(data)

        def recorded_feed(data: bytes) -> None:
            self._take(AGENT, data)
            feed(data)

        # Instance attributes: the SDK still gets the StreamWriter and StreamReader it checks for.
        stdin.write = recorded_write  # type: ignore[method-assign]
        stdout.feed_data = recorded_feed  # type: ignore[method-assign]

    def _take(self, sender: str, data: bytes) -> None:
        buffer = self._partial[sender] + bytes(data)
        *lines, self._partial[sender] = buffer.split(b"\n")
        self.messages += [(sender, json.loads(line)) for line in lines if line.strip()]


def at_fixed_length(workspace: Path, length: int = WORKSPACE_PATH_LENGTH) -> Path:
    """Move ``workspace`` (a git repository) within its folder so that its real path is ``length`` long."""
    parent = workspace.parent.resolve()
    room = length - len(str(parent)) - 1
    assert room >= len(workspace.name), f"{parent} is too long for a workspace path of {length} characters"
    moved = parent / workspace.name.ljust(room, "_")
    workspace.rename(moved)
    assert len(str(moved)) == length
    return moved


class Normaliser:
    """Replaces what legitimately varies between runs (the module's docstring lists it) with placeholders."""

    def __init__(self) -> None:
        self._paths: dict[str, str] = {}
        self._seen: dict[str, dict[str, str]] = {"uuid": {}, "commit": {}}

    def path(self, path: str | Path, placeholder: str) -> None:
        """Write ``placeholder`` for ``path`` (and for its real path, where a link leads elsewhere)."""
        for form in {str(path), os.path.realpath(path)}:
            self._paths[form] = placeholder

    def message(self, message: Any) -> Any:
        return self._value(message, key=None)

    def _value(self, value: Any, key: str | None) -> Any:
        if key in TIME_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return "<epoch>"
        if key in TIME_KEYS and isinstance(value, str) and _ISO_TIME.match(value):
            return "<iso-time>"
        if key in DURATION_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return "<duration>"
        if isinstance(value, dict):
            return {self._text(k): self._value(value[k], k) for k in sorted(value)}
        if isinstance(value, list):
            return [self._value(item, None) for item in value]
        if isinstance(value, str):
            return self._text(value)
        return value

    def _text(self, text: str) -> str:
        for path in sorted(self._paths, key=len, reverse=True):  # a longer path first: it may hold another
            text = text.replace(path, self._paths[path])
        text = _UUID.sub(lambda m: self._numbered("uuid", m.group(0)), text)
        return _COMMIT.sub(lambda m: self._numbered("commit", m.group(0)), text)

    def _numbered(self, kind: str, value: str) -> str:
        seen = self._seen[kind]
        return seen.setdefault(value, f"<{kind}-{len(seen) + 1}>")


def golden_lines(messages: Iterable[tuple[str, dict[str, Any]]], normaliser: Normaliser) -> list[str]:
    """One line per message (who sent it, the message normalised, keys sorted), then one per search-tree
    event.

    A run's tree events are sent after each model step and tool call and also every 0.1 s while it runs
    (``TREE_FLUSH_S``), so how they are grouped into ``_arbor/tree`` notifications, and where a group
    falls among the other messages, follows the clock. The notifications are therefore taken out of the
    sequence: their events are listed after it, in the order sent, each with its session; that each came
    inside a prompt turn is checked here."""
    messages = list(messages)
    _check_tree_in_turns(messages)
    lines = [
        {"from": sender, "message": message} for sender, message in messages if message.get("method") != TREE
    ]
    lines += [
        {"from": sender, "tree_event": event, "session_id": message["params"]["session_id"]}
        for sender, message in messages
        if message.get("method") == TREE
        for event in message["params"]["events"]
    ]
    return [json.dumps(normaliser.message(line), sort_keys=True, ensure_ascii=False) for line in lines]


def _check_tree_in_turns(messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Every ``_arbor/tree`` notification arrived between a ``session/prompt`` and its answer."""
    turns: set[Any] = set()
    for number, (sender, message) in enumerate(messages, 1):
        if sender == CLIENT and message.get("method") == "session/prompt":
            turns.add(message["id"])
        elif sender == AGENT and "method" not in message:
            turns.discard(message.get("id"))
        elif message.get("method") == TREE:
            assert turns, f"message {number}, {TREE}, came outside a prompt turn"


def _title(record: dict[str, Any]) -> str:
    if "tree_event" in record:
        return f"{record['from']}: tree event {record['tree_event'].get('kind')}"
    message = record["message"]
    return f"{record['from']}: {message.get('method') or 'answer to ' + str(message.get('id'))}"


def _indented(record: dict[str, Any]) -> list[str]:
    body = record.get("message") or {key: value for key, value in record.items() if key != "from"}
    return json.dumps(body, sort_keys=True, ensure_ascii=False, indent=2).splitlines()


def wire_diff(expected: list[str], actual: list[str]) -> str:
    """The messages that differ, each under a header naming it (its number in the golden file and in this
    run, who sent it, the method), with a diff of its fields indented; a message only one side has is
    shown whole."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=expected, b=actual, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old = [json.loads(line) for line in expected[i1:i2]]
        new = [json.loads(line) for line in actual[j1:j2]]
        for k, (a, b) in enumerate(zip(old, new, strict=False)):
            out.append(f"golden #{i1 + k + 1}, this run #{j1 + k + 1}, {_title(b)}:")
            out += list(difflib.unified_diff(_indented(a), _indented(b), lineterm="", n=3))[2:]
        for k, a in enumerate(old[len(new) :], len(new)):
            out.append(f"golden #{i1 + k + 1}, missing from this run, {_title(a)}:")
            out += ["-" + line for line in _indented(a)]
        for k, b in enumerate(new[len(old) :], len(old)):
            out.append(f"this run #{j1 + k + 1}, not in the golden file, {_title(b)}:")
            out += ["+" + line for line in _indented(b)]
    return "\n".join(out)


def check_golden(name: str, lines: list[str], folder: Path = GOLDEN) -> None:
    """Compare ``lines`` with ``tests/golden/NAME.jsonl``, or write them there under ARBOR_UPDATE_GOLDEN=1."""
    path = folder / f"{name}.jsonl"
    text = "".join(line + "\n" for line in lines)
    if UPDATE_GOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}: run this test once with ARBOR_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8").splitlines()
    if expected != lines:
        raise AssertionError(
            f"the ACP traffic differs from {path} "
            "(ARBOR_UPDATE_GOLDEN=1 rewrites it if the change is meant):\n" + wire_diff(expected, lines)
        )
