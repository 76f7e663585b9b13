"""``arbor index`` and ``arbor symbols``: build the code index of a directory and search it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ide.codeintel.index import CodeIndex, IndexStats, Symbol
from ide.codeintel.index.languages import detect_language
from ide.settings import Settings, SettingsError, load_settings
from ide.termout import terminal_of

if TYPE_CHECKING:
    from ide.codeintel.lsp import At, Location

STATS_KEYS = ("files", "skipped", "failed", "symbols", "references", "seconds", "db_bytes")


def _open(path: Path) -> CodeIndex:
    return CodeIndex.open(load_settings(path).settings, path)


class _Bar:
    """A one-line progress bar on a terminal; silent when stderr is not one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = terminal_of(stream)  # its carriage returns redraw the line: written as they are
        self.active = stream.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.active or (now - self._last < 0.1 and done < total):
            return
        self._last = now
        width = 30
        filled = width * done // total if total else width
        self.stream.write(f"\rindexing [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} files")
        self.stream.flush()

    def close(self) -> None:
        if self.active:
            self.stream.write("\r" + " " * 72 + "\r")
            self.stream.flush()


def run_index(path: Path, stats: bool, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Index ``path`` (only what changed since the last pass) and report."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        index = _open(path)
    except SettingsError as exc:
        err.write(f"arbor: {exc}\n")
        return 2
    bar = _Bar(err)
    try:
        result = index.refresh(progress=bar)
    finally:
        bar.close()
        index.close()
    if stats:
        figures = result.as_dict()
        out.write(json.dumps({**{key: figures[key] for key in STATS_KEYS}, **figures}) + "\n")
    else:
        out.write(_summary(result, index.db_path) + "\n")
    return 0


def _summary(result: IndexStats, db_path: Path) -> str:
    return (
        f"{result.describe()}; this pass: {result.parsed:,} parsed, {result.unchanged:,} unchanged, "
        f"{result.removed:,} removed; {result.symbols:,} symbols, {result.references:,} references "
        f"in {result.seconds:.2f} s → {db_path}"
    )


def run_symbols(
    path: Path,
    query: str | None,
    every: bool,
    as_json: bool,
    limit: int,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Search the index of ``path`` (building it first if there is none)."""
    out, err = out or sys.stdout, err or sys.stderr
    if not every and not query:
        err.write("arbor: give a QUERY, or --all for every definition\n")
        return 2
    try:
        index = _open(path)
    except SettingsError as exc:
        err.write(f"arbor: {exc}\n")
        return 2
    try:
        if index.stats().files == 0:
            bar = _Bar(err)
            try:
                index.refresh(progress=bar)
            finally:
                bar.close()
        hits = list(index.definitions()) if every else index.search(query or "", limit)
    finally:
        index.close()
    if as_json:
        out.write(json.dumps([_hit(index.root, hit, every) for hit in hits]) + "\n")
        return 0
    if not hits:
        err.write(f"no symbol matches {query!r} (run 'arbor index {path}' if the code changed)\n")
        return 1
    for hit in hits:
        out.write(f"{hit.kind:<9} {hit.qualname}  {hit.path}:{hit.line}  {hit.signature}\n")
    return 0


def _hit(root: Path, symbol: Symbol, every: bool) -> dict[str, object]:
    hit: dict[str, object] = {
        "name": symbol.name,
        "qualname": symbol.qualname,
        "kind": symbol.kind,
        "path": str(root / symbol.path),
        "line": symbol.line,
        "end_line": symbol.end_line,
        "signature": symbol.signature,
    }
    if not every:
        hit["score"] = symbol.score
    return hit


LSP_QUERIES = ("definition", "references", "hover")


def run_lsp(
    path: Path,
    query: str,
    position: str,
    as_json: bool,
    out: TextIO | None = None,
    err: TextIO | None = None,
    source: str | None = None,
) -> int:
    """``arbor lsp PATH QUERY FILE:LINE:COL``: ask the language server, print editor positions. References
    are first answered from the code index by name (printed at once, labelled), then by the server."""
    out, err = out or sys.stdout, err or sys.stderr
    import asyncio

    from ide.codeintel.lsp import At, LspError, LspPool, LspUnavailable

    try:
        file_part, line_part, column_part = position.rsplit(":", 2)
        line, column = int(line_part), int(column_part)
    except ValueError:
        err.write(f"arbor: expected FILE:LINE:COL (1-based, as editors show them), got {position!r}\n")
        return 2
    target = Path(file_part)
    target = (target if target.is_absolute() else path / target).resolve()
    if not target.is_file():
        err.write(f"arbor: {target} is not a file\n")
        return 2
    if source not in (None, "server") and query != "references":
        err.write("arbor: --source index or both is for references; definitions and hover ask the server\n")
        return 2
    source = source or ("both" if query == "references" else "server")
    try:
        resolved = load_settings(path)
    except SettingsError as exc:
        err.write(f"arbor: {exc}\n")
        return 2
    settings = resolved.settings
    if detect_language(target.name) == "python" and source != "index":
        from ide.codeintel.lsp.environment import environment_report

        err.writelines(f"{line}\n" for line in environment_report(path, resolved))
    at = At(path, target, line, column)
    labelled = source == "both"

    def show(label: str, name: str | None, locations: list[Location]) -> None:
        if as_json and labelled:
            answer = {"source": label, "name": name, "locations": [loc.as_dict() for loc in locations]}
            out.write(json.dumps(answer) + "\n")
        elif as_json:
            out.write(json.dumps([loc.as_dict() for loc in locations]) + "\n")
        else:
            if labelled:
                err.write(_heading(label, name, len(locations)))
            out.writelines(f"{loc.path}:{loc.line}:{loc.column}\n" for loc in locations)
        out.flush()

    async def ask() -> object:
        pool = LspPool(settings.lsp)
        try:
            if query == "hover":
                return await pool.hover(at)
            if query == "definition":
                return await pool.definition(at)
            asked = asyncio.ensure_future(pool.references(at)) if source != "index" else None
            if source != "server":
                name, found = await asyncio.to_thread(_by_name, path, at, settings, err)
                show("index", name, found)
                if asked is None:
                    return found
            assert asked is not None
            return await asked
        finally:
            await pool.close()

    try:
        answer = asyncio.run(ask())
    except (LspUnavailable, LspError) as exc:
        err.write(f"arbor: {exc}\n")
        return 1
    if isinstance(answer, str):
        out.write((json.dumps({"hover": answer}) if as_json else answer or "(no information)") + "\n")
        return 0
    locations = list(answer)  # type: ignore[call-overload]
    if source == "index":
        return 0 if locations or as_json else 1
    if not locations and not as_json:
        if labelled:
            err.write(_heading("server", None, 0))
        err.write(f"no {query} found at {position}\n")
        return 1
    show("server", None, locations)
    return 0


def _heading(label: str, name: str | None, count: int) -> str:
    if label == "index":
        what = f"{name!r}: " if name else ""
        return f"by name (index), {what}{count} places; the language server's answer follows\n"
    return f"language server: {count} places\n"


def _by_name(root: Path, at: At, settings: Settings, err: TextIO) -> tuple[str | None, list[Location]]:
    """The index's references by name (none when there is no index yet: it is not built for this)."""
    from ide.codeintel.lsp.byname import references_by_name

    index = CodeIndex.open(settings, root)
    try:
        if index.stats().files == 0:
            err.write(f"no code index yet (arbor index {root} builds it); only the language server answers\n")
            return None, []
        return references_by_name(index, at)
    finally:
        index.close()
