"""Memory across sessions (seed 001): investigations, insights, patterns and errors, per workspace."""

from __future__ import annotations

from pathlib import Path

from ide.llm.embeddings import ollama_embeddings
from ide.memory.store import NAMESPACES, MemoryItem, MemoryStore, task_type
from ide.settings import Settings

MEMORY_FILE = "memory.sqlite"


def open_memory(root: Path, settings: Settings) -> MemoryStore | None:
    """The workspace's memory (None when ``memory.enabled`` is off), with embeddings when configured."""
    if not settings.memory.enabled:
        return None
    spec = settings.memory.embedding_model
    embedder = ollama_embeddings(spec, settings.llm.ollama_host, "memory.embedding_model") if spec else None
    return MemoryStore(settings.workspace_data_dir(root) / MEMORY_FILE, embedder=embedder)


__all__ = ["NAMESPACES", "MemoryItem", "MemoryStore", "open_memory", "task_type"]
