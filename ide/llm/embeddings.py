"""Embedding models from a ``provider:model`` setting (only Ollama), and cosine similarity."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def ollama_embeddings(spec: str, ollama_host: str, setting: str) -> Any:
    """LangChain ``OllamaEmbeddings`` for ``spec`` (``ollama:MODEL``), the value of ``setting``;
    ValueError naming the setting for anything else."""
    provider, _, model = spec.partition(":")
    if provider != "ollama" or not model:
        raise ValueError(f"{setting} {spec!r}: only ollama:MODEL is supported")
    from langchain_ollama import OllamaEmbeddings

    return OllamaEmbeddings(model=model, base_url=ollama_host)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
