"""A pending review as JSON-safe data, so a restarted backend brings it back exactly (see Review.snapshot).

Version 1 layout (bytes as base64, modes as permission-bit ints, paths workspace-relative POSIX)::

    {"version": 1, "kind": "arbor.review", "root": "/abs/workspace", "changeset_id": "...",
     "session_id": "...", "title": "..." | null, "commit_mode": "commit" | "stage" | "none",
     "files": [{"path": "a.py",
                "base": {"data": "<b64>" | null, "mode": 420 | null},
                "entry": {"data": "<b64>" | null, "mode": 420 | null, "origin": "old.py" | null} | null}],
     "decisions": {"<hunk id>": {"decision": "accepted", "comment": "..." | null}},
     "conflicts": {"a.py": "why the last apply could not write it"}}

``files`` holds every path with a proposed entry, every rename source, and every path recorded as
absent; bases are kept as the agent read them (never re-read on restore), so apply still merges with
what the user changed on disk since. Bases of files that were only read are left out: after a
restore they are read again on first touch, as in a new session.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ide.changes.overlay import Base, ChangeError, ChangeSet, Entry

VERSION = 1
KIND = "arbor.review"
DECISIONS = ("pending", "accepted", "rejected")


@dataclass
class ReviewState:
    """A decoded, validated snapshot."""

    root: str
    changeset_id: str | None
    session_id: str
    title: str | None
    commit_mode: str
    bases: dict[str, Base]
    entries: dict[str, Entry]
    decisions: dict[str, tuple[str, str | None]]
    conflicts: dict[str, str]


def encode_review(
    changeset: ChangeSet,
    *,
    session_id: str,
    title: str | None,
    commit_mode: str,
    decisions: dict[str, tuple[str, str | None]],
    conflicts: dict[str, str],
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "kind": KIND,
        "root": str(changeset.root),
        "changeset_id": changeset.id,
        "session_id": session_id,
        "title": title,
        "commit_mode": commit_mode,
        "files": encode_files(changeset),
        "decisions": {
            hunk_id: {"decision": decision, "comment": comment}
            for hunk_id, (decision, comment) in decisions.items()
        },
        "conflicts": dict(conflicts),
    }


def encode_files(changeset: ChangeSet) -> list[dict[str, Any]]:
    """The ``files`` list of a snapshot: every proposed path, rename source and path recorded absent."""
    bases, entries = changeset.recorded()
    keep = list(entries)
    keep += [e.origin for e in entries.values() if e.origin and e.origin not in entries]
    keep += [p for p, b in bases.items() if b.data is None and p not in entries]
    files: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in keep:
        if path in seen:
            continue
        seen.add(path)
        base = bases.get(path)
        if base is None:  # cannot happen: every edit records its base first
            base = changeset.base(path)
        entry = entries.get(path)
        files.append(
            {
                "path": path,
                "base": {"data": _b64(base.data), "mode": base.mode},
                "entry": None
                if entry is None
                else {"data": _b64(entry.data), "mode": entry.mode, "origin": entry.origin},
            }
        )
    return files


def decode_files(raw_files: Any, where_root: str = "files") -> tuple[dict[str, Base], dict[str, Entry]]:
    """Bases and entries from a ``files`` list; a ChangeError naming the first problem."""
    if not isinstance(raw_files, list):
        raise _bad(f"{where_root} is not a list")
    bases: dict[str, Base] = {}
    entries: dict[str, Entry] = {}
    for i, item in enumerate(raw_files):
        where = f"{where_root}[{i}]"
        if not isinstance(item, dict):
            raise _bad(f"{where} is not an object")
        path = _path(_field(item, "path", str, where=where), f"{where}.path")
        if path in bases:
            raise _bad(f"{where}: {path} is listed twice")
        raw_base = _field(item, "base", dict, where=where)
        bases[path] = Base(
            _unb64(raw_base, f"{where}.base"), _mode(raw_base.get("mode"), f"{where}.base.mode")
        )
        raw_entry = _field(item, "entry", dict, optional=True, where=where)
        if raw_entry is not None:
            origin = _field(raw_entry, "origin", str, optional=True, where=f"{where}.entry")
            entries[path] = Entry(
                _unb64(raw_entry, f"{where}.entry"),
                _mode(raw_entry.get("mode"), f"{where}.entry.mode"),
                None if origin is None else _path(origin, f"{where}.entry.origin"),
            )
    for path, entry in entries.items():
        if entry.origin is not None and entry.origin not in bases:
            raise _bad(f"{path} was renamed from {entry.origin}, whose base is missing")
    return bases, entries


def encode_changeset(changeset: ChangeSet) -> dict[str, Any]:
    """A change set alone as JSON-safe data (a workflow keeps its work in its checkpoints this way)."""
    return {"root": str(changeset.root), "id": changeset.id, "files": encode_files(changeset)}


def decode_changeset(data: Any) -> ChangeSet:
    """The change set :func:`encode_changeset` gave ``data`` for; nothing is read from disk."""
    if not isinstance(data, dict):
        raise _bad(f"expected a JSON object, got {type(data).__name__}")
    bases, entries = decode_files(data.get("files"))
    root = _field(data, "root", str)
    return ChangeSet.from_recorded(Path(root), bases, entries, id=_field(data, "id", str, optional=True))


def encode_changesets(changesets: Iterable[ChangeSet]) -> dict[str, Any]:
    """Several change sets of one workspace as JSON-safe data, each file's bytes kept once however many of
    them hold it (a run's branches share most of their files): ``{"root", "blobs": {key: b64},
    "changesets": [{"id", "files"}]}``, where a file's ``data`` is a key of ``blobs`` (or null)."""
    blobs: dict[str, str] = {}
    root: str | None = None
    out: list[dict[str, Any]] = []
    for changeset in changesets:
        root = root or str(changeset.root)
        files = encode_files(changeset)
        for item in files:
            for part in (item["base"], item["entry"]):
                if part is not None and part["data"] is not None:
                    key = hashlib.sha256(part["data"].encode("ascii")).hexdigest()[:32]
                    blobs.setdefault(key, part["data"])
                    part["data"] = key
        out.append({"id": changeset.id, "files": files})
    return {"root": root, "blobs": blobs, "changesets": out}


def decode_changesets(data: Any) -> dict[str, ChangeSet]:
    """The change sets :func:`encode_changesets` gave ``data`` for, by id; a ChangeError naming the first
    problem. Nothing is read from disk."""
    if not isinstance(data, dict):
        raise _bad(f"expected a JSON object, got {type(data).__name__}")
    blobs = _field(data, "blobs", dict)
    found: dict[str, ChangeSet] = {}
    for i, raw in enumerate(_field(data, "changesets", list)):
        where = f"changesets[{i}]"
        if not isinstance(raw, dict):
            raise _bad(f"{where} is not an object")
        files = [
            {**item, **{name: _unblob(item.get(name), blobs, where) for name in ("base", "entry")}}
            if isinstance(item, dict)
            else item
            for item in _field(raw, "files", list, where=where)
        ]
        changeset = decode_changeset(
            {"root": _field(data, "root", str), "id": _field(raw, "id", str, where=where), "files": files}
        )
        found[changeset.id] = changeset
    return found


def _unblob(part: Any, blobs: dict[str, Any], where: str) -> Any:
    """A file's ``base`` or ``entry`` with its blob key replaced by the bytes it names."""
    if not isinstance(part, dict) or part.get("data") is None:
        return part
    if part["data"] not in blobs:
        raise _bad(f"{where}: no blob {part['data']!r}")
    return {**part, "data": blobs[part["data"]]}


def decode_review(snapshot: Any, commit_modes: tuple[str, ...]) -> ReviewState:
    """Validate ``snapshot`` and decode it; a ChangeError naming the first problem."""
    if not isinstance(snapshot, dict):
        raise _bad(f"expected a JSON object, got {type(snapshot).__name__}")
    if "version" not in snapshot:
        raise _bad("it has no 'version' key")
    version = snapshot["version"]
    if type(version) is not int or version != VERSION:
        raise ChangeError(
            f"review snapshot version {version!r} is not supported (this Arbor reads version {VERSION}); "
            "the pending review cannot be restored"
        )
    if snapshot.get("kind", KIND) != KIND:
        raise _bad(f"its kind is {snapshot.get('kind')!r}, not {KIND!r}")
    root = _field(snapshot, "root", str)
    if not os.path.isabs(root):
        raise _bad(f"root {root!r} is not an absolute path")
    changeset_id = _field(snapshot, "changeset_id", str, optional=True)
    session_id = _field(snapshot, "session_id", str)
    title = _field(snapshot, "title", str, optional=True)
    commit_mode = _field(snapshot, "commit_mode", str)
    if commit_mode not in commit_modes:
        raise _bad(f"commit_mode {commit_mode!r} is not one of {', '.join(commit_modes)}")

    bases, entries = decode_files(_field(snapshot, "files", list))

    decisions: dict[str, tuple[str, str | None]] = {}
    for hunk_id, raw in _field(snapshot, "decisions", dict).items():
        where = f"decisions[{hunk_id!r}]"
        if not isinstance(raw, dict):
            raise _bad(f"{where} is not an object")
        decision = _field(raw, "decision", str, where=where)
        if decision not in DECISIONS:
            raise _bad(f"{where}.decision {decision!r} is not one of {', '.join(DECISIONS)}")
        decisions[hunk_id] = (decision, _field(raw, "comment", str, optional=True, where=where))

    conflicts: dict[str, str] = {}
    for path, message in _field(snapshot, "conflicts", dict).items():
        if not isinstance(message, str):
            raise _bad(f"conflicts[{path!r}] is not a string")
        conflicts[_path(path, f"conflicts[{path!r}]")] = message

    return ReviewState(
        root, changeset_id, session_id, title, commit_mode, bases, entries, decisions, conflicts
    )


def _bad(problem: str) -> ChangeError:
    return ChangeError(f"malformed review snapshot: {problem}; the pending review cannot be restored")


def _field(obj: dict[str, Any], key: str, kind: type, *, optional: bool = False, where: str = "") -> Any:
    name = f"{where}.{key}" if where else key
    if key not in obj:
        raise _bad(f"{name} is missing")
    value = obj[key]
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        expected = kind.__name__ + (" or null" if optional else "")
        raise _bad(f"{name} should be {expected}, not {type(value).__name__}")
    return value


def _path(path: str, where: str) -> str:
    """A workspace-relative POSIX path that stays inside the workspace."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\x00" in path or any(p in ("", ".", "..") for p in parts):
        raise _bad(f"{where} {path!r} is not a plain workspace-relative path")
    return path


def _mode(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= 0o7777:
        raise _bad(f"{where} {value!r} is not a permission-bits integer")
    return value


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(obj: dict[str, Any], where: str) -> bytes | None:
    text = _field(obj, "data", str, optional=True, where=where)
    if text is None:
        return None
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise _bad(f"{where}.data is not valid base64 ({err})") from err
