"""What a retrieval source returns, and how a document or a file is cut into those snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PER_SOURCE = 12
"""Snippets one source returns at most."""
FILE_LINES = 300
"""Lines a whole-file snippet (``index_level: file``, ``chunk_strategy: file``) holds at most."""
WHOLE_FILE = "whole file"
"""How a whole-file snippet's title starts; a cut one goes on ", first N of M lines"."""


@dataclass(frozen=True)
class Snippet:
    source: str
    path: str
    start_line: int
    end_line: int
    text: str
    title: str = ""
    score: float = 0.0
    weight: float = 0.7
    """The source's priority in the workflow (HIGH 1.0, MEDIUM 0.7, LOW 0.4)."""

    def attribution(self) -> str:
        if self.title.startswith(WHOLE_FILE) and self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line} ({self.title})"
        if self.path.startswith(("git:", "memory:")) or "://" in self.path:
            return self.path
        if self.title and self.source in ("document_sections", "decision_records", "specifications"):
            return f"{self.path}#{self.title}"
        if self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line}"
        return self.path


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_RST_UNDER = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def document_sections(text: str, path: str) -> list[tuple[str, int, int, str]]:
    """(section path "A > B", start line, end line, text) of a Markdown or reST document."""
    lines = text.splitlines()
    heads: list[tuple[int, int, str]] = []  # (line index, level, title)
    rst_levels: list[str] = []
    in_fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            continue
        rst = path.endswith(".rst")
        match = None if rst else _MD_HEADING.match(line)
        if match:
            heads.append((i, len(match.group(1)), match.group(2).strip()))
        elif rst and i > 0 and _RST_UNDER.match(line) and lines[i - 1].strip():
            char = line.strip()[0]
            if char not in rst_levels:
                rst_levels.append(char)
            heads.append((i - 1, rst_levels.index(char) + 1, lines[i - 1].strip()))
    if not heads:
        return [(Path(path).name, 1, len(lines), text)] if text.strip() else []
    sections = []
    stack: list[tuple[int, str]] = []
    bounds = [h[0] for h in heads] + [len(lines)]
    if heads[0][0] > 0 and "\n".join(lines[: heads[0][0]]).strip():
        sections.append(("(preamble)", 1, heads[0][0], "\n".join(lines[: heads[0][0]])))
    for n, (start, level, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = bounds[n + 1]
        body = "\n".join(lines[start:end]).rstrip()
        sections.append((" > ".join(t for _l, t in stack), start + 1, start + len(body.splitlines()), body))
    return sections


def document_chunks(text: str, path: str, shape: str, window: int = 40) -> list[tuple[str, int, int, str]]:
    """(title, start line, end line, text) of a document cut as ``shape`` says: its heading
    ``sections``, its ``paragraphs`` (blank-line separated, titled by their section), ``window``s of
    ``window`` lines, or the whole ``file`` (at most FILE_LINES lines)."""
    if shape == "file":
        return [whole_file(text.split("\n"))] if text.strip() else []
    if shape == "window":
        lines = text.rstrip().split("\n")
        return [
            ("", start + 1, start + len(chunk), "\n".join(chunk))
            for start in range(0, len(lines), window)
            for chunk in [lines[start : start + window]]
            if "\n".join(chunk).strip()
        ]
    sections = document_sections(text, path)
    if shape != "paragraphs":
        return sections
    paragraphs = []
    for title, start, _end, body in sections:
        block: list[str] = []
        first, number, in_fence = start, 0, False
        for offset, line in enumerate([*body.split("\n"), ""]):
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if line.strip() or in_fence:
                if not block:
                    first = start + offset
                block.append(line)
                continue
            # A block that is only the section's heading (and its reST underline) is named by the title.
            if block and not (offset == len(block) and _is_heading(block, path)):
                number += 1
                paragraphs.append((f"{title} ¶{number}", first, first + len(block) - 1, "\n".join(block)))
            block = []
    return paragraphs


def _is_heading(block: list[str], path: str) -> bool:
    if path.endswith(".rst"):
        return len(block) <= 3 and any(_RST_UNDER.match(line) for line in block)
    return len(block) == 1 and _MD_HEADING.match(block[0]) is not None


def whole_file(lines: list[str]) -> tuple[str, int, int, str]:
    """(title, 1, last line, text) of a file's first FILE_LINES lines; the title says when it was cut."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    kept = lines[:FILE_LINES]
    title = (
        WHOLE_FILE if len(kept) == len(lines) else f"{WHOLE_FILE}, first {len(kept)} of {len(lines)} lines"
    )
    return title, 1, len(kept), "\n".join(kept)
