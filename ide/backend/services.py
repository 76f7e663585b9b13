"""Per-workspace services — code index, language servers, memory, checkpointer, session and batch stores —
made once and shared by the ACP agent, ``arbor mcp`` and (through the ACP agent) ``arbor run``.

:class:`Services` owns everything one backend process has opened and closes it; :meth:`Services.open`
gives the :class:`WorkspaceServices` of one workspace, whose :meth:`~WorkspaceServices.toolbox` is how
a session, a run or the MCP server gets the agent's tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.backend.store import SessionStore
from ide.private import private_file
from ide.settings import Settings

if TYPE_CHECKING:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from ide.changes import BatchStore, ChangeSet
    from ide.codeintel.index.service import IndexService
    from ide.codeintel.lsp import LspBridge
    from ide.memory.store import MemoryStore
    from ide.protocol.index import IndexChanged
    from ide.tools import Toolbox, ToolServices, ToolSpec

log = logging.getLogger(__name__)

IndexListener = Callable[["IndexChanged"], Awaitable[None]]
"""Told when a workspace's index changed (a pass finished, or the watcher re-indexed files)."""


@dataclass
class WorkspaceServices:
    """What a workspace's sessions and runs share. Made by :meth:`Services.open`."""

    cwd: str
    settings: Settings
    store: SessionStore
    batches: BatchStore
    index: IndexService
    lsp: LspBridge
    memory: MemoryStore | None
    checkpointer: AsyncSqliteSaver | None = None
    """LangGraph's checkpointer of the workspace's sessions (None where nothing is kept: ``arbor mcp``)."""

    def tools(self, extra: Sequence[ToolSpec] = (), memory: MemoryStore | bool | None = True) -> ToolServices:
        """The services the agent's tools may use, plus ``extra`` (MCP servers' tools); ``memory`` replaces
        the workspace's memory (a session's own view of it), False leaves it out."""
        from ide.tools import ToolServices

        kept = self.memory if memory is True else (memory or None)
        return ToolServices(index=self.index.index, lsp=self.lsp, memory=kept, extra=tuple(extra))

    def toolbox(
        self,
        changeset: ChangeSet | None = None,
        *,
        extra: Sequence[ToolSpec] = (),
        read_only: bool = False,
    ) -> Toolbox:
        """The agent's tools over the workspace as ``changeset`` leaves it (see ``ide.tools.toolbox``)."""
        from ide.tools import toolbox

        return toolbox(Path(self.cwd), self.settings, changeset, self.tools(extra), read_only=read_only)


class Services:
    """Everything one backend process opened, by workspace and settings, closed together."""

    def __init__(self, on_index_change: IndexListener | None = None) -> None:
        self.on_index_change = on_index_change
        self._stores: dict[Path, SessionStore] = {}
        self._checkpointers: dict[Path, tuple[aiosqlite.Connection, AsyncSqliteSaver]] = {}
        self._indexes: dict[str, IndexService] = {}
        self._lsp: dict[str, LspBridge] = {}
        """Language-server pools by their settings: a trusted workspace's servers never serve another."""
        self._memories: dict[str, MemoryStore | None] = {}
        self._batches: dict[Path, BatchStore] = {}
        self._seen: set[str] = set()
        self._opening = asyncio.Lock()
        """Held while a memory or checkpoint database opens: two sessions opening the same workspace at
        once would each open one, and the one not kept would never be closed (its thread kept the
        process alive after stdin closed)."""

    def store(self, settings: Settings) -> SessionStore:
        """The session store of ``settings``' data dir."""
        data_dir = settings.resolved_data_dir()
        if data_dir not in self._stores:
            self._stores[data_dir] = SessionStore(data_dir)
        return self._stores[data_dir]

    def batches(self, cwd: str, settings: Settings) -> BatchStore:
        """Where the workspace's applied batches (checkpoints for Roll back) are kept: one store per
        workspace, the same for its sessions' Apply, Roll back, the history and crash recovery."""
        from ide.changes import BatchStore

        directory = self.store(settings).workspace_dir(cwd)
        if directory not in self._batches:
            self._batches[directory] = BatchStore(directory)
        return self._batches[directory]

    async def open(self, cwd: str, settings: Settings, *, sessions: bool = True) -> WorkspaceServices:
        """The workspace's services, started on first use. The first time a workspace is seen, scratch
        worktrees a crashed backend left are removed and a half-applied batch is finished or put back.

        ``sessions=False`` is for a process that keeps no sessions (``arbor mcp``): no checkpointer, and
        no recovery of leftovers, which a backend running beside it may still own."""
        if sessions and cwd not in self._seen:
            self._seen.add(cwd)
            await self._recover(cwd, settings)
        store = self.store(settings)
        return WorkspaceServices(
            cwd=cwd,
            settings=settings,
            store=store,
            batches=self.batches(cwd, settings),
            index=self.index(cwd, settings),
            lsp=self.lsp(settings),
            memory=await self.memory(cwd, settings),
            checkpointer=await self._checkpointer(store, cwd) if sessions else None,
        )

    async def _recover(self, cwd: str, settings: Settings) -> None:
        from ide.changes import prune_stale_worktrees
        from ide.changes.rollback import recover_batches

        await asyncio.to_thread(prune_stale_worktrees, Path(cwd))
        recovered = await asyncio.to_thread(recover_batches, Path(cwd), self.batches(cwd, settings))
        if recovered:
            log.warning("recovered interrupted Apply batches in %s: %s", cwd, ", ".join(recovered))

    def index(self, cwd: str, settings: Settings) -> IndexService:
        """The workspace's index service, started (a pass in the background, then watching) on first use."""
        from ide.codeintel.index.service import IndexService

        real = os.path.realpath(cwd)
        service = self._indexes.get(real)
        if service is None:
            service = self._indexes[real] = IndexService(Path(real), settings)

            async def changed(paths: list[str], service: IndexService = service) -> None:
                from ide.protocol.index import IndexChanged

                if self.on_index_change is not None:
                    await self.on_index_change(IndexChanged(cwd=real, paths=paths, status=service.status()))

            service.on_change = changed
            service.start()
        return service

    def lsp(self, settings: Settings) -> LspBridge:
        """The language-server pool of ``settings`` (servers start on the first query that needs them)."""
        from ide.codeintel.lsp import LspBridge, LspPool

        key = settings.lsp.model_dump_json()
        if key not in self._lsp:
            self._lsp[key] = LspBridge(LspPool(settings.lsp), asyncio.get_running_loop())
        return self._lsp[key]

    async def memory(self, cwd: str, settings: Settings) -> MemoryStore | None:
        """The workspace's memory (shared by its sessions), or None when it is off or cannot open."""
        from ide.memory import open_memory

        async with self._opening:
            if cwd not in self._memories:
                try:
                    self._memories[cwd] = await asyncio.to_thread(open_memory, Path(cwd), settings)
                except (OSError, ValueError, sqlite3.Error) as exc:
                    log.warning("memory is off for %s: %s", cwd, exc)
                    self._memories[cwd] = None
        return self._memories[cwd]

    async def _checkpointer(self, store: SessionStore, cwd: str) -> AsyncSqliteSaver:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = store.checkpoint_path(cwd)
        async with self._opening:
            if path not in self._checkpointers:
                conn = await aiosqlite.connect(private_file(path))
                saver = AsyncSqliteSaver(conn)
                await saver.setup()
                self._checkpointers[path] = (conn, saver)
        return self._checkpointers[path][1]

    async def close(self) -> None:
        """Stop the indexes and language servers, close the checkpoint, session and memory databases."""
        for service in self._indexes.values():
            await service.close()
        for bridge in self._lsp.values():
            await bridge.pool.close()
        self._indexes.clear()
        for conn, _saver in self._checkpointers.values():
            with contextlib.suppress(Exception):
                await conn.close()
        self._checkpointers.clear()
        for store in self._stores.values():
            store.close()
        for memory in self._memories.values():
            if memory is not None:
                memory.close()


KEPT_CHECKPOINTS = 2
"""Checkpoints kept per conversation thread: LangGraph saves the whole conversation at every step, and only
the latest is ever read (to go on with the conversation, or a plan). A 200-turn session kept 1,400 of them,
359 MB, before they were pruned."""


async def prune_checkpoints(saver: AsyncSqliteSaver, thread_ids: Sequence[str]) -> None:
    """Drop all but the latest KEPT_CHECKPOINTS checkpoints (and their pending writes) of ``thread_ids``."""
    async with saver.lock:
        for thread_id in thread_ids:
            await saver.conn.execute(
                "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN (SELECT checkpoint_id "
                "FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT ?)",
                (thread_id, thread_id, KEPT_CHECKPOINTS),
            )
            await saver.conn.execute(
                "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN "
                "(SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?)",
                (thread_id, thread_id),
            )
        await saver.conn.commit()


def trust_notice(resolved: Any) -> str | None:
    """What the first turn tells any ACP client about settings held back until the workspace is trusted."""
    if not resolved.held_back:
        return None
    lines = [
        f"This workspace's .arbor/config.toml asks for {len(resolved.held_back)} setting(s) that run "
        "commands, reach other hosts or widen what I read; Arbor holds them back until you trust the "
        f"workspace (Arbor's window asks, or run: arbor trust {resolved.workspace}):"
    ]
    lines.extend(f"- {item.describe()}" for item in resolved.held_back)
    return "\n".join(lines)
