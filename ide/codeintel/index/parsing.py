"""What a pass's worker processes run (read, hash and parse a batch of files, giving the rows to write),
and the pool a full pass starts while its walk goes on."""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import ide.codeintel.index.store as store
from ide.codeintel.index.languages import TAGGED, detect_language
from ide.codeintel.index.model import FileSymbols
from ide.fs import is_binary

IN_PROCESS_MAX = 24
"""Passes with fewer files to parse than this skip the process pool (starting it costs ~0.3 s)."""
BATCH_BYTES = 1_500_000
IN_FLIGHT = 4
"""Batches sent ahead per worker: enough that none waits while the writer stores a batch or feeds the
search tables (with two, the workers idled ~8 % of a pass)."""


@dataclass(frozen=True, slots=True)
class Job:
    rel: str
    language: str | None
    known_hash: str


# (rel, size, mtime_ns, hash, symbols or None when the content hash is unchanged)
Result = tuple[str, int, int, str, store.FileRows | None]


PRELOAD = ["ide.codeintel.index.preload"]
"""What the fork server imports before it forks a worker (it starts with the first pool of the process)."""


def _children_without_cwd() -> None:
    """Start multiprocessing's children with ``-P``, as if this process had been started with it.

    multiprocessing starts its fork server, its resource tracker and spawned workers as ``python -c ...``
    with this process's flags, in this process's working directory; ``-c`` puts that directory first on
    ``sys.path`` before the child imports ``multiprocessing`` itself. Arbor runs in the user's repository
    (``arbor index .``, ``arbor acp`` started by an editor in the project), so a repository's
    ``multiprocessing/`` package ran there, untrusted (docs/traps.md). Patched once, for this process."""
    from multiprocessing import util

    flags = util._args_from_interpreter_flags
    if getattr(flags, "arbor_safe_path", False) or getattr(sys, "frozen", False):
        return

    def with_safe_path() -> list[str]:
        args = flags()
        return args if "-P" in args or "-I" in args else ["-P", *args]

    with_safe_path.arbor_safe_path = True  # type: ignore[attr-defined]
    util._args_from_interpreter_flags = with_safe_path


def new_pool(workers: int) -> ProcessPoolExecutor:
    _children_without_cwd()
    if sys.platform == "linux":
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
    else:  # pragma: no cover - spawn: each worker imports and compiles for itself
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_in_worker)


_worker = False
"""Whether this process is a pool's worker (``_in_worker`` ran in it)."""


def _in_worker() -> None:
    global _worker
    _worker = True


class EarlyPool:
    """A full pass's workers, started by its walk: once the walk has found enough files to parse for a
    pool, each batch it fills goes to the workers (a few at a time, as the indexer sends them), so they
    parse while the walk goes on instead of after it; the pass then takes the rest."""

    def __init__(self, root: str, workers: int, max_bytes: int) -> None:
        self.root, self.workers, self.max_bytes = root, workers, max_bytes
        self.pool: ProcessPoolExecutor | None = None
        self.pending: dict[Future[list[Result]], list[Job]] = {}
        """Every batch sent (its results wait for the walk's end)."""
        self.running: list[Future[list[Result]]] = []
        self.queue: list[list[Job]] = []
        self.batch: list[Job] = []
        self.size = self.count = 0
        self.broken = False

    def add(self, job: Job, size: int) -> None:
        if size > self.max_bytes or self.workers < 2:
            return  # written without parsing, as the indexer does
        self.batch.append(job)
        self.count += 1
        self.size += size
        if self.size < BATCH_BYTES and len(self.batch) < 64:  # as batches() cuts them
            return  # no batch to send (asking the workers' futures at every file cost ~0.25 s a pass)
        self.queue.append(self.batch)
        self.batch, self.size = [], 0
        if self.count < IN_PROCESS_MAX or self.broken:
            return
        if self.pool is None:
            self.pool = new_pool(self.workers)
        self.running = [future for future in self.running if not future.done()]
        while self.queue and len(self.running) < self.workers * IN_FLIGHT:
            batch = self.queue.pop(0)
            try:
                future = self.pool.submit(index_batch, self.root, batch)
            except BrokenProcessPool:  # the indexer finds it broken and parses here
                self.queue.insert(0, batch)
                self.broken = True
                return
            self.pending[future] = batch
            self.running.append(future)

    def rest(self) -> list[list[Job]]:
        """The batches not sent yet, in order."""
        return [*self.queue, self.batch] if self.batch else self.queue

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def batches(jobs: list[Job], stats: dict[str, os.stat_result]) -> Iterator[list[Job]]:
    batch: list[Job] = []
    size = 0
    for job in jobs:
        batch.append(job)
        size += stats[job.rel].st_size
        if size >= BATCH_BYTES or len(batch) >= 64:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def index_batch(root: str, jobs: list[Job]) -> list[Result]:
    """Read, hash and parse some files (in a worker process); never raises for a bad file.

    A worker does it without the cyclic garbage collector: what a batch makes (nodes, rows, strings)
    holds no cycles and goes by its reference counts, and the collector's runs over it were ~2 % of the
    workers' CPU. It runs again after the batch (here, in the calling process, it is left alone)."""
    if not _worker:
        return _index_batch(root, jobs)
    gc.disable()
    try:
        return _index_batch(root, jobs)
    finally:
        gc.enable()


def _index_batch(root: str, jobs: list[Job]) -> list[Result]:
    results: list[Result] = []
    for job in jobs:
        path = os.path.join(root, job.rel)
        try:
            stat = os.stat(path)
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            symbols = store.file_rows(
                FileSymbols(language=job.language, status="failed", note=f"unreadable: {exc.strerror}")
            )
            results.append((job.rel, 0, 0, "", symbols))
            continue
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        if digest == job.known_hash:
            results.append((job.rel, stat.st_size, stat.st_mtime_ns, digest, None))
            continue
        results.append(
            (job.rel, stat.st_size, stat.st_mtime_ns, digest, store.file_rows(file_symbols(job, data)))
        )
    return results


def file_symbols(job: Job, data: bytes) -> FileSymbols:
    from ide.codeintel.index.extract import extract

    language = job.language or detect_language(job.rel, data[:256])
    if is_binary(data):
        return FileSymbols(language=language, status="skipped", note="binary")
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if language is None:
        return FileSymbols(language=None, status="skipped", note="unknown language", lines=lines)
    if language not in TAGGED:
        return FileSymbols(language=language, note="file-level entry", lines=lines)
    try:
        return extract(data, language)
    except Exception as exc:  # a parser or query bug must not stop the pass
        return FileSymbols(language=language, status="failed", note=f"parser error: {exc}", lines=lines)
