"""The code index for the window: status, one file's outline, symbol search; ``_arbor/index/changed``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from acp import RequestError
from pydantic import BaseModel

from ide.protocol import index as ix

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def status(backend: Backend, params: dict[str, Any]) -> BaseModel:
    request = ix.IndexStatusParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    return backend.services.index(cwd, settings).status()


async def outline(backend: Backend, params: dict[str, Any]) -> BaseModel:
    """The definitions of one file, as the index holds them (the window's Outline dock)."""
    request = ix.OutlineParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    try:
        return await asyncio.to_thread(backend.services.index(cwd, settings).outline, request.path)
    except ValueError as exc:
        raise RequestError.invalid_params({"message": str(exc)}) from None


async def search(backend: Backend, params: dict[str, Any]) -> BaseModel:
    request = ix.SymbolSearchParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    service = backend.services.index(cwd, settings)
    return await asyncio.to_thread(service.search, request.query, request.limit)


HANDLERS = {ix.INDEX_STATUS: status, ix.INDEX_OUTLINE: outline, ix.INDEX_SEARCH: search}
NOTIFICATIONS = (ix.INDEX_CHANGED,)
