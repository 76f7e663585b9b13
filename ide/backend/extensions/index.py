"""The code index for the window: status, one file's outline, symbol search; ``_arbor/index/changed``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler, Hooks
from ide.protocol import index as ix

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def status(backend: Backend, request: ix.IndexStatusParams) -> ix.IndexStatus:
    cwd, settings = backend.workspace(request.cwd)
    return backend.services.index(cwd, settings).status()


async def outline(backend: Backend, request: ix.OutlineParams) -> ix.OutlineResult:
    """The definitions of one file, as the index holds them (the window's Outline dock)."""
    cwd, settings = backend.workspace(request.cwd)
    try:
        return await asyncio.to_thread(backend.services.index(cwd, settings).outline, request.path)
    except ValueError as exc:
        raise RequestError.invalid_params({"message": str(exc)}) from None


async def search(backend: Backend, request: ix.SymbolSearchParams) -> ix.SymbolSearchResult:
    cwd, settings = backend.workspace(request.cwd)
    service = backend.services.index(cwd, settings)
    return await asyncio.to_thread(service.search, request.query, request.limit)


async def changed(backend: Backend, change: ix.IndexChanged) -> None:
    """Tell a client that asked for it (``_meta.arbor.index``); others would have to ignore it."""
    if backend.client_wants("index"):
        await backend.conn.ext_notification(ix.INDEX_CHANGED, change.model_dump(mode="json"))


HANDLERS = (
    Handler(ix.INDEX_STATUS, status),
    Handler(ix.INDEX_OUTLINE, outline),
    Handler(ix.INDEX_SEARCH, search),
)
NOTIFICATIONS = (ix.INDEX_CHANGED,)
HOOKS = Hooks(index_changed=changed)
