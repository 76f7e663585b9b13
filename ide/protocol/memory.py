"""Wire models of the memory extensions (``_arbor/memory/*``) the window's Memory dock uses."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MEMORY_SEARCH = "arbor/memory/search"
MEMORY_DELETE = "arbor/memory/delete"
MEMORY_EXPORT = "arbor/memory/export"
MEMORY_METHODS = (MEMORY_SEARCH, MEMORY_DELETE, MEMORY_EXPORT)
NAMESPACES = ("investigations", "insights", "patterns", "errors")


class MemorySearchParams(BaseModel):
    session_id: str
    query: str = Field("", description="Words to match; empty lists the newest entries")
    namespace: str | None = Field(None, description="One of investigations, insights, patterns, errors")
    limit: int = Field(100, ge=1, le=1000)


class MemoryDeleteParams(BaseModel):
    session_id: str
    id: int


class MemoryExportParams(BaseModel):
    session_id: str
    path: str = Field(description="Absolute path of the JSON file to write")


class MemoryEntry(BaseModel):
    id: int
    namespace: str
    title: str
    content: str
    task_type: str = "other"
    score: float | None = None
    created_at: float = 0.0
    data: dict[str, Any] = Field(default_factory=dict)


class MemoryList(BaseModel):
    entries: list[MemoryEntry] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict, description="Entries per namespace")
    message: str | None = Field(None, description="Why there is nothing (memory off, …)")


class MemoryExported(BaseModel):
    path: str
    entries: int
