"""A workspace's index kept current inside the backend: one full pass in a thread, then a file watcher."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ide.codeintel.index.indexer import CodeIndex, IndexStats
from ide.codeintel.index.store import nesting
from ide.protocol import from_record
from ide.protocol.index import (
    IndexState,
    IndexStatus,
    OutlineResult,
    OutlineSymbol,
    SymbolHit,
    SymbolSearchResult,
)
from ide.settings import Settings

log = logging.getLogger(__name__)


class IndexService:
    """Owns the CodeIndex of one workspace for as long as a window or session has it open."""

    def __init__(self, root: Path, settings: Settings, index: CodeIndex | None = None) -> None:
        self.root = root
        self.settings = settings
        self.index = index or CodeIndex.open(settings, root)
        self.state: IndexState = "indexing"
        self.done = 0
        self.total = 0
        self.message: str | None = "starting"
        self.last: IndexStats | None = None
        self.watching = False
        self.updated = asyncio.Event()
        """Set after every pass or update that changed the index (tests and the window wait on it)."""
        self.on_change: Callable[[list[str]], Awaitable[None]] | None = None
        """Called after a pass or a watcher update changed the index, with the absolute paths it saw."""
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._cancel = threading.Event()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"index {self.root}")

    async def _run(self) -> None:
        watcher = asyncio.create_task(self._watch()) if self.settings.index.watch else None
        try:
            self.message = "scanning the workspace"
            self.last = await asyncio.to_thread(self.index.refresh, self._progress, self._cancel)
            self.state, self.message = "ready", None
            self.updated.set()
            await self._changed([])
            log.info("indexed %s: %s", self.root, self.last)
        except Exception as exc:  # reported through status; the backend goes on without an index
            log.exception("indexing %s failed", self.root)
            self.state, self.message = "failed", f"indexing failed: {exc}"
        if watcher is not None:
            await watcher

    async def _changed(self, paths: list[str]) -> None:
        if self.on_change is not None:
            try:
                await self.on_change(paths)
            except Exception:  # a client that went away must not stop the watcher
                log.debug("index change notification failed", exc_info=True)

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.message = f"indexing {done:,} / {total:,} files"

    async def _watch(self) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
            self.message = "not watching files: watchfiles is not installed"
            return
        try:
            async for changes in awatch(
                self.root,
                debounce=self.settings.index.debounce_ms,
                step=min(50, self.settings.index.debounce_ms),
                stop_event=self._stop,
                watch_filter=self._relevant,
                recursive=True,
                ignore_permission_denied=True,
            ):
                self.watching = True
                paths = sorted({path for _change, path in changes})
                started = time.perf_counter()
                update = await asyncio.to_thread(self.index.update_paths, paths)
                if update.parsed or update.removed:
                    log.debug("index update of %d paths in %.3f s", len(paths), time.perf_counter() - started)
                    if self.state == "ready":
                        totals = await asyncio.to_thread(self.index.stats)
                        totals.seconds = self.last.seconds if self.last else 0.0
                        self.last = totals
                    self.updated.set()
                    await self._changed(paths)
        except Exception as exc:  # e.g. out of inotify watches: the index stays, only live updates stop
            log.warning("not watching %s: %s", self.root, exc)
            self.message = f"not watching files for changes: {exc}"

    def _relevant(self, _change: object, path: str) -> bool:
        parts = Path(path).parts
        return ".git" not in parts and "__pycache__" not in parts

    def status(self) -> IndexStatus:
        stats = self.last if self.last is not None else IndexStats()
        return from_record(
            IndexStatus,
            stats,
            state=self.state,
            files_done=self.done,
            files_total=self.total,
            counts=stats.describe() if self.last is not None else None,
            message=self.message,
        )

    def outline(self, path: str) -> OutlineResult:
        """The definitions of one file (absolute or workspace-relative), nested by depth."""
        root = self.index.root
        real = Path(os.path.realpath(root / path))
        if root not in real.parents:
            raise ValueError(f"{path} is outside the workspace {root}")
        rel = real.relative_to(root).as_posix()
        row = self.index.file(rel)
        if row is None:
            return OutlineResult(path=str(real), message=self.index.why_not_indexed(rel, self.state))
        found = self.index.outline(rel)
        symbols = [
            from_record(OutlineSymbol, symbol, depth=level)
            for symbol, level in zip(found, nesting(found), strict=True)
        ]
        message = None if symbols else row.note or "no definitions in this file"
        return OutlineResult(path=str(real), language=row.language, symbols=symbols, message=message)

    def search(self, query: str, limit: int) -> SymbolSearchResult:
        """Symbol search for the window (absolute paths), with the index's state."""
        hits = [
            from_record(SymbolHit, hit, path=str(self.index.root / hit.path))
            for hit in self.index.search(query, limit)
        ]
        return SymbolSearchResult(hits=hits, state=self.state, message=self.message)

    async def close(self) -> None:
        self._stop.set()
        self._cancel.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await asyncio.to_thread(self.index.close)
