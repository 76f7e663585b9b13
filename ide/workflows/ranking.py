"""Lexical ranking: the tokenizer and Okapi BM25 that the document, git history and memory sources and
context fusion share (below all of them, so none imports another to rank)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; snake_case and CamelCase split as well as kept whole."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9_]+", text):
        low = word.lower()
        out.append(low)
        parts = [p.lower() for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", word.replace("_", " "))]
        if len(parts) > 1:
            out.extend(parts)
    return out


class Bm25:
    """Okapi BM25 over fixed documents (tokenised once), scored for any number of queries."""

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.counts = [Counter(tokenize(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.counts]
        self.avg = (sum(self.lengths) / len(self.lengths) if self.lengths else 0.0) or 1.0
        self.df: Counter[str] = Counter(term for c in self.counts for term in c)

    def scores(self, query: str) -> list[float]:
        n = len(self.counts)
        terms = [t for t in set(tokenize(query)) if self.df[t]]
        idf = {t: math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5)) for t in terms}
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / self.avg)
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    score += idf[term] * tf * (self.k1 + 1) / (tf + norm)
            out.append(score)
        return out


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """Okapi BM25 of each document for ``query`` (snake/Camel case split, so names match words)."""
    return Bm25(documents).scores(query) if documents else []
