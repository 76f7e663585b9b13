"""The index's SQLite file: schema, writes of extracted files, and the queries every surface uses.

One file per workspace (``<data dir>/workspaces/<key>/index.sqlite``), WAL so readers never wait for the
indexer. Definitions are searchable through an FTS5 trigram table of qualified names (substrings of names
too: a name is the tail of its qualified name, so indexing it again found no other row; no bm25 on it, so
no column sizes) and an FTS5 word table of signatures and docstrings (bm25-ranked).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from ide.codeintel.index.model import Definition, FileSymbols
from ide.private import private_dir, private_file

SCHEMA_VERSION = 5
"""Bump when the schema or what extraction produces changes: an older file is rebuilt from scratch."""

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    language TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    status TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    lines INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE defs (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    qualname TEXT NOT NULL,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    signature TEXT NOT NULL,
    params TEXT NOT NULL,
    returns TEXT NOT NULL,
    doc TEXT NOT NULL,
    parent TEXT NOT NULL
);
CREATE INDEX defs_file ON defs (file_id);
CREATE TABLE refs (file_id INTEGER NOT NULL, name TEXT NOT NULL, lines TEXT NOT NULL, count INTEGER NOT NULL);
CREATE INDEX refs_file ON refs (file_id);
CREATE TABLE imports (file_id INTEGER NOT NULL, module TEXT NOT NULL);
CREATE INDEX imports_file ON imports (file_id);
CREATE VIRTUAL TABLE defs_fts USING fts5(
    qualname, content='defs', content_rowid='id', tokenize='trigram', columnsize=0
);
CREATE VIRTUAL TABLE text_fts USING fts5(
    signature, doc, content='defs', content_rowid='id', tokenize="unicode61 tokenchars '_'"
);
"""

NAME_INDEXES = """
CREATE INDEX IF NOT EXISTS defs_name ON defs (name COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS defs_name_exact ON defs (name);
CREATE INDEX IF NOT EXISTS refs_name ON refs (name);
"""
"""Lookups by name; dropped during a bulk pass and built again once at its end (one sort, not a
b-tree insert per row)."""

FILE_INDEXES = """
CREATE INDEX IF NOT EXISTS defs_file ON defs (file_id);
CREATE INDEX IF NOT EXISTS refs_file ON refs (file_id);
CREATE INDEX IF NOT EXISTS imports_file ON imports (file_id);
"""
"""Rows by file (a file's rows replaced or deleted); a bulk pass that starts on an empty index, which
deletes nothing, drops them too and builds them at its end (~0.2 s of a cold pass's CPU)."""

TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS defs_ai AFTER INSERT ON defs BEGIN
    INSERT INTO defs_fts (rowid, qualname) VALUES (new.id, new.qualname);
    INSERT INTO text_fts (rowid, signature, doc) VALUES (new.id, new.signature, new.doc);
END;
CREATE TRIGGER IF NOT EXISTS defs_ad AFTER DELETE ON defs BEGIN
    INSERT INTO defs_fts (defs_fts, rowid, qualname) VALUES ('delete', old.id, old.qualname);
    INSERT INTO text_fts (text_fts, rowid, signature, doc) VALUES ('delete', old.id, old.signature, old.doc);
END;
"""

DEF_COLUMNS = ", ".join([*(f"d.{column.name}" for column in fields(Definition)), "f.path"])
"""A Symbol's columns in its field order: the definition's, then its file's path."""
QUERY_MAX = 1000
"""Characters of a query searched: no name is longer, and SQLite refuses LIKE patterns over 50,000 bytes."""
KIND_WEIGHT = {"class": 3.0, "interface": 3.0, "struct": 3.0, "trait": 3.0, "enum": 2.5, "function": 2.5}
_WORD = re.compile(r"\S+")
_TEST_FOLDERS = frozenset({"test", "tests", "testing"})


@dataclass(slots=True)
class Symbol(Definition):
    """A definition as the surfaces show it: found in the file at ``path``, relative to the workspace root
    (POSIX), with its ``score`` when a search found it."""

    path: str = field(kw_only=True)
    score: float = field(default=0.0, kw_only=True)

    @classmethod
    def of(cls, path: str, definition: Definition) -> Symbol:
        """``definition`` (extracted, not yet stored) as found in the file at ``path``."""
        return cls(*definition.row(), path=path)

    @classmethod
    def read(cls, row: tuple[Any, ...]) -> Symbol:
        """The symbol of a row selected as ``DEF_COLUMNS``."""
        *definition, path = row
        return cls(*definition, path=path)


def nesting(symbols: Iterable[Symbol]) -> list[int]:
    """Depth of each of one file's symbols (0 for top level), from their parents, in the given order."""
    depth: dict[str, int] = {}
    levels = []
    for symbol in symbols:
        level = depth.get(symbol.parent, -1) + 1 if symbol.parent else 0
        depth[symbol.qualname] = level
        levels.append(level)
    return levels


@dataclass(slots=True)
class FileRow:
    path: str
    language: str | None
    size: int
    mtime_ns: int
    hash: str
    status: str
    note: str
    lines: int


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating or rebuilding when the schema version differs) the index file at ``path``."""
    private_dir(path.parent)
    db = _open(path)
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        has_tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if has_tables:
            db.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            db = _open(path)
        db.executescript(SCHEMA + NAME_INDEXES + TRIGGERS)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.commit()
    elif db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] < 2:
        _finish_bulk(db)  # a bulk pass was killed before its end: build what it had dropped
    return db


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(private_file(path), timeout=30, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-65536")
    return db


class Bulk:
    """A bulk pass's search tables: fed as the pass goes when it started on an empty index (its rows only
    ever added, in id order), else built again from scratch at its end."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        empty = db.execute("SELECT NOT EXISTS (SELECT 1 FROM files) AND NOT EXISTS (SELECT 1 FROM defs)")
        self.fed: int | None = 0 if empty.fetchone()[0] else None
        """Highest definition id in the search tables; None when they are rebuilt at the end instead."""

    def feed(self) -> None:
        """Add the definitions written since the last call to the search tables (while the workers parse,
        instead of after them)."""
        if self.fed is None:
            return
        top = self.db.execute("SELECT coalesce(max(id), 0) FROM defs").fetchone()[0]
        if top > self.fed:
            self.db.execute(
                "INSERT INTO defs_fts (rowid, qualname) SELECT id, qualname FROM defs WHERE id > ?",
                (self.fed,),
            )
            self.db.execute(
                "INSERT INTO text_fts (rowid, signature, doc) "
                "SELECT id, signature, doc FROM defs WHERE id > ?",
                (self.fed,),
            )
            self.fed = top


BULK_CHECKPOINT_PAGES = 10_000
"""WAL pages between checkpoints during a bulk pass (40 MB; SQLite's default is 1,000): each checkpoint
syncs the file, and a full pass at the default made ~40 of them (~1 s of a pass's wall time)."""


@contextmanager
def bulk(db: sqlite3.Connection) -> Iterator[Bulk]:
    """Write many files without keeping the search tables and name indexes current row by row, then
    build them once (several times faster than triggers and b-tree inserts for a full pass); a first pass
    feeds the search tables as it goes (``Bulk.feed``). Checkpoints are fewer meanwhile."""
    checkpoint = db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    db.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
    db.executescript(
        "DROP TRIGGER IF EXISTS defs_ai; DROP TRIGGER IF EXISTS defs_ad; "
        "DROP INDEX IF EXISTS defs_name; DROP INDEX IF EXISTS defs_name_exact; "
        "DROP INDEX IF EXISTS refs_name;"
    )
    state = Bulk(db)
    if state.fed is not None:  # an empty index: nothing to replace or delete by file while it fills
        db.executescript(
            "DROP INDEX IF EXISTS defs_file; DROP INDEX IF EXISTS refs_file; "
            "DROP INDEX IF EXISTS imports_file;"
        )
    completed = False
    try:
        yield state
        completed = True
    finally:
        if completed and state.fed is not None:
            state.feed()
            db.executescript(FILE_INDEXES + NAME_INDEXES + TRIGGERS)
            db.commit()
        else:
            _finish_bulk(db)
        db.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint)}")
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")  # searches after the pass read no long WAL


def _finish_bulk(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO defs_fts (defs_fts) VALUES ('rebuild')")
    db.execute("INSERT INTO text_fts (text_fts) VALUES ('rebuild')")
    db.executescript(FILE_INDEXES + NAME_INDEXES + TRIGGERS)
    db.commit()


def known_files(db: sqlite3.Connection) -> dict[str, tuple[int, int, int, str]]:
    """path → (id, size, mtime_ns, hash) of every file in the index."""
    return {row[0]: row[1:] for row in db.execute("SELECT path, id, size, mtime_ns, hash FROM files")}


def files_at(db: sqlite3.Connection, rel: str) -> dict[str, tuple[int, int, int, str]]:
    """path → (id, size, mtime_ns, hash) of ``rel`` and every indexed file below it (a directory)."""
    prefix = rel.rstrip("/") + "/"
    rows = db.execute(
        "SELECT path, id, size, mtime_ns, hash FROM files WHERE path = ? OR (path >= ? AND path < ?)",
        (rel, prefix, prefix[:-1] + chr(ord("/") + 1)),
    )
    return {row[0]: row[1:] for row in rows}


def delete_files(db: sqlite3.Connection, file_ids: Iterable[int]) -> None:
    ids = [(file_id,) for file_id in file_ids]
    db.executemany("DELETE FROM defs WHERE file_id = ?", ids)
    db.executemany("DELETE FROM refs WHERE file_id = ?", ids)
    db.executemany("DELETE FROM imports WHERE file_id = ?", ids)
    db.executemany("DELETE FROM files WHERE id = ?", ids)


def touch_file(db: sqlite3.Connection, file_id: int, size: int, mtime_ns: int) -> None:
    """Same content, new stat (a checkout or `touch`): remember the stat so the next pass skips the file."""
    db.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id))


FileRows = tuple[
    str | None,  # language
    str,  # status
    str,  # note
    int,  # lines
    list[tuple[str, str, str, int, int, str, str, str, str, str]],  # defs rows without file_id
    list[tuple[str, str, int]],  # refs rows: name, "line,line,…", count
    list[str],  # imported modules
]
"""One file's extraction as the rows the tables take: plain tuples pickle ~10× faster than dataclasses."""


_DEF_ROW = attrgetter(*(column.name for column in fields(Definition)))
"""``Definition.row`` as a C getter (a tuple of the fields in their order)."""


def file_rows(symbols: FileSymbols) -> FileRows:
    """The rows of ``symbols`` (made in the worker process, so the writer only inserts)."""
    return (
        symbols.language,
        symbols.status,
        symbols.note,
        symbols.lines,
        list(map(_DEF_ROW, symbols.definitions)),
        [(name, ",".join(map(str, lines)), len(lines)) for name, lines in symbols.references.items()],
        list(dict.fromkeys(symbols.imports)),
    )


FileWrite = tuple[str, int, int, str, FileRows, int | None]
"""(path, size, mtime_ns, hash, rows, id of the file's old entry or None) of one file to write."""


def write_file(
    db: sqlite3.Connection,
    rel: str,
    size: int,
    mtime_ns: int,
    digest: str,
    rows: FileRows,
    old_id: int | None,
) -> None:
    """Replace what the index holds for ``rel`` with ``rows``."""
    write_files(db, [(rel, size, mtime_ns, digest, rows, old_id)])


def write_files(db: sqlite3.Connection, writes: Iterable[FileWrite]) -> None:
    """Replace what the index holds for each file with its rows: a statement per file for its entry (its
    id), then one ``executemany`` per table for all the files' definitions, references and imports (a
    worker's batch at a time in a pass, instead of three per file)."""
    writes = list(writes)
    old = [write[5] for write in writes if write[5] is not None]
    if old:
        delete_files(db, old)
    defs: list[tuple[Any, ...]] = []
    refs: list[tuple[Any, ...]] = []
    imports: list[tuple[Any, ...]] = []
    insert = (
        "INSERT INTO files (path, language, size, mtime_ns, hash, status, note, lines) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    for rel, size, mtime_ns, digest, (language, status, note, lines, d, r, i), _old in writes:
        file_id = db.execute(insert, (rel, language, size, mtime_ns, digest, status, note, lines)).lastrowid
        defs += [(file_id, *row) for row in d]
        refs += [(file_id, *row) for row in r]
        imports += [(file_id, module) for module in i]
    if defs:
        db.executemany(
            "INSERT INTO defs (file_id, name, qualname, kind, line, end_line, signature, params, returns, "
            "doc, parent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            defs,
        )
    if refs:
        db.executemany("INSERT INTO refs (file_id, name, lines, count) VALUES (?, ?, ?, ?)", refs)
    if imports:
        db.executemany("INSERT INTO imports (file_id, module) VALUES (?, ?)", imports)


def counts(db: sqlite3.Connection) -> dict[str, int]:
    """Files, symbols and reference occurrences in the index, and files by status."""
    files, symbols = db.execute("SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM defs)").fetchone()
    references = db.execute("SELECT coalesce(sum(count), 0) FROM refs").fetchone()[0]
    by_status = dict(db.execute("SELECT status, count(*) FROM files GROUP BY status").fetchall())
    return {"files": files, "symbols": symbols, "references": references, **by_status}


def skipped_notes(db: sqlite3.Connection) -> dict[str, int]:
    """Why the skipped files were skipped (their notes: binary, over N bytes, unknown language), counted."""
    rows = db.execute("SELECT note, count(*) FROM files WHERE status = 'skipped' GROUP BY note")
    return dict(rows.fetchall())


def file_row(db: sqlite3.Connection, rel: str) -> FileRow | None:
    row = db.execute(
        "SELECT path, language, size, mtime_ns, hash, status, note, lines FROM files WHERE path = ?", (rel,)
    ).fetchone()
    return FileRow(*row) if row else None


def outline(db: sqlite3.Connection, rel: str) -> list[Symbol]:
    """Definitions of one file in source order."""
    rows = db.execute(
        f"SELECT {DEF_COLUMNS} FROM defs d JOIN files f ON f.id = d.file_id WHERE f.path = ? "
        "ORDER BY d.line, d.id",
        (rel,),
    )
    return [Symbol.read(row) for row in rows]


def definitions(db: sqlite3.Connection, name: str | None = None) -> Iterator[Symbol]:
    """Every definition (by path and line), or those named exactly ``name``."""
    where, args = ("WHERE d.name = ?", (name,)) if name is not None else ("", ())
    rows = db.execute(
        f"SELECT {DEF_COLUMNS} FROM defs d JOIN files f ON f.id = d.file_id {where} ORDER BY f.path, d.line",
        args,
    )
    for row in rows:
        yield Symbol.read(row)


def references(db: sqlite3.Connection, name: str, limit: int) -> list[tuple[str, int]]:
    """(path, line) of the uses of ``name`` the index recorded, by path and line, at most ``limit``."""
    found: list[tuple[str, int]] = []
    rows = db.execute(
        "SELECT f.path, r.lines FROM refs r JOIN files f ON f.id = r.file_id "
        "WHERE r.name = ? ORDER BY f.path",
        (name,),
    )
    for path, lines in rows:
        for line in lines.split(","):
            found.append((path, int(line)))
            if len(found) >= limit:
                return found
    return found


def search(
    db: sqlite3.Connection, query: str, limit: int, names: Callable[[str, int], list[str]] | None = None
) -> list[Symbol]:
    """Definitions matching ``query``, best first (``score`` is higher for better hits).

    Equal scores rank definitions outside test code first, then the shallower path. Cheap tiers first,
    each only while the earlier ones found too few: exact name, name prefix (both
    through the name index), substring of a name or qualified name (FTS5 trigram), words of
    signatures and docstrings (FTS5 words, bm25), then a fuzzy subsequence of the name that starts
    anywhere in it (``dbgflag`` finds ``get_debug_flag``), best subsequences first. ``names`` finds those
    subsequences (``fuzzy_names`` with ``db`` by default; ``subsequence.NameBits.best`` gives the same).
    """
    words = _WORD.findall(query[:QUERY_MAX])
    if not words:
        return []
    head = words[0]
    pool = max(limit * 2, 50)
    candidates: dict[tuple[str, int, str], Symbol] = {}
    select = f"SELECT {DEF_COLUMNS} FROM defs d JOIN files f ON f.id = d.file_id "
    fts, text = (
        f"SELECT {DEF_COLUMNS} FROM {table} JOIN defs d ON d.id = {table}.rowid "
        "JOIN files f ON f.id = d.file_id "
        for table in ("defs_fts", "text_fts")
    )

    def add(sql: str, args: tuple[object, ...], base: float) -> None:
        for row in db.execute(sql, args):
            symbol = Symbol.read(row)
            key = (symbol.path, symbol.line, symbol.qualname)
            if key not in candidates:
                symbol.score = base
                candidates[key] = symbol

    if len(words) == 1:
        add(select + "WHERE d.name = ? COLLATE NOCASE LIMIT ?", (head, pool), 0.0)
        if len(candidates) < pool:
            low, high = _prefix_range(head)
            add(
                select + "WHERE d.name >= ? COLLATE NOCASE AND d.name < ? COLLATE NOCASE LIMIT ?",
                (low, high, pool),
                0.0,
            )
        if len(candidates) < pool and len(head) >= 3:  # trigrams need three characters
            add(fts + "WHERE defs_fts MATCH ? LIMIT ?", (_phrase(head), pool), 0.0)
    if len(candidates) < limit:
        match = " AND ".join(_phrase(w) + "*" for w in words)  # words starting so
        add(text + "WHERE text_fts MATCH ? ORDER BY bm25(text_fts, 1.0, 2.0) LIMIT ?", (match, limit), -5.0)
    if len(candidates) < limit and len(words) == 1 and len(head) >= 2:
        fuzzy = fuzzy_names(db, head, pool) if names is None else names(head, pool)
        for batch in _batched(fuzzy, 500):
            marks = ", ".join("?" * len(batch))
            add(select + f"WHERE d.name IN ({marks}) LIMIT ?", (*batch, pool), -10.0)
    hits = list(candidates.values())
    for hit in hits:
        hit.score = round(hit.score + _name_bonus(hit.name, head) + KIND_WEIGHT.get(hit.kind, 1.0), 3)
    # Equal matches: outside tests first (a test's own `class Flask` after src/flask/app.py's).
    hits.sort(key=lambda h: (-h.score, in_tests(h.path), h.path.count("/"), h.path, h.line))
    return hits[:limit]


def in_tests(path: str) -> bool:
    """Whether ``path`` (relative, POSIX) is test code: under a ``test``/``tests``/``testing`` folder, or a
    file named ``test.*``, ``tests.*``, ``test_*``, ``*_test.*``, ``*_tests.*``, ``*.test.*``, ``*.spec.*``
    or ``conftest.py``."""
    *folders, name = path.lower().split("/")
    if any(folder in _TEST_FOLDERS for folder in folders):
        return True
    stem = name.split(".", 1)[0]
    return (
        name == "conftest.py"
        or stem in ("test", "tests")
        or stem.startswith("test_")
        or stem.endswith(("_test", "_tests"))
        or ".test." in name
        or ".spec." in name
    )


def fuzzy_names(db: sqlite3.Connection, query: str, pool: int) -> list[str]:
    """The distinct names holding ``query``'s letters in order (case-insensitively), best ``pool`` first.

    One pass over the name index (distinct names, not rows); SQLite's LIKE keeps only subsequences.
    """
    pattern = "%" + "".join(_like_escape(ch) + "%" for ch in query)
    rows = db.execute("SELECT DISTINCT name FROM defs WHERE name LIKE ? ESCAPE '\\'", (pattern,))
    q = query.lower()
    scored = [(fuzzy_score(name, q), name) for (name,) in rows]
    scored.sort(key=lambda pair: (-pair[0], len(pair[1]), pair[1]))
    return [name for score, name in scored[:pool] if score > 0]


def _batched(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of the names starting with ``prefix`` (case-insensitively, as the NOCASE index orders them)."""
    return prefix, prefix + "\U0010ffff"


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _name_bonus(name: str, query: str) -> float:
    """How well the name itself matches: exact, prefix, word start, substring, then fuzzy subsequence."""
    if name == query:
        return 100.0
    lower, q = name.lower(), query.lower()
    if lower == q:
        return 95.0
    extra = min(len(name) - len(query), 20)
    if lower.startswith(q):
        return 80.0 - extra
    at = lower.find(q)
    if at > 0:
        word_start = name[at - 1] in "_-.$" or (name[at].isupper() and name[at - 1].islower())
        return (60.0 if word_start else 40.0) - extra
    return fuzzy_score(name, q)


def fuzzy_score(name: str, query: str) -> float:
    """Score of ``query`` (lower case) as a subsequence of ``name``; letters that start words count most."""
    score, at = 0.0, 0
    lower = name.lower()
    for ch in query:
        found = lower.find(ch, at)
        if found < 0:
            return 0.0
        starts_word = (
            found == 0 or name[found - 1] in "_-.$" or (name[found].isupper() and name[found - 1].islower())
        )
        score += 3.0 if starts_word else (1.5 if found == at else 0.5)
        at = found + 1
    return min(score, 35.0) - min(len(name) - len(query), 20) * 0.2
