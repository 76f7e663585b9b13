"""Keep a workspace's index current: walk, find what changed, parse it in worker processes, store it.

A pass compares each file's size and mtime with the index, hashes the ones that differ (a touched but
unchanged file costs a read, not a parse), parses the rest with tree-sitter in a process pool and writes
the results while the workers go on. ``update_paths`` does the same for a few paths the watcher reports.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path

import ide.codeintel.index.parsing as parsing
import ide.codeintel.index.store as store
from ide.codeintel.index.languages import EXTENSIONS, FILENAMES
from ide.codeintel.index.model import FileSymbols
from ide.codeintel.index.parsing import (
    IN_FLIGHT,
    IN_PROCESS_MAX,
    EarlyPool,
    Job,
    Result,
    index_batch,
    new_pool,
)
from ide.codeintel.index.subsequence import NameBits, handles
from ide.fs import ConfinedFS, ToolError, secret_patterns
from ide.private import private_dir, private_file
from ide.settings import Settings, WorkspaceSettings

log = logging.getLogger(__name__)

BULK_MIN = 500
"""Passes that write this many files rebuild the search table once instead of updating it per row."""
COMMIT_EVERY = 2000

Progress = Callable[[int, int], None]
"""Called with (files examined, files to examine) while a pass runs."""


@dataclass
class IndexStats:
    """What the index holds after a pass, and what the pass did."""

    files: int = 0
    skipped: int = 0
    failed: int = 0
    partial: int = 0
    symbols: int = 0
    references: int = 0
    seconds: float = 0.0
    db_bytes: int = 0
    parsed: int = 0
    removed: int = 0
    unchanged: int = 0
    scanned: int = 0
    """Files of the workspace the index looked at (not ignored, excluded or secret)."""
    not_code: int = 0
    """Skipped because they are in no language the index reads (images, licences, lock files, …)."""
    binary: int = 0
    too_large: int = 0

    def as_dict(self) -> dict[str, int | float]:
        return asdict(self)

    def describe(self) -> str:
        """The file counts in words, the same in ``arbor index`` and the window's status bar."""
        reasons = [
            f"{count:,} {what}"
            for count, what in (
                (self.not_code, "not code"),
                (self.binary, "binary"),
                (self.too_large, "too large"),
            )
            if count
        ]
        text = f"{self.files:,} indexed of {self.scanned:,} files"
        if self.skipped:
            text += f", {self.skipped:,} skipped ({', '.join(reasons) or 'not readable'})"
        if self.failed:
            text += f", {self.failed:,} with parse errors"
        return text


@contextlib.contextmanager
def writer_lock(db_path: Path) -> Iterator[None]:
    """The index file's writer, across processes: two windows (backends) or ``arbor index`` on one folder
    take turns, so one parses and the other finds the files current by their stat (no double work, one
    SQLite writer). Waits for the other writer; a no-op where ``fcntl`` is missing (Windows)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Linux/macOS
        yield
        return
    lock = private_file(private_dir(db_path.parent) / f"{db_path.name}.lock")
    with open(lock, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process writing %s", db_path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def index_path(settings: Settings, root: Path) -> Path:
    """Where the index of ``root`` lives: the workspace's directory in the user data dir."""
    return settings.workspace_data_dir(root) / "index.sqlite"


class CodeIndex:
    """The index of one workspace: passes and updates write, queries read (from any thread)."""

    def __init__(
        self, root: Path, db_path: Path, workspace: WorkspaceSettings | None = None, workers: int = 0
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.db_path = db_path
        self.workspace = ConfinedFS(self.root, workspace or WorkspaceSettings())
        cpus = os.cpu_count() or 1
        # More parser processes than cores only adds memory and switching (index.workers = 48 on 2 cores).
        self.workers = min(workers or cpus, cpus)
        self.generation = 0
        """Bumped whenever a pass or update changes the index (caches such as the repo map key on it)."""
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._names_lock = threading.Lock()
        self._names: NameBits | None = None
        self._names_generation = -1
        self._fuzzy_generation = -1
        with writer_lock(db_path):
            self._writer = store.connect(db_path)
            self._forget_secrets()
        self._seen_version = self._data_version()

    def _forget_secrets(self) -> None:
        """Drop what an earlier pass indexed from files the secret list names now (it grew since: a new
        default, the user's or a repository's pattern), before any query can read a line of them; the
        next pass would only drop them after its walk."""
        patterns = "\n".join(secret_patterns(self.workspace.settings.secrets))
        row = self._writer.execute("SELECT value FROM meta WHERE key = 'secrets'").fetchone()
        if row is not None and row[0] == patterns:
            return
        known = store.known_files(self._writer)
        store.delete_files(
            self._writer,
            [entry[0] for rel, entry in known.items() if self.workspace.is_secret(self.root / rel)],
        )
        self._writer.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('secrets', ?)", (patterns,))
        self._writer.commit()

    @classmethod
    def open(cls, settings: Settings, root: Path) -> CodeIndex:
        """The index of ``root`` in the user data dir, with the workspace and index settings."""
        return cls(root, index_path(settings, root), settings.workspace, settings.index.workers)

    def close(self) -> None:
        with self._write_lock:
            self._writer.close()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's read connection (WAL: reads never wait for a running pass)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.db_path, timeout=30, check_same_thread=False)
            db.execute("PRAGMA query_only=1")
            self._local.db = db
        return db

    # Writing

    def refresh(self, progress: Progress | None = None, cancel: threading.Event | None = None) -> IndexStats:
        """Bring the whole index up to date with the workspace on disk."""
        started = time.perf_counter()
        with self._write_lock, writer_lock(self.db_path):
            self._follow()
            known = store.known_files(self._writer)
            jobs: list[Job] = []
            stats: dict[str, os.stat_result] = {}
            seen: set[str] = set()
            early = EarlyPool(str(self.root), self.workers, self.workspace.settings.max_file_bytes)
            with contextlib.closing(early):
                parsed, unchanged, gone = self._refresh(known, jobs, stats, seen, early, progress, cancel)
                if parsed or gone:
                    self.generation += 1
                result = self.stats()
        result.seconds = round(time.perf_counter() - started, 3)
        result.parsed, result.removed, result.unchanged = parsed, len(gone), unchanged
        return result

    def _refresh(
        self,
        known: dict[str, tuple[int, int, int, str]],
        jobs: list[Job],
        stats: dict[str, os.stat_result],
        seen: set[str],
        early: EarlyPool,
        progress: Progress | None,
        cancel: threading.Event | None,
    ) -> tuple[int, int, list[int]]:
        unknown = scanned = same = 0
        for rel, entry in self.workspace.scan():
            scanned += 1
            language = _language_by_name(rel)
            if language is None:
                unknown += 1
                continue
            seen.add(rel)
            try:
                stat = entry.stat()
            except OSError:
                continue
            old = known.get(rel)
            if old is not None and old[1] == stat.st_size and old[2] == stat.st_mtime_ns:
                same += 1
                continue
            stats[rel] = stat
            job = Job(rel, language or None, old[3] if old else "")
            jobs.append(job)
            early.add(job, stat.st_size)  # the workers start on it while the walk goes on
        gone = [known[rel][0] for rel in known.keys() - seen]
        store.delete_files(self._writer, gone)
        self._writer.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [("unknown_files", str(unknown)), ("scanned_files", str(scanned))],
        )
        self._writer.commit()
        # Progress counts every file of the workspace: the ones not to read again are done already.
        ahead = scanned - len(jobs)
        overall = None if progress is None else lambda done, _total: progress(ahead + done, scanned)
        parsed, unchanged = self._run(jobs, known, stats, overall, cancel, early)
        return parsed, unchanged + same, gone

    def update_paths(self, paths: Iterable[str | Path]) -> IndexStats:
        """Re-index the given files or directories (absolute or relative): changed, new, renamed, deleted.

        Returns what the update did (parsed, removed, unchanged, seconds), not the index totals: counting
        them costs more than a one-file update.
        """
        started = time.perf_counter()
        with self._write_lock, writer_lock(self.db_path):
            self._follow()
            known: dict[str, tuple[int, int, int, str]] = {}
            jobs: list[Job] = []
            stats: dict[str, os.stat_result] = {}
            gone: list[int] = []
            for path in dict.fromkeys(Path(p) if Path(p).is_absolute() else self.root / p for p in paths):
                if not self.workspace.contains(path.parent) or path == self.root:
                    continue
                rel = path.relative_to(self.root).as_posix()
                indexed = store.files_at(self._writer, rel)  # the file, or all below a directory
                known.update(indexed)
                present = self._present(path, rel)
                gone.extend(row[0] for old_rel, row in indexed.items() if old_rel not in present)
                for file_rel, stat in present.items():
                    old = indexed.get(file_rel)
                    if old is not None and old[1] == stat.st_size and old[2] == stat.st_mtime_ns:
                        continue
                    stats[file_rel] = stat
                    jobs.append(Job(file_rel, _language_by_name(file_rel) or None, old[3] if old else ""))
            store.delete_files(self._writer, gone)
            added = sum(1 for job in jobs if job.rel not in known)
            if added or gone:  # keep "indexed of N files" true between full passes
                self._writer.execute(
                    "UPDATE meta SET value = max(0, CAST(value AS INTEGER) + ?) WHERE key = 'scanned_files'",
                    (added - len(gone),),
                )
            self._writer.commit()
            parsed, unchanged = self._run(jobs, known, stats, None, None)
            if parsed or gone:
                self.generation += 1
        seconds = round(time.perf_counter() - started, 3)
        return IndexStats(seconds=seconds, parsed=parsed, removed=len(gone), unchanged=unchanged)

    def _data_version(self) -> int:
        return int(self._writer.execute("PRAGMA data_version").fetchone()[0])

    def _follow(self) -> None:
        """Another process wrote the index since we last looked: caches keyed on the generation go."""
        version = self._data_version()
        if version != self._seen_version:
            self._seen_version = version
            self.generation += 1

    def _present(self, path: Path, rel: str) -> dict[str, os.stat_result]:
        """Indexable files at ``path`` now: the file itself, or every file under a directory."""
        if path.is_dir() and not path.is_symlink():
            found = {}
            for file_rel, entry in self.workspace.scan(path):
                if _language_by_name(file_rel) is not None:
                    try:
                        found[file_rel] = entry.stat()
                    except OSError:
                        continue
            return found
        if not path.is_file() or not self._readable(rel) or _language_by_name(rel) is None:
            return {}
        try:
            return {rel: path.stat()}
        except OSError:
            return {}

    def _readable(self, rel: str) -> bool:
        """Whether read_file would read ``rel``: the walk's rules for one path the watcher reports (a
        symlink that leads outside or to a secret, a secret, an excluded or gitignored file are not)."""
        try:
            real = self.workspace.resolve(rel)
        except ToolError:
            return False
        return not self.workspace.is_ignored(self.root / rel) and not self.workspace.is_ignored(real)

    def _run(
        self,
        jobs: list[Job],
        known: dict[str, tuple[int, int, int, str]],
        stats: dict[str, os.stat_result],
        progress: Progress | None,
        cancel: threading.Event | None,
        early: EarlyPool | None = None,
    ) -> tuple[int, int]:
        # A big pass rebuilds the search tables once at its end instead of row by row.
        with store.bulk(self._writer) if len(jobs) >= BULK_MIN else contextlib.nullcontext() as bulk:
            parsed = unchanged = done = 0
            total = len(jobs)
            if progress is not None:
                progress(0, total)
            max_bytes = self.workspace.settings.max_file_bytes
            big = [job for job in jobs if stats[job.rel].st_size > max_bytes]
            for job in big:
                stat = stats[job.rel]
                old = known.get(job.rel)
                note = f"over {max_bytes} bytes (workspace.max_file_bytes)"
                symbols = store.file_rows(FileSymbols(language=job.language, status="skipped", note=note))
                store.write_file(
                    self._writer, job.rel, stat.st_size, stat.st_mtime_ns, "", symbols, old and old[0]
                )
            done += len(big)
            small = [job for job in jobs if stats[job.rel].st_size <= max_bytes]
            for results in self._parse(small, stats, cancel, early):
                writes: list[store.FileWrite] = []  # a worker's batch, written together
                for rel, size, mtime_ns, digest, symbols in results:
                    old = known.get(rel)
                    if symbols is None and old is not None:
                        store.touch_file(self._writer, old[0], size, mtime_ns)
                        unchanged += 1
                    elif symbols is not None:
                        writes.append((rel, size, mtime_ns, digest, symbols, old and old[0]))
                store.write_files(self._writer, writes)
                parsed += len(writes)
                before, done = done, done + len(results)
                if done // COMMIT_EVERY != before // COMMIT_EVERY:
                    if bulk is not None:
                        bulk.feed()
                    self._writer.commit()
                if progress is not None:
                    progress(done, total)
            self._writer.commit()
            return parsed, unchanged

    def _parse(
        self,
        jobs: list[Job],
        stats: dict[str, os.stat_result],
        cancel: threading.Event | None,
        early: EarlyPool | None = None,
    ) -> Iterator[list[Result]]:
        root = str(self.root)
        if early is not None and early.pool is not None:  # the walk started the workers
            left = yield from self._parse_in_pool(root, early.rest(), cancel, early)
        else:
            left = list(parsing.batches(jobs, stats))
            if len(jobs) >= IN_PROCESS_MAX and self.workers > 1:
                left = yield from self._parse_in_pool(root, left, cancel)
        for batch in left:
            if cancel is not None and cancel.is_set():
                return
            yield index_batch(root, batch)

    def _parse_in_pool(
        self,
        root: str,
        batches: list[list[Job]],
        cancel: threading.Event | None,
        early: EarlyPool | None = None,
    ) -> Generator[list[Result], None, list[list[Job]]]:
        """Parse in worker processes (``early``'s, with the batches it sent, or new ones); returns the
        batches left to parse here if the pool broke (workers cannot start when the main module cannot be
        imported again, e.g. a script on stdin)."""
        pending: dict[Future[list[Result]], list[Job]] = {} if early is None else early.pending
        queue = list(reversed(batches))
        with new_pool(self.workers) if early is None or early.pool is None else early.pool as pool:
            try:
                while queue or pending:
                    while queue and len(pending) < self.workers * IN_FLIGHT:
                        batch = queue.pop()
                        pending[pool.submit(index_batch, root, batch)] = batch
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        results = future.result()  # raises BrokenProcessPool with its batch still pending
                        del pending[future]
                        yield results
                    if cancel is not None and cancel.is_set():
                        return []
            except BrokenProcessPool:
                log.warning("index worker processes failed to start; parsing in this process")
                return [*pending.values(), *reversed(queue)]
            finally:
                for future in pending:
                    future.cancel()
        return []

    # Reading

    def stats(self) -> IndexStats:
        db = self._writer if self._write_lock.locked() else self.db
        counts = store.counts(db)
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE '%_files'").fetchall())
        unknown = int(meta.get("unknown_files", 0))
        notes = store.skipped_notes(db)
        return IndexStats(
            files=counts["files"] - counts.get("skipped", 0),
            skipped=counts.get("skipped", 0) + unknown,
            scanned=int(meta.get("scanned_files", 0)),
            not_code=unknown + notes.get("unknown language", 0),
            binary=notes.get("binary", 0),
            too_large=sum(n for note, n in notes.items() if note.startswith("over ")),
            failed=counts.get("failed", 0) + counts.get("partial", 0),
            partial=counts.get("partial", 0),
            symbols=counts["symbols"],
            references=counts["references"],
            db_bytes=sum(
                os.path.getsize(f"{self.db_path}{suffix}")
                for suffix in ("", "-wal")
                if os.path.exists(f"{self.db_path}{suffix}")
            ),
        )

    def why_not_indexed(self, rel: str, state: str = "ready") -> str:
        """Why ``rel`` has no entry, in words for the window."""
        path = self.root / rel
        if not path.is_file():
            return f"{rel} is not a file on disk"
        if self.workspace.contains(path) and self.workspace.is_secret(path):
            return f"{rel} is a secret file (workspace.secrets): never indexed"
        if self.workspace.is_ignored(path):
            return f"{rel} is excluded (.gitignore or workspace.exclude)"
        if _language_by_name(rel) is None:
            return f"{rel} is not in a language the index reads"
        if state == "indexing":
            return f"{rel} is not indexed yet"
        return f"{rel} is not indexed yet; it is picked up on the next change or pass"

    def search(self, query: str, limit: int = 50) -> list[store.Symbol]:
        return store.search(self.db, query, limit, self._fuzzy_names)

    def _fuzzy_names(self, query: str, pool: int) -> list[str]:
        """The fuzzy tier's names: from the names' bit sets when they are current, else from SQL (the same
        names either way)."""
        names = self._name_bits() if handles(query) else None
        return store.fuzzy_names(self.db, query, pool) if names is None else names.best(query, pool)

    def _name_bits(self) -> NameBits | None:
        """The distinct names as bit sets for this generation, built at its second fuzzy search (one search,
        as ``arbor symbols`` makes, is cheaper in SQL than building them); none while a pass writes."""
        if self._write_lock.locked():
            return None
        with self._names_lock:
            generation = self.generation
            if self._names is not None and self._names_generation == generation:
                return self._names
            if self._fuzzy_generation != generation:
                self._fuzzy_generation = generation
                return None
            names = NameBits(row[0] for row in self.db.execute("SELECT DISTINCT name FROM defs"))
            self._names, self._names_generation = names, generation
            return names

    def outline(self, rel: str) -> list[store.Symbol]:
        return store.outline(self.db, rel)

    def file_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM files").fetchone()[0])

    def paths(self, suffixes: tuple[str, ...]) -> list[str]:
        """Indexed paths ending with one of ``suffixes`` (lower-case, e.g. ``(".md", ".rst")``)."""
        return [
            row[0] for row in self.db.execute("SELECT path FROM files") if row[0].lower().endswith(suffixes)
        ]

    def file(self, rel: str) -> store.FileRow | None:
        return store.file_row(self.db, rel)

    def definitions(self, name: str | None = None) -> Iterator[store.Symbol]:
        return store.definitions(self.db, name)

    def references(self, name: str, limit: int = 200) -> list[tuple[str, int]]:
        return store.references(self.db, name, limit)


def _language_by_name(rel: str) -> str | None:
    """The language by file name; "" for a file with no suffix (its #! line decides), None to skip it."""
    name = rel.rsplit("/", 1)[-1]
    if name in FILENAMES:
        return FILENAMES[name]
    dot = name.rfind(".")
    if dot <= 0:
        return ""
    return EXTENSIONS.get(name[dot:].lower())
