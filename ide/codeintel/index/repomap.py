"""The repo map (seed 003's ast_context_map): the workspace's most important definitions in a token budget.

Aider's idea: files are nodes, and a file that uses an identifier another file defines points at it
(weight √uses, shared among the files defining it, ×10 for identifiers the task names, ×0.1 for
private ones). PageRank over that graph, personalised to the files and identifiers a task names,
ranks the files; each file passes its rank on to the definitions it uses, which ranks definitions.
The best definitions are shown as one-line signatures under their file, methods nested under their
classes, as many as fit the budget.

The graph is loaded once per index generation (about 2 s for 30k files) and the unfocused ranks with
it; a focused map then costs a local push from the focus (Andersen–Chung–Lang) and one query.
"""

from __future__ import annotations

import math
import re
import threading
import weakref
from array import array
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import mul

from ide.codeintel.index.indexer import CodeIndex
from ide.codeintel.index.model import FileSymbols

DAMPING = 0.85
MAX_DEFINERS = 12
"""Names defined in more files than this (``__init__``, ``get``) say nothing about which file is used,
and would multiply the edges."""
FOCUS_WEIGHT = 10.0
PRIVATE_WEIGHT = 0.1
UNUSED_SHARE = 0.02
"""A definition nobody else uses still gets this share of its file's rank (so a file's own API
follows its used definitions, before less important files)."""
SIGNATURE_CAP = 110
IMPORTS_SHOWN = 8
_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATHLIKE = re.compile(r"[\w./-]+\.\w+")


@dataclass
class _Graph:
    """Who uses whom, dense: node ``i`` is file ``ids[i]``; weights are divided by the source's total."""

    generation: int
    ids: list[int]
    paths: list[str]
    node: dict[int, int]
    """file id → node"""
    by_path: dict[str, int]
    out_total: array
    out_targets: list[array]
    out_weights: list[array]
    in_sources: list[array]
    in_weights: list[array]
    definers: dict[str, int]
    """How many files define each name that is used elsewhere (only names with at most MAX_DEFINERS)."""
    base_rank: list[float] = field(default_factory=list)


_graphs: weakref.WeakKeyDictionary[CodeIndex, _Graph] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _name_weight(name: str) -> float:
    return PRIVATE_WEIGHT if name.startswith("_") else 1.0


def _graph(index: CodeIndex) -> _Graph:
    """The cached graph of ``index`` at its current generation, loaded (with unfocused ranks) if stale."""
    with _lock:
        cached = _graphs.get(index)
        if cached is not None and cached.generation == index.generation:
            return cached
        generation = index.generation
        graph = _load(index, generation)
        graph.base_rank = _pagerank(graph, previous=cached)
        _graphs[index] = graph
        return graph


def _load(index: CodeIndex, generation: int) -> _Graph:
    db = index.db
    ids, paths = [], []
    for file_id, path in db.execute("SELECT id, path FROM files WHERE status != 'skipped' ORDER BY path"):
        ids.append(file_id)
        paths.append(path)
    node = {file_id: i for i, file_id in enumerate(ids)}
    # Joining in Python is about twice as fast as SQLite's nested-loop join of refs with defs here.
    definers: dict[str, list[int]] = {}
    for name, file_ids in db.execute(
        "SELECT name, group_concat(DISTINCT file_id) FROM defs GROUP BY name "
        "HAVING count(DISTINCT file_id) <= ?",
        (MAX_DEFINERS,),
    ):
        definers[name] = [node[int(f)] for f in file_ids.split(",") if int(f) in node]
    edges: dict[int, float] = defaultdict(float)  # source * n + target → weight
    n = len(ids)
    used: dict[str, int] = {}
    sqrt = math.sqrt
    for file_id, name, count in db.execute("SELECT file_id, name, count FROM refs"):
        targets = definers.get(name)
        source = node.get(file_id)
        if not targets or source is None:
            continue
        used[name] = len(targets)
        weight = sqrt(count) * _name_weight(name) / len(targets)
        base = source * n
        for target in targets:
            if target != source:
                edges[base + target] += weight
    out_total = array("d", bytes(8 * n))
    for key, weight in edges.items():
        out_total[key // n] += weight
    out_lists: list[tuple[list[int], list[float]]] = [([], []) for _ in range(n)]
    in_lists: list[tuple[list[int], list[float]]] = [([], []) for _ in range(n)]
    for key, weight in edges.items():
        source, target = divmod(key, n)
        share = weight / out_total[source]
        out_lists[source][0].append(target)
        out_lists[source][1].append(share)
        in_lists[target][0].append(source)
        in_lists[target][1].append(share)
    return _Graph(
        generation,
        ids,
        paths,
        node,
        {path: i for i, path in enumerate(paths)},
        out_total,
        [array("i", t) for t, _ in out_lists],
        [array("d", w) for _, w in out_lists],
        [array("i", s) for s, _ in in_lists],
        [array("d", w) for _, w in in_lists],
        used,
    )


def _pagerank(graph: _Graph, previous: _Graph | None, tolerance: float = 1e-4) -> list[float]:
    """Global PageRank by power iteration (pulling along in-edges); warm-started from the last generation."""
    n = len(graph.ids)
    if not n:
        return []
    rank = [1 / n] * n
    if previous is not None and previous.base_rank:
        old = dict(zip(previous.paths, previous.base_rank, strict=True))
        rank = [old.get(path, 1 / n) for path in graph.paths]
        total = sum(rank)
        rank = [r / total for r in rank]
    dangling = [i for i in range(n) if not graph.out_total[i]]
    sources, weights = graph.in_sources, graph.in_weights
    for _ in range(50):
        jump = (1 - DAMPING) / n + DAMPING * sum(rank[i] for i in dangling) / n
        get = rank.__getitem__
        fresh = [
            jump + DAMPING * sum(map(mul, map(get, sources[i]), weights[i])) if sources[i] else jump
            for i in range(n)
        ]
        delta = sum(map(abs, map(float.__sub__, fresh, rank)))
        rank = fresh
        if delta < tolerance:
            break
    return rank


def _focus_edges(index: CodeIndex, graph: _Graph, names: set[str]) -> dict[int, dict[int, float]]:
    """Extra raw weight (×FOCUS_WEIGHT in all) on the edges that come from using a focus name."""
    extra: dict[int, dict[int, float]] = defaultdict(dict)
    counted = [name for name in names if name in graph.definers]
    if not counted:
        return extra
    marks = ",".join("?" * len(counted))
    definers: dict[str, list[int]] = defaultdict(list)
    for name, file_id in index.db.execute(
        f"SELECT DISTINCT name, file_id FROM defs WHERE name IN ({marks})", counted
    ):
        if file_id in graph.node:
            definers[name].append(graph.node[file_id])
    for file_id, name, count in index.db.execute(
        f"SELECT file_id, name, count FROM refs WHERE name IN ({marks})", counted
    ):
        source = graph.node.get(file_id)
        if source is None:
            continue
        weight = (FOCUS_WEIGHT - 1) * math.sqrt(count) * _name_weight(name) / graph.definers[name]
        for target in definers[name]:
            if target != source:
                extra[source][target] = extra[source].get(target, 0.0) + weight
    return extra


def _personal_rank(
    graph: _Graph, seeds: dict[int, float], extra: dict[int, dict[int, float]], epsilon: float = 1e-5
) -> dict[int, float]:
    """Personalised PageRank by local push from ``seeds``: work grows with the neighbourhood reached,
    not with the workspace. Mass of files that use nothing returns to the seeds; residuals below
    ``epsilon`` per out-edge stay unspread (a ranking needs no more precision)."""
    total = sum(seeds.values())
    seeds = {node: weight / total for node, weight in seeds.items()}
    rank: dict[int, float] = defaultdict(float)
    residual: dict[int, float] = defaultdict(float, seeds)
    queue = list(seeds)
    queued = set(queue)
    while queue:
        node = queue.pop()
        queued.discard(node)
        mass = residual.pop(node, 0.0)
        if mass <= 0.0:
            continue
        rank[node] += (1 - DAMPING) * mass
        passed = DAMPING * mass
        bonus = extra.get(node)
        if bonus:
            raw = graph.out_total[node]
            out_total = raw + sum(bonus.values())
            flows = {
                t: w * raw / out_total
                for t, w in zip(graph.out_targets[node], graph.out_weights[node], strict=True)
            }
            for target, w in bonus.items():
                flows[target] = flows.get(target, 0.0) + w / out_total
            targets: Iterable[tuple[int, float]] = flows.items()
        elif graph.out_total[node]:
            targets = zip(graph.out_targets[node], graph.out_weights[node], strict=True)
        else:
            targets = ((seed, share) for seed, share in seeds.items())
        for target, share in targets:
            residual[target] += passed * share
            # A file is pushed once its residual is worth the edges it will touch.
            if target not in queued and residual[target] > epsilon * (1 + len(graph.out_targets[target])):
                queue.append(target)
                queued.add(target)
    return rank


def task_focus(index: CodeIndex, text: str) -> tuple[list[str], list[str]]:
    """Files (indexed paths or their base names) and defined identifiers that ``text`` mentions.

    A word that looks like code (``snake_case``, ``CamelCase``, digits) counts when anything defines
    it; a plain lowercase word ("refund", but not "make" or "request") only when at most two files do.
    """
    db = index.db
    files: list[str] = []
    for token in dict.fromkeys(_PATHLIKE.findall(text)):
        token = token.strip("./")
        escaped = token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = db.execute(
            "SELECT path FROM files WHERE path = ? OR path LIKE ? ESCAPE '\\' ORDER BY length(path) LIMIT 3",
            (token, "%/" + escaped),
        )
        files.extend(path for (path,) in rows if path == token or path.endswith("/" + token))
    words = [w for w in dict.fromkeys(_CODE_WORD.findall(text)) if len(w) >= 3][:300]
    names: list[str] = []
    if words:
        marks = ",".join("?" * len(words))
        definers = dict(
            db.execute(
                f"SELECT name, count(DISTINCT file_id) FROM defs WHERE name IN ({marks}) GROUP BY name", words
            )
        )
        for word in words:
            plain = word.islower() and word.isalpha()
            if word in definers and (not plain or definers[word] <= 2):
                names.append(word)
    return list(dict.fromkeys(files)), names


@dataclass
class _Entry:
    """A definition the map may show."""

    file: str
    qualname: str
    parent: str
    line: int
    text: str
    score: float = 0.0


def repo_map(
    index: CodeIndex,
    *,
    budget_tokens: int,
    focus_files: Iterable[str] = (),
    focus_names: Iterable[str] = (),
    overlay_symbols: dict[str, FileSymbols | None] | None = None,
) -> str:
    """The map as text, just under ``budget_tokens`` (estimated as 4 characters a token).

    ``overlay_symbols`` replaces what the index holds for the files the agent changed (None: deleted);
    their definitions are ranked by who uses them, new files included.
    """
    graph = _graph(index)
    overlay = overlay_symbols or {}
    focus = set(focus_names)
    budget = budget_tokens * 4
    rank = _ranks(index, graph, list(focus_files), focus)
    for path, symbols in overlay.items():
        if symbols is None and path in graph.by_path:
            rank[graph.by_path[path]] = 0.0
    # Enough of the best files to fill any budget (a file costs at least two lines), then their definitions.
    wanted = max(20, budget // 40)
    best = sorted(range(len(graph.ids)), key=lambda i: -rank[i])[:wanted]
    file_rank = {graph.paths[i]: rank[i] for i in best if rank[i] > 0 and graph.paths[i] not in overlay}
    entries, imports = _index_entries(index, graph, file_rank, focus)
    for path, symbols in overlay.items():
        if symbols is not None:
            file_rank[path] = rank[graph.by_path[path]] if path in graph.by_path else 0.0
            entries.extend(_overlay_entries(path, symbols, focus))
            imports[path] = list(dict.fromkeys(symbols.imports))
    _score(index, graph, rank, file_rank, entries, focus)
    lookup = {(e.file, e.qualname): e for e in entries}
    entries.sort(key=lambda e: (-e.score, e.file, e.line))
    del entries[budget // 8 :]  # more could never fit
    if not entries:
        return "(the index holds no definitions yet)"
    low, high = 1, len(entries)
    fitting = ""
    while low <= high:  # the most definitions whose rendering fits
        middle = (low + high) // 2
        text = _render(entries[:middle], file_rank, imports, lookup)
        if len(text) <= budget:
            fitting, low = text, middle + 1
        else:
            high = middle - 1
    if not fitting:  # not even the best definition with its file line: cut that to the budget
        fitting = _render(entries[:1], file_rank, imports, lookup)[: max(budget, 0)].rsplit("\n", 1)[0]
    return fitting


def _ranks(index: CodeIndex, graph: _Graph, focus_files: list[str], focus: set[str]) -> list[float]:
    seeds: dict[int, float] = {}
    for path in focus_files:
        if path in graph.by_path:
            seeds[graph.by_path[path]] = seeds.get(graph.by_path[path], 0.0) + 2.0
    if focus:
        marks = ",".join("?" * len(focus))
        for (file_id,) in index.db.execute(
            f"SELECT DISTINCT file_id FROM defs WHERE name IN ({marks}) LIMIT 200", list(focus)
        ):
            if file_id in graph.node:
                seeds[graph.node[file_id]] = seeds.get(graph.node[file_id], 0.0) + 1.0
    rank = list(graph.base_rank)
    if seeds:
        personal = _personal_rank(graph, seeds, _focus_edges(index, graph, focus))
        # The focus decides; the global rank orders what the focus does not reach.
        rank = [0.1 * r for r in rank]
        for node, value in personal.items():
            rank[node] += value
    return rank


def _index_entries(
    index: CodeIndex, graph: _Graph, file_rank: dict[str, float], focus: set[str]
) -> tuple[list[_Entry], dict[str, list[str]]]:
    """The showable definitions and the imports of the candidate files, from the index."""
    if not file_rank:
        return [], {}
    file_ids = [graph.ids[graph.by_path[path]] for path in file_rank]
    marks = ",".join("?" * len(file_ids))
    rows = index.db.execute(
        "SELECT f.path, d.name, d.qualname, d.kind, d.line, d.signature, d.parent FROM defs d "
        f"JOIN files f ON f.id = d.file_id WHERE d.file_id IN ({marks}) ORDER BY d.file_id, d.line, d.id",
        file_ids,
    )
    entries = _entries(rows, focus)
    imports: dict[str, list[str]] = defaultdict(list)
    for path, module in index.db.execute(
        "SELECT f.path, i.module FROM imports i JOIN files f ON f.id = i.file_id "
        f"WHERE i.file_id IN ({marks})",
        file_ids,
    ):
        imports[path].append(module)
    return entries, imports


def _overlay_entries(path: str, symbols: FileSymbols, focus: set[str]) -> list[_Entry]:
    rows = ((path, d.name, d.qualname, d.kind, d.line, d.signature, d.parent) for d in symbols.definitions)
    return _entries(rows, focus)


def _entries(rows: Iterable[tuple[str, str, str, str, int, str, str]], focus: set[str]) -> list[_Entry]:
    """Top-level definitions and class members (deeper ones only when the task names them)."""
    entries = []
    depth: dict[tuple[str, str], int] = {}
    for path, name, qualname, kind, line, signature, parent in rows:
        level = depth.get((path, parent), -1) + 1 if parent else 0
        depth[(path, qualname)] = level
        if level > 1 and name not in focus:
            continue
        text = _one_line(signature, kind, name)
        entry = _Entry(path, qualname, parent, line, "  " * (level + 1) + text)
        entry.score = (FOCUS_WEIGHT if name in focus else 1.0) * _name_weight(name)
        entries.append(entry)
    return entries


def _one_line(signature: str, kind: str, name: str) -> str:
    text = " ".join(signature.split()) or f"{kind} {name}"  # extract already dropped trailing comments
    return text if len(text) <= SIGNATURE_CAP else text[: SIGNATURE_CAP - 1] + "…"


def _score(
    index: CodeIndex,
    graph: _Graph,
    rank: list[float],
    file_rank: dict[str, float],
    entries: list[_Entry],
    focus: set[str],
) -> None:
    """Each definition's score: the rank that files using its name pass along (their rank split by
    their weighted uses), plus a small share of its own file's rank; ×10 when named by the task,
    ×0.1 when private (both already in ``entry.score``)."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        wanted[entry.qualname.rsplit(".", 1)[-1]].add(entry.file)
    names = [name for name in wanted if name in graph.definers]
    shares: dict[int, float] = {}
    for node, file_id in enumerate(graph.ids):
        if rank[node] and graph.out_total[node]:
            shares[file_id] = DAMPING * rank[node] / graph.out_total[node]
    db = index.db
    # Summed in SQL: the popular names are used by thousands of files.
    db.create_function("arbor_flow", 2, lambda f, c: shares.get(f, 0.0) * math.sqrt(c), deterministic=True)
    total: dict[str, float] = {}
    own_use: dict[tuple[str, str], float] = {}
    by_id = {graph.ids[graph.by_path[path]]: path for path in file_rank if path in graph.by_path}
    for start in range(0, len(names), 500):
        chunk = names[start : start + 500]
        marks = ",".join("?" * len(chunk))
        total.update(
            db.execute(
                "SELECT name, sum(arbor_flow(file_id, count)) FROM refs "
                f"WHERE name IN ({marks}) GROUP BY name",
                chunk,
            )
        )
        for file_id, name, count in db.execute(
            f"SELECT file_id, name, count FROM refs WHERE name IN ({marks}) "
            f"AND file_id IN ({','.join('?' * len(by_id))})",
            [*chunk, *by_id],
        ):
            own_use[(by_id[file_id], name)] = shares.get(file_id, 0.0) * math.sqrt(count)
    inflow = {
        (path, name): (total.get(name, 0.0) - own_use.get((path, name), 0.0)) / graph.definers[name]
        for name in names
        for path in wanted[name]
    }
    for entry in entries:
        name = entry.qualname.rsplit(".", 1)[-1]
        own = UNUSED_SHARE * file_rank.get(entry.file, 0.0)
        entry.score *= inflow.get((entry.file, name), 0.0) + own


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _render(
    chosen: list[_Entry],
    file_rank: dict[str, float],
    imports: dict[str, list[str]],
    lookup: dict[tuple[str, str], _Entry],
) -> str:
    """``chosen`` grouped by file (best file first), in source order, each under its enclosing class."""
    by_file: dict[str, list[_Entry]] = defaultdict(list)
    for entry in chosen:
        by_file[entry.file].append(entry)
    order = sorted(by_file, key=lambda p: (-max(file_rank.get(p, 0.0), by_file[p][0].score), p))
    blocks = []
    for path in order:
        lines = [f"{path}:"]
        modules = imports.get(path)
        if modules:
            more = ", …" if len(modules) > IMPORTS_SHOWN else ""
            lines.append(f"  imports: {', '.join(modules[:IMPORTS_SHOWN])}{more}")
        shown = [*by_file[path], *_parents(by_file[path], lookup)]
        lines.extend(entry.text for entry in sorted(shown, key=lambda e: (e.line, _indent(e.text))))
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _parents(chosen: list[_Entry], lookup: dict[tuple[str, str], _Entry]) -> list[_Entry]:
    """Enclosing definitions of ``chosen`` that are not chosen themselves: the class line as context."""
    shown = {e.qualname for e in chosen}
    found = []
    for entry in chosen:
        parent = lookup.get((entry.file, entry.parent)) if entry.parent else None
        while parent is not None and parent.qualname not in shown:
            shown.add(parent.qualname)
            found.append(parent)
            parent = lookup.get((parent.file, parent.parent)) if parent.parent else None
    return found
