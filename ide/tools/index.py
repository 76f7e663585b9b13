"""The agent's index tools: find_symbol, file_outline, find_references and repo_map.

They read the workspace's code index and see the agent's own edits: files the session's change set
touched are parsed again from their proposed text (deleted ones disappear), so an agent that just
added a function can find it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from ide.codeintel.index import CodeIndex, FileSymbols, Symbol, repomap
from ide.codeintel.index.extract import extract
from ide.codeintel.index.languages import TAGGED, detect_language
from ide.codeintel.index.repomap import task_focus
from ide.codeintel.index.store import nesting
from ide.fs import ToolError, is_binary
from ide.settings import ToolSettings
from ide.tools.base import at_path, at_path_if_given, tool
from ide.tools.workspace import Workspace

REFERENCE_CAP = 80
LINE_CAP = 200
DEFAULT_MAP_TOKENS = 1024


class FindSymbolArgs(BaseModel):
    query: str = Field(description="Name or part of a name (fuzzy), or words of a docstring")
    kind: str | None = Field(None, description="Only this kind: function, method, class, interface, …")
    limit: int = Field(20, ge=1, le=100)


class FileOutlineArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root")


class FindReferencesArgs(BaseModel):
    name: str = Field(description="Identifier whose uses to list (exact name)")
    path: str | None = Field(None, description="Only in this file or directory")


class RepoMapArgs(BaseModel):
    focus: str | None = Field(None, description="The task or names to centre the map on")
    files: list[str] = Field(default_factory=list, description="Files the map should favour")
    max_tokens: int = Field(DEFAULT_MAP_TOKENS, ge=64, le=8192)


def _index(workspace: Workspace) -> CodeIndex:
    if workspace.index is None:
        raise ToolError("the code index is not open for this workspace; use grep and read_file instead")
    return workspace.index


def overlay_symbols(workspace: Workspace) -> dict[str, FileSymbols | None]:
    """What the agent's change set holds: each changed file parsed from its proposed text (None: deleted)."""
    overlay = workspace.overlay
    if overlay is None:
        return {}
    found: dict[str, FileSymbols | None] = {}
    for rel in overlay.changed_paths():
        if not overlay.exists(rel) or workspace.is_ignored(workspace.root / rel):
            found[rel] = None
            continue
        data = overlay.read_bytes(rel)
        language = detect_language(rel, data[:256])
        if language not in TAGGED or is_binary(data) or len(data) > workspace.settings.max_file_bytes:
            found[rel] = FileSymbols(language=language)
            continue
        found[rel] = extract(data, language)
    return found


def _symbols(rel: str, symbols: FileSymbols) -> list[Symbol]:
    return [Symbol.of(rel, d) for d in symbols.definitions]


@tool("search", lambda a: f"Find symbol {a.query!r}")
def find_symbol(workspace: Workspace, settings: ToolSettings, args: FindSymbolArgs) -> str:
    """Find definitions (functions, classes, methods, …) by name or part of it, fuzzy; prints kind, qualified
    name, path:line and signature."""
    index = _index(workspace)
    changed = overlay_symbols(workspace)
    hits = [hit for hit in index.search(args.query, args.limit * 3) if hit.path not in changed]
    needle = args.query.lower()
    for rel, symbols in changed.items():
        if symbols is not None:
            hits.extend(s for s in _symbols(rel, symbols) if needle in s.qualname.lower())
    if args.kind:
        hits = [hit for hit in hits if hit.kind == args.kind]
    if not hits:
        return f"no definition matches {args.query!r}" + (f" of kind {args.kind}" if args.kind else "")
    lines = [
        f"{hit.kind} {hit.qualname}  {hit.path}:{hit.line}  {hit.signature}" for hit in hits[: args.limit]
    ]
    return "\n".join(lines)


@tool("read", lambda a: f"Outline {a.path}", location=at_path)
def file_outline(workspace: Workspace, settings: ToolSettings, args: FileOutlineArgs) -> str:
    """The definitions of one file with line numbers and signatures, nested by class."""
    index = _index(workspace)
    rel = workspace.relative(workspace.resolve(args.path))
    changed = overlay_symbols(workspace)
    if rel in changed:
        symbols = changed[rel]
        if symbols is None:
            raise ToolError(f"{rel} is deleted in your changes")
        outline = _symbols(rel, symbols)
    else:
        if index.file(rel) is None:
            raise ToolError(index.why_not_indexed(rel))
        outline = index.outline(rel)
    if not outline:
        return f"{rel} has no definitions the index recognises"
    lines = []
    for symbol, level in zip(outline, nesting(outline), strict=True):
        doc = f"  — {symbol.doc}" if symbol.doc else ""
        lines.append(f"{'  ' * level}{symbol.line}: {symbol.signature or symbol.name}{doc}")
    return "\n".join(lines)


@tool(
    "search",
    lambda a: f"References of {a.name}" + (f" in {a.path}" if a.path else ""),
    location=at_path_if_given,
)
def find_references(workspace: Workspace, settings: ToolSettings, args: FindReferencesArgs) -> str:
    """Where an identifier is used: path:line: text, its definitions first."""
    index = _index(workspace)
    if not re.fullmatch(r"[\w$]+", args.name):
        raise ToolError(f"{args.name!r} is not an identifier; give one name, e.g. 'parse_config'")
    scope = workspace.relative(workspace.resolve(args.path)) if args.path else None
    changed = overlay_symbols(workspace)
    # Definitions of files the change set touches come from their proposed text, not the index.
    definitions = {(s.path, s.line) for s in index.definitions(args.name) if s.path not in changed}
    paths = {path for path, _line in index.references(args.name, 10_000)}
    paths.update(path for path, _line in definitions)
    paths.difference_update(changed)
    paths.update(rel for rel, symbols in changed.items() if symbols is not None)
    if scope not in (None, "."):
        paths = {p for p in paths if p == scope or p.startswith(scope.rstrip("/") + "/")}
    word = re.compile(rf"(?<![\w$]){re.escape(args.name)}(?![\w$])")
    for rel, symbols in changed.items():
        if symbols is not None:
            definitions.update((rel, d.line) for d in symbols.definitions if d.name == args.name)
    found: list[tuple[bool, str, int, str]] = []
    for rel in sorted(paths):
        try:
            text = workspace.read_text(workspace.root / rel)
        except (OSError, ToolError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if word.search(line):
                found.append(((rel, number) not in definitions, rel, number, line.strip()[:LINE_CAP]))
    if not found:
        return f"no uses of {args.name!r} found" + (f" under {scope}" if scope else "")
    found.sort()
    lines = [
        f"{rel}:{number}: {'(definition) ' if not use else ''}{text}" for use, rel, number, text in found
    ]
    if len(lines) > REFERENCE_CAP:
        lines = [*lines[:REFERENCE_CAP], f"(… {len(found) - REFERENCE_CAP} more; give a path to narrow)"]
    return "\n".join(lines)


@tool("read", lambda a: "Repo map")
def repo_map(workspace: Workspace, settings: ToolSettings, args: RepoMapArgs) -> str:
    """A compact map of the workspace's most important files and definitions, ranked by how much the code uses
    them; pass the task as focus to centre it."""
    index = _index(workspace)
    files, names = task_focus(index, args.focus) if args.focus else ([], [])
    files.extend(workspace.relative(workspace.resolve(path)) for path in args.files)
    return repomap.repo_map(
        index,
        budget_tokens=args.max_tokens,
        focus_files=files,
        focus_names=names,
        overlay_symbols=overlay_symbols(workspace),
    )


INDEX_TOOLS = (find_symbol, file_outline, find_references, repo_map)
