"""Answers by name from the code index, given at once while the language server works out its own.

The index (tree-sitter, ``ide/codeintel/index``) holds every definition and, per file, the lines where
each identifier is called, decorates, is a base class or sits in a type annotation. It knows names, not
what they bind to: two ``run`` methods are one name to it, and a use that is none of those (an import,
a plain read) is not in it. So its answer is labelled "by name (index)" and the language server's,
when it comes, replaces it. jedi-language-server's references walk every file of the project that
holds the name and infer each one: p95 1.8 s on Arbor's own ``ide`` package, where the index answers
in milliseconds (``bench/lsp.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ide.codeintel.lsp.gate import LspGate
from ide.codeintel.lsp.pool import At, Location

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex

INDEX_LABEL = "by name (index)"
"""How an answer from the index is labelled until the language server's replaces it."""
SERVER_LABEL = "language server"

IDENTIFIER = re.compile(r"[^\W\d]\w*")


def name_at(text: str, line: int, column: int) -> str | None:
    """The identifier at the 1-based ``line`` and character ``column`` (or just after it, where an
    editor's cursor sits after typing it); None on anything else."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    spot = column - 1
    before = None
    for match in IDENTIFIER.finditer(lines[line - 1]):
        if match.start() <= spot < match.end():
            return match.group()
        if match.end() == spot:
            before = match.group()
    return before


def _text(path: Path, documents: Mapping[Path, str] | None) -> str | None:
    text = (documents or {}).get(path)
    if text is not None:
        return text
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def occurrences(name: str, line_text: str) -> list[int]:
    """1-based character columns where ``name`` stands as a whole word in ``line_text``."""
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    return [match.start() + 1 for match in word.finditer(line_text)]


def references_by_name(index: CodeIndex, at: At, limit: int = 500) -> tuple[str | None, list[Location]]:
    """The name at ``at`` and the places the index has for it (its definitions and recorded uses), each
    whole-word occurrence on those lines a location, sorted like the server's answer. A line that no
    longer holds the name (the file changed since it was indexed, or the change set's text differs) is
    left out; a file the gate refuses is named, never read."""
    text = _text(at.path, at.documents)
    name = name_at(text, at.line, at.column) if text is not None else None
    if name is None:
        return None, []
    root = index.root
    lines: dict[str, set[int]] = {}
    for rel, line in index.references(name, limit):
        lines.setdefault(rel, set()).add(line)
    for symbol in index.definitions(name):
        lines.setdefault(symbol.path, set()).add(symbol.line)
    return name, _places(root, name, lines, at.documents, at.gate)


def definitions_by_name(index: CodeIndex, at: At) -> tuple[str | None, list[Location]]:
    """The name at ``at`` and where the index has it defined (every definition of that name)."""
    text = _text(at.path, at.documents)
    name = name_at(text, at.line, at.column) if text is not None else None
    if name is None:
        return None, []
    lines: dict[str, set[int]] = {}
    for symbol in index.definitions(name):
        lines.setdefault(symbol.path, set()).add(symbol.line)
    return name, _places(index.root, name, lines, at.documents, at.gate)


def _places(
    root: Path,
    name: str,
    lines: dict[str, set[int]],
    documents: Mapping[Path, str] | None,
    gate: LspGate | None,
) -> list[Location]:
    found: list[Location] = []
    for rel, numbers in lines.items():
        path = root / rel
        refused = gate.refusal(path) if gate is not None else None
        if refused is not None:
            found.extend(Location(path, line, 1, refused) for line in numbers)
            continue
        text = _text(path, documents)
        if text is None:
            continue
        file_lines = text.splitlines()
        for line in numbers:
            if 0 < line <= len(file_lines):
                found.extend(
                    Location(path, line, column) for column in occurrences(name, file_lines[line - 1])
                )
    return sorted(set(found), key=lambda loc: (str(loc.path), loc.line, loc.column))


def same_places(first: Iterable[Location], second: Iterable[Location]) -> bool:
    """Whether two answers name the same (path, line, column)s."""
    return {(loc.path, loc.line, loc.column) for loc in first} == {
        (loc.path, loc.line, loc.column) for loc in second
    }
