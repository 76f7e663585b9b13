"""Session records and their replayable history, in SQLite under the user's data dir, keyed by workspace."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ide.private import private_dir, private_file, tightened
from ide.settings import workspace_key

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    title TEXT,
    mode TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS pending_reviews (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_states (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run_id TEXT NOT NULL,
    saved_at REAL NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (session_id, run_id)
);
"""

KEPT_RUN_STATES = 10
"""Runs per session whose branch change sets the store keeps (the newest), so a node of one of them can
be continued or adopted after a restart; an older run's tree stays replayable, its branches are gone."""
TREE_RECORD = "_arbor_tree"
"""Key of a stored history entry holding a batch of search-tree events instead of a session update."""
TREE_PREFIX = '{"' + TREE_RECORD + '":'
"""How a stored batch of tree events starts (compact JSON)."""


@dataclass(frozen=True)
class SessionRecord:
    id: str
    cwd: str
    title: str | None
    mode: str
    created_at: float
    updated_at: float

    @property
    def updated_iso(self) -> str:
        return datetime.fromtimestamp(self.updated_at, tz=UTC).isoformat()


class SessionStore:
    """All sessions of all workspaces under ``data_dir/workspaces/<key>/sessions.sqlite``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._open: dict[Path, sqlite3.Connection] = {}
        self._lock = threading.RLock()
        """One connection per database, kept open and used by one caller at a time (threads included)."""

    def workspace_dir(self, cwd: str | Path) -> Path:
        return private_dir(tightened(self.data_dir) / "workspaces" / workspace_key(cwd))

    def checkpoint_path(self, cwd: str | Path) -> Path:
        """Where LangGraph keeps this workspace's conversation checkpoints."""
        return self.workspace_dir(cwd) / "checkpoints.sqlite"

    @contextmanager
    def _db(self, cwd: str | Path) -> Iterator[sqlite3.Connection]:
        """The workspace's database in a transaction (committed at the end, rolled back on an error).

        The connection stays open: opening and closing one per call cost a WAL checkpoint and its fsyncs
        at every close, about a tenth of a 200-turn session's time (the transcript is saved at every tool
        call)."""
        path = self.workspace_dir(cwd) / "sessions.sqlite"
        with self._lock:
            db = self._open.get(path)
            if db is None:
                db = sqlite3.connect(private_file(path), timeout=10, check_same_thread=False)
                try:
                    db.execute("PRAGMA foreign_keys=ON")
                    db.execute("PRAGMA journal_mode=WAL")
                    db.executescript(SCHEMA)
                    db.execute(
                        "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
                    db.commit()
                except BaseException:
                    db.close()
                    raise
                self._open[path] = db
            with db:
                yield db

    def close(self) -> None:
        """Close the databases (a later call opens them again)."""
        with self._lock:
            for db in self._open.values():
                db.close()
            self._open.clear()

    def create(self, session_id: str, cwd: str, mode: str) -> SessionRecord:
        now = time.time()
        with self._db(cwd) as db:
            db.execute(
                "INSERT INTO sessions (id, cwd, title, mode, created_at, updated_at) "
                "VALUES (?, ?, NULL, ?, ?, ?)",
                (session_id, cwd, mode, now, now),
            )
        return SessionRecord(session_id, cwd, None, mode, now, now)

    def get(self, session_id: str, cwd: str) -> SessionRecord | None:
        with self._db(cwd) as db:
            row = db.execute(
                "SELECT id, cwd, title, mode, created_at, updated_at FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
        return SessionRecord(*row) if row else None

    def list(self, cwd: str | None = None) -> list[SessionRecord]:
        """Sessions of one workspace, or of every workspace, newest first."""
        if cwd is not None:
            dirs = [self.workspace_dir(cwd)]
        else:
            root = self.data_dir / "workspaces"
            dirs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        records: list[SessionRecord] = []
        for directory in dirs:
            if not (directory / "sessions.sqlite").exists():
                continue
            db = sqlite3.connect(directory / "sessions.sqlite", timeout=10)
            try:
                rows = db.execute(
                    "SELECT id, cwd, title, mode, created_at, updated_at FROM sessions"
                ).fetchall()
            except sqlite3.OperationalError:
                rows = []
            finally:
                db.close()
            records.extend(SessionRecord(*row) for row in rows)
        return sorted(records, key=lambda r: r.updated_at, reverse=True)

    def update(self, session_id: str, cwd: str, *, title: str | None = None, mode: str | None = None) -> None:
        with self._db(cwd) as db:
            db.execute(
                "UPDATE sessions SET title = COALESCE(title, ?), mode = COALESCE(?, mode), updated_at = ? "
                "WHERE id = ?",
                (title, mode, time.time(), session_id),
            )

    def next_turn(self, session_id: str, cwd: str) -> int:
        with self._db(cwd) as db:
            row = db.execute("SELECT MAX(turn) FROM events WHERE session_id = ?", (session_id,)).fetchone()
        return (row[0] or 0) + 1

    def append_events(self, session_id: str, cwd: str, turn: int, updates: list[dict[str, Any]]) -> None:
        """Add a turn's session updates; consecutive text chunks are merged so replay stays compact."""
        if not updates:
            return
        with self._db(cwd) as db:
            row = db.execute("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,)).fetchone()
            seq = row[0] or 0
            rows = []
            for update in merge_chunks(updates):
                seq += 1
                rows.append((session_id, seq, turn, _compact(update)))
            db.executemany("INSERT INTO events (session_id, seq, turn, payload) VALUES (?, ?, ?, ?)", rows)
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))

    def save_review(self, session_id: str, cwd: str, snapshot: dict[str, Any] | None) -> None:
        """Keep a session's pending change set and decisions (None: nothing pending)."""
        self._keep(cwd, _PENDING_REVIEWS, session_id, snapshot)

    def load_review(self, session_id: str, cwd: str) -> dict[str, Any] | None:
        return self._kept(cwd, _PENDING_REVIEWS, session_id)

    def save_workflow(self, session_id: str, cwd: str, run: dict[str, Any] | None) -> None:
        """Keep the session's current workflow run (what ``/resume`` needs after a restart)."""
        self._keep(cwd, _META, f"workflow:{session_id}", run)

    def load_workflow(self, session_id: str, cwd: str) -> dict[str, Any] | None:
        return self._kept(cwd, _META, f"workflow:{session_id}")

    def save_options(self, session_id: str, cwd: str, options: dict[str, str]) -> None:
        """Keep the model and workflow the session was set to (``ide.backend.config_options.restore``)."""
        self._keep(cwd, _META, f"options:{session_id}", options or None)

    def load_options(self, session_id: str, cwd: str) -> dict[str, str]:
        kept = self._kept(cwd, _META, f"options:{session_id}")
        return {k: v for k, v in kept.items() if isinstance(v, str)} if isinstance(kept, dict) else {}

    def _keep(self, cwd: str, where: tuple[str, str, str], key: str, value: dict[str, Any] | None) -> None:
        """``value`` as JSON in the row ``key`` of ``where`` (table, key column, value column); None deletes
        the row."""
        table, key_column, value_column = where
        with self._db(cwd) as db:
            if value is None:
                db.execute(f"DELETE FROM {table} WHERE {key_column} = ?", (key,))
            else:
                db.execute(
                    f"INSERT OR REPLACE INTO {table} ({key_column}, {value_column}) VALUES (?, ?)",
                    (key, _compact(value)),
                )

    def _kept(self, cwd: str, where: tuple[str, str, str], key: str) -> dict[str, Any] | None:
        table, key_column, value_column = where
        with self._db(cwd) as db:
            row = db.execute(f"SELECT {value_column} FROM {table} WHERE {key_column} = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def save_run_states(self, session_id: str, cwd: str, run_id: str, payload: dict[str, Any]) -> None:
        """Keep a run's branches and states (``ide.backend.runs``); only the newest KEPT_RUN_STATES runs of
        the session stay."""
        with self._db(cwd) as db:
            db.execute(
                "INSERT OR REPLACE INTO run_states (session_id, run_id, saved_at, payload) "
                "VALUES (?, ?, ?, ?)",
                (session_id, run_id, time.time(), _compact(payload)),
            )
            db.execute(
                "DELETE FROM run_states WHERE session_id = ? AND run_id NOT IN "
                "(SELECT run_id FROM run_states WHERE session_id = ? ORDER BY rowid DESC LIMIT ?)",
                (session_id, session_id, KEPT_RUN_STATES),
            )

    def load_run_states(self, session_id: str, cwd: str, run_id: str) -> dict[str, Any] | None:
        with self._db(cwd) as db:
            row = db.execute(
                "SELECT payload FROM run_states WHERE session_id = ? AND run_id = ?", (session_id, run_id)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def kept_runs(self, session_id: str, cwd: str) -> set[str]:
        """The runs of the session whose branches the store keeps."""
        with self._db(cwd) as db:
            rows = db.execute("SELECT run_id FROM run_states WHERE session_id = ?", (session_id,)).fetchall()
        return {row[0] for row in rows}

    def tree_batches(self, session_id: str, cwd: str) -> list[tuple[int, str | None, list[dict[str, Any]]]]:
        """The session's stored tree events, batch by batch in order: (turn, the turn's question, events)."""
        with self._db(cwd) as db:
            rows = db.execute(
                "SELECT turn, payload FROM events WHERE session_id = ? AND (substr(payload, 1, ?) = ? OR "
                "payload LIKE '%user_message_chunk%') ORDER BY seq",
                (session_id, len(TREE_PREFIX), TREE_PREFIX),
            ).fetchall()
        questions: dict[int, str] = {}
        batches: list[tuple[int, str | None, list[dict[str, Any]]]] = []
        for turn, payload in rows:
            value = json.loads(payload)
            if payload.startswith(TREE_PREFIX) and TREE_RECORD in value:
                batches.append((turn, questions.get(turn), value[TREE_RECORD]))
            elif value.get("sessionUpdate") == "user_message_chunk" and turn not in questions:
                questions[turn] = (value.get("content") or {}).get("text") or ""
        return batches

    def session_of_run(self, cwd: str, run_id: str) -> list[tuple[str, str]]:
        """(session id, run id) of the workspace's stored runs whose id is or starts with ``run_id``."""
        pattern = '%"run_id":"' + run_id.replace("%", "").replace("_", "") + "%"
        with self._db(cwd) as db:
            rows = db.execute(
                "SELECT DISTINCT session_id, payload FROM events WHERE substr(payload, 1, ?) = ? "
                "AND payload LIKE ?",
                (len(TREE_PREFIX), TREE_PREFIX, pattern),
            ).fetchall()
        found: set[tuple[str, str]] = set()
        for session_id, payload in rows:
            for event in json.loads(payload).get(TREE_RECORD, ()):
                if str(event.get("run_id", "")).startswith(run_id):
                    found.add((session_id, event["run_id"]))
        return sorted(found)

    def events(self, session_id: str, cwd: str) -> list[dict[str, Any]]:
        with self._db(cwd) as db:
            rows = db.execute(
                "SELECT payload FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]


_CHUNK_KINDS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")


# Where SessionStore._keep keeps a JSON value: table, key column, value column.
_PENDING_REVIEWS = ("pending_reviews", "session_id", "payload")
_META = ("meta", "key", "value")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def merge_chunks(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join runs of text chunks of the same kind into one update."""
    merged: list[dict[str, Any]] = []
    for update in updates:
        kind = update.get("sessionUpdate")
        previous = merged[-1] if merged else None
        if (
            kind in _CHUNK_KINDS
            and previous is not None
            and previous.get("sessionUpdate") == kind
            and update.get("content", {}).get("type") == "text"
            and previous.get("content", {}).get("type") == "text"
        ):
            previous["content"] = {
                **previous["content"],
                "text": previous["content"]["text"] + update["content"]["text"],
            }
            continue
        merged.append(json.loads(json.dumps(update)))
    return merged
