"""F12, Shift+F12 and hover for the window (``_arbor/lsp/*``); a missing server is a message, not an error.

The language server is given only files read_file may read (the same gate as the agent's tools: a file
outside the workspace, a secret, git's metadata or an excluded file is a message, and never reaches
the server). A request with ``source="index"`` is answered from the code index by name at once
(``ide/codeintel/lsp/byname.py``), labelled as such, for the window to show while the server works; the
server's answer then replaces it. The answers are the user's: the window shows every location found
with its line, as its viewer shows any file the user opens; nothing of it reaches a model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ide.backend.extensions import Handler
from ide.protocol import lsp as lp

if TYPE_CHECKING:
    from ide.backend.extensions import Backend
    from ide.codeintel.lsp import At, Location, LspGate, LspPool


async def hover(backend: Backend, request: lp.PositionParams) -> lp.HoverResult:
    from ide.codeintel.lsp import At, LspError, LspUnavailable

    root, path, documents, pool, gate = _query(backend, request)
    try:
        text = await pool.hover(At(root, path, request.line, request.column, documents, gate))
    except (LspUnavailable, LspError) as exc:
        return lp.HoverResult(message=str(exc))
    return lp.HoverResult(text=text)


async def definition(backend: Backend, request: lp.PositionParams) -> lp.LocationsResult:
    return await _locations(backend, request, references=False)


async def references(backend: Backend, request: lp.PositionParams) -> lp.LocationsResult:
    return await _locations(backend, request, references=True)


async def _locations(backend: Backend, request: lp.PositionParams, *, references: bool) -> lp.LocationsResult:
    from ide.codeintel.lsp import At, LspError, LspUnavailable

    root, path, documents, pool, gate = _query(backend, request)
    at = At(root, path, request.line, request.column, documents, gate)
    if request.source == "index":
        return await _by_name(backend, request, at, references=references)
    ask = pool.references if references else pool.definition
    try:
        found = await ask(at)
    except (LspUnavailable, LspError) as exc:
        return lp.LocationsResult(message=str(exc))
    return lp.LocationsResult(locations=await _shown(found, documents))


async def _shown(found: list[Location], documents: dict[Path, str]) -> list[lp.LspLocation]:
    texts = await asyncio.to_thread(line_texts, [(loc.path, loc.line) for loc in found], documents)
    return [
        lp.LspLocation(path=str(loc.path), line=loc.line, column=loc.column, text=text)
        for loc, text in zip(found, texts, strict=True)
    ]


async def _by_name(
    backend: Backend, request: lp.PositionParams, at: At, *, references: bool
) -> lp.LocationsResult:
    """The index's answer by name: every definition (and, for references, every recorded use) of the name
    at the position."""
    from ide.codeintel.lsp.byname import definitions_by_name, references_by_name

    cwd, settings = backend.workspace(request.cwd)
    service = backend.services.index(cwd, settings)
    if service.state != "ready" and not await asyncio.to_thread(service.index.file_count):
        return lp.LocationsResult(source="index", message=f"the index is not ready: {service.message}")
    if at.gate is not None and (why := at.gate.refusal(at.path)) is not None:
        return lp.LocationsResult(source="index", message=f"{at.path} is {why}")
    ask = references_by_name if references else definitions_by_name
    name, found = await asyncio.to_thread(ask, service.index, at)
    if name is None:
        return lp.LocationsResult(source="index", message=f"no name at {request.line}:{request.column}")
    return lp.LocationsResult(source="index", name=name, locations=await _shown(found, at.documents or {}))


def _query(
    backend: Backend, request: lp.PositionParams
) -> tuple[Path, Path, dict[Path, str], LspPool, LspGate]:
    """The workspace, the file, the session's proposed texts, the pool and read_file's gate."""
    from ide.codeintel.lsp import LspGate
    from ide.fs import ConfinedFS
    from ide.tools.lsp import proposed_documents

    cwd, settings = backend.workspace(request.cwd)
    root, path = Path(cwd), Path(request.path)
    session = backend.find_session(request.session_id or "")
    documents = proposed_documents(root, session.changeset if session is not None else None)
    pool = backend.services.lsp(settings).pool
    return root, path, documents, pool, LspGate(ConfinedFS(root, settings.workspace))


def line_texts(places: list[tuple[Path, int]], documents: dict[Path, str]) -> list[str]:
    """The text of each (path, line), for a references list (proposed text for changed files)."""
    cache: dict[Path, list[str]] = {}
    texts = []
    for path, line in places:
        if path not in cache:
            try:
                text = documents.get(path) or path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            cache[path] = text.splitlines()
        lines = cache[path]
        texts.append(lines[line - 1].strip()[:200] if 0 < line <= len(lines) else "")
    return texts


HANDLERS = (
    Handler(lp.LSP_DEFINITION, definition),
    Handler(lp.LSP_REFERENCES, references),
    Handler(lp.LSP_HOVER, hover),
)
