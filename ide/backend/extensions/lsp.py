"""F12, Shift+F12 and hover for the window (``_arbor/lsp/*``); a missing server is a message, not an error.

The language server is given only files read_file may read (the same gate as the agent's tools: a file
outside the workspace, a secret, git's metadata or an excluded file is a message, and never reaches
the server). The answers are the user's: the window shows every location found with its line, as its
viewer shows any file the user opens; nothing of it reaches a model.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ide.protocol import lsp as lp

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def query(method: str, backend: Backend, params: dict[str, Any]) -> BaseModel:
    from ide.codeintel.lsp import LspError, LspGate, LspUnavailable
    from ide.fs import ConfinedFS
    from ide.tools.lsp import proposed_documents

    request = lp.PositionParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    root, path = Path(cwd), Path(request.path)
    session = backend.find_session(request.session_id or "")
    documents = proposed_documents(root, session.changeset if session is not None else None)
    pool = backend.services.lsp(settings).pool
    gate = LspGate(ConfinedFS(root, settings.workspace))
    try:
        if method == lp.LSP_HOVER:
            text = await pool.hover(root, path, request.line, request.column, documents, gate)
            return lp.HoverResult(text=text)
        ask = pool.definition if method == lp.LSP_DEFINITION else pool.references
        found = await ask(root, path, request.line, request.column, documents, gate)
    except (LspUnavailable, LspError) as exc:
        empty = lp.HoverResult if method == lp.LSP_HOVER else lp.LocationsResult
        return empty(message=str(exc))
    texts = await asyncio.to_thread(line_texts, [(loc.path, loc.line) for loc in found], documents)
    return lp.LocationsResult(
        locations=[
            lp.LspLocation(path=str(loc.path), line=loc.line, column=loc.column, text=text)
            for loc, text in zip(found, texts, strict=True)
        ]
    )


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


HANDLERS = {method: functools.partial(query, method) for method in lp.LSP_METHODS}
