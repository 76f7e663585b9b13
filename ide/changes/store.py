"""Applied batches and their checkpoints, in SQLite (WAL) in the workspace's data dir."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ide.private import private_dir, private_file
from ide.protocol.review import BatchView

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    created_at TEXT NOT NULL,
    message TEXT NOT NULL,
    commit_mode TEXT NOT NULL,
    state TEXT NOT NULL,          -- applying | applied | rolled_back | failed
    commit_sha TEXT,
    seq INTEGER NOT NULL,
    git_dir TEXT,                 -- the repository committed into (rollback refuses another)
    reason TEXT                   -- why a failed batch failed, why one was rolled back by recovery
);
CREATE TABLE IF NOT EXISTS batch_files (
    batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    pre_blob TEXT,                -- NULL: the file did not exist before the batch
    pre_mode INTEGER,
    post_blob TEXT,               -- NULL: the batch deleted it
    post_mode INTEGER,
    base_blob TEXT,               -- what the agent's change was made against
    PRIMARY KEY (batch_id, path)
);
"""


@dataclass(frozen=True)
class FileCheckpoint:
    """One file of a batch: its pre-image, what the batch wrote, and the agent's base."""

    path: str
    pre_blob: str | None
    pre_mode: int | None
    post_blob: str | None
    post_mode: int | None
    base_blob: str | None


class BatchStore:
    """Batches of one workspace in ``directory/batches.sqlite``; blobs of non-git workspaces in ``blobs/``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        private_dir(self.directory)
        self.blob_dir = self.directory / "blobs"
        self._path = private_file(self.directory / "batches.sqlite")
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(batches)")}
            for column in ("git_dir", "reason"):  # stores made before these columns existed
                if column not in columns:
                    db.execute(f"ALTER TABLE batches ADD COLUMN {column} TEXT")

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self._path, timeout=10)
        try:
            db.execute("PRAGMA foreign_keys=ON")
            with db:
                yield db
        finally:
            db.close()

    def begin(
        self,
        batch_id: str,
        *,
        session_id: str,
        cwd: str,
        message: str,
        commit_mode: str,
        files: list[FileCheckpoint],
        git_dir: str | None = None,
    ) -> None:
        """Record a batch and its checkpoint before any file is written."""
        now = datetime.now(tz=UTC).isoformat()
        with self._db() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM batches").fetchone()[0]
            db.execute(
                "INSERT INTO batches (id, session_id, cwd, created_at, message, commit_mode, state, seq, "
                "git_dir) VALUES (?, ?, ?, ?, ?, ?, 'applying', ?, ?)",
                (batch_id, session_id, cwd, now, message, commit_mode, seq, git_dir),
            )
            db.executemany(
                "INSERT INTO batch_files VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (batch_id, f.path, f.pre_blob, f.pre_mode, f.post_blob, f.post_mode, f.base_blob)
                    for f in files
                ],
            )

    def finish(
        self, batch_id: str, *, state: str, commit: str | None = None, reason: str | None = None
    ) -> None:
        with self._db() as db:
            db.execute(
                "UPDATE batches SET state = ?, commit_sha = COALESCE(?, commit_sha), "
                "reason = COALESCE(?, reason) WHERE id = ?",
                (state, commit, reason, batch_id),
            )

    def unfinished(self, cwd: str | Path) -> list[str]:
        """Batches of ``cwd`` left ``applying`` (their process died mid-Apply), oldest first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT id FROM batches WHERE cwd = ? AND state = 'applying' ORDER BY seq",
                (os.path.realpath(cwd),),
            ).fetchall()
        return [row[0] for row in rows]

    def git_dir(self, batch_id: str) -> str | None:
        with self._db() as db:
            row = db.execute("SELECT git_dir FROM batches WHERE id = ?", (batch_id,)).fetchone()
        return row[0] if row else None

    def get(self, batch_id: str) -> BatchView | None:
        with self._db() as db:
            row = self._batches(db, "WHERE id = ?", (batch_id,)).fetchone()
            return self._view(db, row) if row else None

    def history(self, cwd: str | Path, limit: int = 50) -> list[BatchView]:
        """Batches applied in ``cwd``, newest first."""
        with self._db() as db:
            where = "WHERE cwd = ? ORDER BY seq DESC LIMIT ?"
            rows = self._batches(db, where, (os.path.realpath(cwd), limit)).fetchall()
            return [self._view(db, row) for row in rows]

    def latest_applied(self, cwd: str | Path) -> str | None:
        with self._db() as db:
            row = db.execute(
                "SELECT id FROM batches WHERE cwd = ? AND state = 'applied' ORDER BY seq DESC LIMIT 1",
                (os.path.realpath(cwd),),
            ).fetchone()
        return row[0] if row else None

    def files(self, batch_id: str) -> list[FileCheckpoint]:
        with self._db() as db:
            rows = db.execute(
                "SELECT path, pre_blob, pre_mode, post_blob, post_mode, base_blob FROM batch_files "
                "WHERE batch_id = ? ORDER BY path",
                (batch_id,),
            ).fetchall()
        return [FileCheckpoint(*row) for row in rows]

    def commit_mode(self, batch_id: str) -> str:
        with self._db() as db:
            return db.execute("SELECT commit_mode FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]

    @staticmethod
    def _batches(db: sqlite3.Connection, where: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        """The batches ``where`` picks, each row read by column name (:data:`_COLUMNS`)."""
        cursor = db.execute(f"SELECT {_COLUMNS} FROM batches {where}", args)
        cursor.row_factory = sqlite3.Row
        return cursor

    @staticmethod
    def _view(db: sqlite3.Connection, row: sqlite3.Row) -> BatchView:
        batch = dict(row)
        files = db.execute("SELECT path FROM batch_files WHERE batch_id = ? ORDER BY path", (batch["id"],))
        paths = [r[0] for r in files]
        return BatchView(**batch, paths=paths, rolled_back=batch["state"] in ("rolled_back", "failed"))


_COLUMNS = 'id, session_id, cwd, created_at, message, state, commit_sha AS "commit", reason'
"""The columns of a batch that its view shows, named as :class:`BatchView`'s fields."""
