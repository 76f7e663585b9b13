"""The repo map (seed 003's ast_context_map): the workspace's most important definitions in a token budget.

Files are ranked with PageRank over the graph "file A uses a name that file B defines" (Aider's idea),
personalised to the files and identifiers a task names; each file then shows its definitions as
one-line signatures, methods nested under their classes, until the budget is spent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ide.codeintel.index.indexer import CodeIndex
from ide.codeintel.index.model import FileSymbols

MAX_DEFINERS = 12
"""Names defined in more files than this (``__init__``, ``get``) say nothing about which file is used."""
PER_FILE = 14
"""Definition lines shown per file at most."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHLIKE = re.compile(r"[\w./-]+\.\w+")


@dataclass
class _Graph:
    generation: int
    paths: dict[int, str]
    edges: dict[int, dict[int, float]]
    definers: dict[str, list[int]]


_graphs: dict[str, _Graph] = {}


def _graph(index: CodeIndex) -> _Graph:
    key = str(index.db_path)
    cached = _graphs.get(key)
    if cached is not None and cached.generation == index.generation:
        return cached
    db = index.db
    paths = dict(db.execute("SELECT id, path FROM files WHERE status != 'skipped'"))
    definers: dict[str, list[int]] = {}
    for name, file_id in db.execute("SELECT DISTINCT name, file_id FROM defs"):
        definers.setdefault(name, []).append(file_id)
    edges: dict[int, dict[int, float]] = {}
    rows = db.execute(
        "SELECT r.file_id, d.file_id, sum(r.count * 1.0 / d.n) FROM refs r JOIN ("
        "  SELECT name, file_id, n FROM (SELECT DISTINCT name, file_id FROM defs) "
        "  JOIN (SELECT name AS nm, count(DISTINCT file_id) AS n FROM defs GROUP BY name HAVING n <= ?) "
        "  ON nm = name"
        ") d ON d.name = r.name WHERE r.file_id != d.file_id AND substr(r.name, 1, 1) != '_' "
        "GROUP BY r.file_id, d.file_id",
        (MAX_DEFINERS,),
    )
    for source, target, weight in rows:
        edges.setdefault(source, {})[target] = math.sqrt(weight)
    graph = _Graph(index.generation, paths, edges, definers)
    _graphs[key] = graph
    return graph


def pagerank(
    nodes: Iterable[int],
    edges: dict[int, dict[int, float]],
    personal: dict[int, float],
    damping: float = 0.85,
) -> dict[int, float]:
    """Weighted PageRank by power iteration; ``personal`` (normalised here) is where random jumps land."""
    ids = list(nodes)
    if not ids:
        return {}
    total = sum(personal.values())
    jump = {n: w / total for n, w in personal.items()} if total else {n: 1 / len(ids) for n in ids}
    out_weight = {n: sum(targets.values()) for n, targets in edges.items()}
    rank = dict.fromkeys(ids, 1 / len(ids))
    for _ in range(40):
        fresh = {n: (1 - damping) * jump.get(n, 0.0) for n in ids}
        dangling = sum(r for n, r in rank.items() if not out_weight.get(n))
        for n, share in jump.items():
            fresh[n] += damping * dangling * share
        for source, targets in edges.items():
            weight = out_weight[source]
            if not weight or source not in rank:
                continue
            flow = damping * rank[source] / weight
            for target, w in targets.items():
                if target in fresh:
                    fresh[target] += flow * w
        delta = sum(abs(fresh[n] - rank[n]) for n in ids)
        rank = fresh
        if delta < 1e-6:
            break
    return rank


def task_focus(index: CodeIndex, text: str) -> tuple[list[str], list[str]]:
    """Files (indexed paths or their base names) and defined identifiers that ``text`` mentions."""
    db = index.db
    files: list[str] = []
    for token in dict.fromkeys(_PATHLIKE.findall(text)):
        token = token.strip("./")
        rows = db.execute(
            "SELECT path FROM files WHERE path = ? OR path LIKE ? ESCAPE '\\' LIMIT 3",
            (token, "%/" + token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")),
        )
        files.extend(row[0] for row in rows)
    words = list(dict.fromkeys(_IDENTIFIER.findall(text)))[:200]
    names: list[str] = []
    if words:
        marks = ",".join("?" * len(words))
        names = [
            row[0] for row in db.execute(f"SELECT DISTINCT name FROM defs WHERE name IN ({marks})", words)
        ]
    return list(dict.fromkeys(files)), names


def repo_map(
    index: CodeIndex,
    *,
    budget_tokens: int,
    focus_files: Iterable[str] = (),
    focus_names: Iterable[str] = (),
    overlay: dict[str, FileSymbols | None] | None = None,
) -> str:
    """The map as text, just under ``budget_tokens`` (4 characters a token).

    ``overlay`` replaces what the index holds for files the agent changed (None: deleted).
    """
    graph = _graph(index)
    by_path = {path: file_id for file_id, path in graph.paths.items()}
    personal: dict[int, float] = {}
    for path in focus_files:
        if path in by_path:
            personal[by_path[path]] = personal.get(by_path[path], 0.0) + 10.0
    for name in focus_names:
        for file_id in graph.definers.get(name, [])[:MAX_DEFINERS]:
            personal[file_id] = personal.get(file_id, 0.0) + 5.0
    rank = pagerank(graph.paths, graph.edges, personal)
    order = sorted(graph.paths, key=lambda file_id: (-rank.get(file_id, 0.0), graph.paths[file_id]))
    budget = budget_tokens * 4
    overlay = overlay or {}
    blocks: list[str] = []
    used = 0
    paths = [graph.paths[file_id] for file_id in order]
    paths.extend(p for p, symbols in overlay.items() if symbols is not None and p not in by_path)
    for path in paths:
        if path in overlay and overlay[path] is None:
            continue
        block = _render(index, path, overlay.get(path), set(focus_names))
        if not block:
            continue
        if used + len(block) + 1 > budget:
            if not blocks:  # at least the top file, cut to the budget
                blocks.append(block[: max(budget - 2, 0)].rsplit("\n", 1)[0])
            break
        blocks.append(block)
        used += len(block) + 1
    return "\n".join(blocks) if blocks else "(the index holds no definitions yet)"


def _render(index: CodeIndex, path: str, symbols: FileSymbols | None, focus: set[str]) -> str:
    if symbols is not None:
        rows = [(d.qualname, d.kind, d.signature, d.parent, d.name) for d in symbols.definitions]
        imports = symbols.imports
    else:
        rows = [(s.qualname, s.kind, s.signature, s.parent, s.name) for s in index.outline(path)]
        imports = [
            row[0]
            for row in index.db.execute(
                "SELECT module FROM imports i JOIN files f ON f.id = i.file_id WHERE f.path = ?", (path,)
            )
        ]
    if not rows:
        return ""
    depth: dict[str, int] = {}
    lines = [f"{path}:"]
    if imports:
        shown = ", ".join(imports[:8]) + (", …" if len(imports) > 8 else "")
        lines.append(f"  imports: {shown}")
    # Top-level definitions and class members; nested functions only when the task names them.
    kept = []
    for qualname, kind, signature, parent, name in rows:
        depth[qualname] = depth.get(parent, -1) + 1 if parent else 0
        if depth[qualname] > 1 and name not in focus:
            continue
        # Sort key: named in the task first, then public before private (stable: source order within).
        kept.append(
            ((name not in focus, name.startswith("_")), depth[qualname], signature or f"{kind} {name}")
        )
    chosen = sorted(sorted(range(len(kept)), key=lambda i: kept[i][0])[:PER_FILE])  # then source order
    for _key, level, signature in (kept[i] for i in chosen):
        lines.append("  " * (level + 1) + signature)
    if len(kept) > PER_FILE:
        lines.append(f"  … {len(kept) - PER_FILE} more")
    return "\n".join(lines)
