"""Wire models of the memory extensions (``_arbor/memory/*``) the window's Memory dock uses.

``_arbor/memory/search`` lists entries with their provenance (who wrote each, the session, when, whether
the user reviewed it); ``keep`` marks an agent-written entry reviewed, ``delete`` removes one, ``export``
writes them all, provenance included, to a JSON file."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ide.protocol.method import Method
from ide.protocol.wire import WireModel

NAMESPACES = ("investigations", "insights", "patterns", "errors")


class MemorySearchParams(WireModel):
    session_id: str
    query: str = Field("", description="Words to match; empty lists the newest entries")
    namespace: str | None = Field(None, description="One of investigations, insights, patterns, errors")
    limit: int = Field(100, ge=1, le=1000)
    unreviewed_only: bool = Field(False, description="Only agent-written entries the user has not kept")


class MemoryDeleteParams(WireModel):
    session_id: str
    id: int


class MemoryKeepParams(WireModel):
    """The user reviewed an agent-written entry and keeps it (it may then inform later prompts)."""

    session_id: str
    id: int


class MemoryExportParams(WireModel):
    session_id: str
    path: str = Field(description="Absolute path of the JSON file to write")


class MemoryEntry(WireModel):
    id: int
    namespace: str
    title: str
    content: str
    task_type: str = "other"
    score: float | None = None
    created_at: float = 0.0
    data: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = Field(None, description="The session that wrote it")
    author: str = Field("arbor", description="arbor (learned from a run) or agent (its store_insight)")
    reviewed: bool = Field(True, description="False for agent-written entries the user has not kept")
    kept_at: float | None = Field(None, description="When the user kept an agent-written entry")
    provenance: str = Field(
        "arbor", description="arbor (learned), agent (agent-written, unreviewed), user (kept by the user)"
    )


class MemoryList(WireModel):
    entries: list[MemoryEntry] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict, description="Entries per namespace")
    message: str | None = Field(None, description="Why there is nothing (memory off, …)")
    unreviewed: int = Field(0, description="Agent-written entries waiting for the user to keep or delete")


class MemoryExported(WireModel):
    path: str
    entries: int


MEMORY_SEARCH = Method("arbor/memory/search", MemorySearchParams, MemoryList)
MEMORY_DELETE = Method("arbor/memory/delete", MemoryDeleteParams, MemoryList)
MEMORY_EXPORT = Method("arbor/memory/export", MemoryExportParams, MemoryExported)
MEMORY_KEEP = Method("arbor/memory/keep", MemoryKeepParams, MemoryList)
MEMORY_METHODS = (MEMORY_SEARCH, MEMORY_DELETE, MEMORY_EXPORT, MEMORY_KEEP)
