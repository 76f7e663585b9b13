"""Hunks of two line lists and unified-diff text, written once for the review backend, the window and patches.

Qt-free: the window imports it as part of ``ide.protocol``; ``ide.changes`` builds its byte hunks and its
``git apply`` patches with it, and ``arbor run`` prints change sets with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

from ide.linediff import Opcode, diff_opcodes, grouped

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"

Line = TypeVar("Line", str, bytes)
DiffStyle = Literal["git", "patch", "plain"]


@dataclass(frozen=True, slots=True)
class LineHunk(Generic[Line]):
    """One hunk of a line diff: 1-based starts (the line before when the count is 0) and prefixed lines."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[tuple[str, Line]]
    """(prefix, line): ' ' context, '-' removed, '+' added; removed lines come before added ones."""


def line_hunks(a: Sequence[Line], b: Sequence[Line], context: int = CONTEXT_LINES) -> list[LineHunk[Line]]:
    """The hunks turning ``a`` into ``b`` with ``context`` lines around each change (fast on any input:
    ide.linediff; a change too big to match line by line is one whole-range hunk)."""
    hunks: list[LineHunk[Line]] = []
    for old_start, old_count, new_start, new_count, group in grouped_hunks(a, b, context):
        lines: list[tuple[str, Line]] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines.extend((" ", line) for line in a[a1:a2])
                continue
            lines.extend(("-", line) for line in a[a1:a2])
            lines.extend(("+", line) for line in b[b1:b2])
        hunks.append(LineHunk(old_start, old_count, new_start, new_count, lines))
    return hunks


def grouped_hunks(
    a: Sequence[Line], b: Sequence[Line], context: int = CONTEXT_LINES
) -> Iterator[tuple[int, int, int, int, list[Opcode]]]:
    """Each hunk of ``a`` → ``b`` as (old_start, old_count, new_start, new_count, its opcodes): what
    :func:`line_hunks` makes its lines of (``ide.changes.hunks`` makes its byte hunks of it too)."""
    for group in grouped(diff_opcodes(a, b), context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        old_count, new_count = i2 - i1, j2 - j1
        # Unified-diff convention: an empty range starts at the line before it.
        yield (i1 + 1 if old_count else i1), old_count, (j1 + 1 if new_count else j1), new_count, group


def hunk_header(
    old_start: int, old_count: int, new_start: int, new_count: int, *, always_count: bool = False
) -> str:
    """The ``@@ -a,b +c,d @@`` line; a count of 1 is left out as git does unless ``always_count``."""

    def span(start: int, count: int) -> str:
        return str(start) if count == 1 and not always_count else f"{start},{count}"

    return f"@@ -{span(old_start, old_count)} +{span(new_start, new_count)} @@"


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}


def quote_path(path: str, prefix: str = "") -> str:
    """``prefix + path`` as git writes names in diffs (core.quotePath): a name with a control character,
    a quote, a backslash or a non-ASCII byte goes in double quotes with C escapes, so no file name can
    fake a diff header or hide a character."""
    text = prefix + path
    if all(" " <= ch < "\x7f" and ch not in '"\\' for ch in text):
        return text
    out = []
    for ch in text:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch < "\x7f":
            out.append(ch)
        else:
            out.extend(f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogateescape"))
    return '"' + "".join(out) + '"'


class DiffHunk(Protocol):
    """What :func:`diff_text` reads of a hunk (``ide.protocol.review.HunkView`` is one)."""

    @property
    def header(self) -> str: ...

    @property
    def lines(self) -> Sequence[str]: ...

    @property
    def kind(self) -> str:
        """``text``, or a pseudo-hunk (binary, rename, mode) that has no lines to show."""
        ...


class DiffFile(Protocol):
    """What :func:`diff_text` reads of a file (``ide.protocol.review.FileChangeView`` is one)."""

    @property
    def path(self) -> str: ...

    @property
    def old_path(self) -> str | None: ...

    @property
    def status(self) -> str: ...

    @property
    def binary(self) -> bool: ...

    @property
    def old_mode(self) -> str | None:
        """git's mode before (``100644``), when there is one to show."""
        ...

    @property
    def new_mode(self) -> str | None: ...

    @property
    def hunks(self) -> Sequence[DiffHunk]: ...


@dataclass(frozen=True, slots=True)
class TextHunk:
    """A hunk as diff text: its header and its prefixed lines without endings."""

    header: str
    lines: Sequence[str]
    kind: str = "text"


@dataclass(frozen=True, slots=True)
class TextFile:
    """A file's hunks under its name (a plain modification unless said otherwise)."""

    path: str
    hunks: Sequence[TextHunk]
    old_path: str | None = None
    status: str = "modified"
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None


def diff_text(files: Iterable[DiffFile], style: DiffStyle = "git") -> str:
    """The files as one unified diff, every name quoted as git quotes it.

    ``git``: what `arbor run` prints — ``diff --git``, the old/new mode, new/deleted (with the mode) and
    rename lines as git writes them, ``/dev/null`` for a missing side, and a file without text hunks
    (binary, a pure rename, a mode change alone) ends after those lines. ``patch``: for ``git apply`` —
    ``diff --git`` and the ``---``/``+++`` names always. ``plain``: only the ``---``/``+++`` names and the
    text hunks, without a final newline (the window's copy of a change set). Pseudo-hunks (binary, rename,
    mode) are said by those lines, never printed as hunks.
    """
    out: list[str] = []
    for file in files:
        old = file.old_path or file.path
        old_name, new_name = quote_path(old, "a/"), quote_path(file.path, "b/")
        hunks = [hunk for hunk in file.hunks if hunk.kind == "text"]
        if style != "plain":
            out.append(f"diff --git {old_name} {new_name}")
        if style == "git":
            if file.status == "added":
                out.append(f"new file mode {file.new_mode}" if file.new_mode else "new file")
                old_name = "/dev/null"
            elif file.status == "deleted":
                out.append(f"deleted file mode {file.old_mode}" if file.old_mode else "deleted file")
                new_name = "/dev/null"
            elif file.old_mode and file.new_mode and file.old_mode != file.new_mode:
                out.extend([f"old mode {file.old_mode}", f"new mode {file.new_mode}"])
            if file.status == "renamed":
                out.extend([f"rename from {quote_path(old)}", f"rename to {quote_path(file.path)}"])
            if file.binary:
                if any(hunk.kind == "binary" for hunk in file.hunks):
                    out.append(f"Binary files differ: {quote_path(file.path)}")
                continue
            if not hunks:
                continue
        out.append(f"--- {old_name}")
        out.append(f"+++ {new_name}")
        for hunk in hunks:
            out.append(hunk.header)
            out.extend(hunk.lines)
    text = "\n".join(out)
    return text if style == "plain" or not out else text + "\n"
