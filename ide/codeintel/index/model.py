"""What the index extracts from one file: definitions, imports and references, as plain picklable data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DefinitionKind = Literal[
    "function",
    "method",
    "class",
    "interface",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "constant",
    "namespace",
    "module",
    "file",
]

FileStatus = Literal["ok", "partial", "failed", "skipped"]
"""ok: parsed cleanly; partial: syntax errors, indexed as far as possible; failed: unreadable or the parser
gave up; skipped: too large, binary or not a language we parse (file-level entry only)."""


@dataclass(slots=True)
class Definition:
    """One definition; lines are 1-based and inclusive, ``parent`` is the enclosing qualified name."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    signature: str = ""
    params: str = ""
    returns: str = ""
    doc: str = ""
    parent: str = ""

    def row(self) -> tuple[str, str, str, int, int, str, str, str, str, str]:
        """The fields in declaration order (the order of the index's ``defs`` columns)."""
        return (
            self.name, self.qualname, self.kind, self.line, self.end_line,
            self.signature, self.params, self.returns, self.doc, self.parent,
        )  # fmt: skip


@dataclass(slots=True)
class FileSymbols:
    """Everything extracted from one file. ``references`` maps an identifier to the lines it is used on."""

    language: str | None
    status: FileStatus = "ok"
    note: str = ""
    lines: int = 0
    definitions: list[Definition] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    references: dict[str, list[int]] = field(default_factory=dict)
