"""Positions between editors (1-based lines, columns in characters) and LSP (0-based, UTF-16 units), and
file URIs."""

from __future__ import annotations

from pathlib import Path


def to_lsp_character(line_text: str, column: int) -> int:
    """UTF-16 offset of the 1-based character ``column`` in ``line_text`` (clamped to the line)."""
    prefix = line_text[: max(column - 1, 0)]
    return len(prefix.encode("utf-16-le")) // 2


def from_lsp_character(line_text: str, character: int) -> int:
    """1-based character column of the UTF-16 offset ``character`` in ``line_text``."""
    units = 0
    for index, char in enumerate(line_text):
        if units >= character:
            return index + 1
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line_text) + 1


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


def path_of(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path))
