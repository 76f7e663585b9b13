"""The workspace's memory for the window's Memory dock: search, keep, delete, export (``_arbor/memory/*``)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler
from ide.protocol import memory as mp

if TYPE_CHECKING:
    from ide.backend.extensions import Backend
    from ide.memory.store import MemoryStore


async def search(backend: Backend, request: mp.MemorySearchParams) -> mp.MemoryList:
    memory = backend.session(request.session_id).memory
    if memory is None:
        return mp.MemoryList(message="Memory is off for this workspace (memory.enabled = false).")
    namespaces = [request.namespace] if request.namespace else None
    reviewed = False if request.unreviewed_only else None
    items = await asyncio.to_thread(
        memory.search, request.query, namespaces, request.limit, reviewed=reviewed
    )
    counted = await _counts(memory)
    return counted.model_copy(
        update={"entries": [mp.MemoryEntry.model_validate(item.as_dict()) for item in items]}
    )


async def delete(backend: Backend, request: mp.MemoryDeleteParams) -> mp.MemoryList:
    return await _change(backend, request.session_id, request.id, "delete")


async def keep(backend: Backend, request: mp.MemoryKeepParams) -> mp.MemoryList:
    return await _change(backend, request.session_id, request.id, "keep")


async def _change(backend: Backend, session_id: str, entry: int, how: str) -> mp.MemoryList:
    """Delete or keep entry #``entry``; the counts after it."""
    memory = backend.session(session_id).memory
    if memory is None or not await asyncio.to_thread(getattr(memory, how), entry):
        raise RequestError.invalid_params({"message": f"there is no memory entry #{entry}"})
    return await _counts(memory)


async def export(backend: Backend, request: mp.MemoryExportParams) -> mp.MemoryExported:
    memory = backend.session(request.session_id).memory
    if memory is None or not os.path.isabs(request.path):
        raise RequestError.invalid_params({"message": "memory is off, or the path is not absolute"})
    entries = await asyncio.to_thread(memory.export)
    try:
        await asyncio.to_thread(Path(request.path).write_text, json.dumps(entries, indent=2))
    except OSError as exc:
        raise RequestError.invalid_params({"message": f"cannot write {request.path}: {exc}"}) from None
    return mp.MemoryExported(path=request.path, entries=len(entries))


async def _counts(memory: MemoryStore) -> mp.MemoryList:
    return mp.MemoryList(
        counts=await asyncio.to_thread(memory.counts),
        unreviewed=await asyncio.to_thread(memory.unreviewed),
    )


HANDLERS = (
    Handler(mp.MEMORY_SEARCH, search),
    Handler(mp.MEMORY_DELETE, delete),
    Handler(mp.MEMORY_EXPORT, export),
    Handler(mp.MEMORY_KEEP, keep),
)
