"""Wire models of the code index extensions (``_arbor/index/*``): status, a file's outline, symbol search.

Paths on the wire are absolute; lines are 1-based, as editors show them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ide.protocol.method import Method, Notification
from ide.protocol.wire import WireModel

IndexState = Literal["indexing", "ready", "failed"]


class IndexStatusParams(WireModel):
    """Asking for the status also starts indexing ``cwd`` (and watching it) if nothing has yet."""

    cwd: str = Field(description="Absolute path of the workspace")


class IndexStatus(WireModel):
    state: IndexState
    files_done: int = Field(0, description="Files examined so far in the current (or last) pass")
    files_total: int = Field(0, description="Files to examine in the current (or last) pass")
    files: int = Field(0, description="Files in the index")
    scanned: int = Field(0, description="Files of the workspace the index looked at (not ignored or secret)")
    counts: str | None = Field(None, description="The file counts in words, as `arbor index` prints them")
    symbols: int = 0
    references: int = 0
    skipped: int = 0
    failed: int = 0
    seconds: float = Field(0.0, description="Duration of the last completed pass")
    message: str | None = Field(None, description="Why indexing failed, or what it is doing")


class OutlineParams(WireModel):
    cwd: str
    path: str = Field(description="File path, absolute or relative to cwd")


class OutlineSymbol(WireModel):
    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    signature: str = ""
    doc: str = ""
    depth: int = Field(0, description="Nesting depth: 0 for top-level definitions")


class OutlineResult(WireModel):
    path: str
    language: str | None = None
    symbols: list[OutlineSymbol] = Field(default_factory=list)
    message: str | None = Field(None, description="Why there is no outline (not indexed yet, excluded, …)")


class SymbolSearchParams(WireModel):
    cwd: str
    query: str
    limit: int = Field(50, ge=1, le=500)


class SymbolHit(WireModel):
    name: str
    qualname: str
    kind: str
    path: str = Field(description="Absolute path")
    line: int
    signature: str = ""
    score: float = Field(description="Higher is better")


class SymbolSearchResult(WireModel):
    hits: list[SymbolHit] = Field(default_factory=list)
    state: IndexState = "ready"
    message: str | None = None


class IndexChanged(WireModel):
    """``_arbor/index/changed``: which files' entries changed, and the index's status after it."""

    cwd: str
    paths: list[str] = Field(default_factory=list, description="Absolute paths re-indexed or removed")
    status: IndexStatus


INDEX_STATUS = Method("arbor/index/status", IndexStatusParams, IndexStatus)
INDEX_OUTLINE = Method("arbor/index/outline", OutlineParams, OutlineResult)
INDEX_SEARCH = Method("arbor/index/search", SymbolSearchParams, SymbolSearchResult)
INDEX_CHANGED = Notification("arbor/index/changed", IndexChanged)
"""From the backend: files were re-indexed (a pass finished, or the watcher saw edits)."""
INDEX_METHODS = (INDEX_STATUS, INDEX_OUTLINE, INDEX_SEARCH)
