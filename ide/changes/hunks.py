"""Unified-diff hunks between a file's base bytes and its proposed bytes, and applying any subset of them.

Everything works on byte lines split after b"\\n" (so CRLF, a missing final newline and non-UTF-8 bytes
survive untouched); applying a subset gives the same bytes as ``git apply`` of a patch of that subset.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ide.protocol.diff import (
    CONTEXT_LINES,
    NO_NEWLINE,
    TextFile,
    TextHunk,
    diff_text,
    grouped_hunks,
    hunk_header,
)


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte in the first 8000 bytes."""
    return b"\x00" in data[:8000]


def split_lines(data: bytes) -> list[bytes]:
    """Lines of ``data``, each keeping its b"\\n" (the last one may have none)."""
    if data.count(b"\r") == data.count(b"\r\n"):
        # No lone b"\r": bytes.splitlines breaks exactly where b"\n" does, in C.
        return data.splitlines(keepends=True)
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


@dataclass(frozen=True)
class Hunk:
    """One hunk against the base: ``old_start`` is 1-based (the line before when ``old_count`` is 0)."""

    id: str
    path: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[bytes, ...]  # prefix byte (' ', '-', '+') + line bytes with their own ending
    kind: str = "text"  # "text" | "binary" | "rename" | "mode"
    modes: tuple[str, str] | None = None
    """A mode hunk's git modes, old and new (``100644``, ``100755``)."""

    @property
    def header(self) -> str:
        if self.kind == "binary":
            return "Binary file changed"
        if self.kind == "rename":
            return "Rename"
        if self.kind == "mode" and self.modes is not None:
            old, new = self.modes
            what = "made executable" if new == "100755" else "no longer executable"
            return f"old mode {old} → new mode {new} ({what})"
        return hunk_header(self.old_start, self.old_count, self.new_start, self.new_count)

    @property
    def removed(self) -> list[bytes]:
        return [line[1:] for line in self.lines if line[:1] in (b" ", b"-")]

    @property
    def added(self) -> list[bytes]:
        return [line[1:] for line in self.lines if line[:1] in (b" ", b"+")]

    @property
    def additions(self) -> int:
        return sum(1 for line in self.lines if line[:1] == b"+")

    @property
    def deletions(self) -> int:
        return sum(1 for line in self.lines if line[:1] == b"-")

    def display_lines(self) -> list[str]:
        """Lines for the review pane: prefix + text without ending, '\\' after a line lacking a newline."""
        out: list[str] = []
        for line in self.lines:
            text = line.decode("utf-8", errors="replace")
            if text.endswith("\n"):
                text = text[:-1]
                text = text.removesuffix("\r")
                out.append(text)
            else:
                out.append(text)
                out.append(NO_NEWLINE)
        return out


def hunk_id(path: str, old_start: int, removed: list[bytes], added: list[bytes], salt: bytes = b"") -> str:
    digest = hashlib.sha1(path.encode("utf-8", "surrogateescape") + b"\0" + salt)
    digest.update(str(old_start).encode())
    # The bytes of b"-" + line for each removed line, then b"+" + line for each added one, joined in C.
    if removed:
        digest.update(b"-" + b"-".join(removed))
    if added:
        digest.update(b"+" + b"+".join(added))
    return digest.hexdigest()[:16]


def text_hunks(path: str, old: bytes, new: bytes) -> list[Hunk]:
    """The unified diff of ``old`` → ``new`` with 3 lines of context, as hunks with stable ids (fast on any
    input: ide.linediff; a change too big to match line by line is one whole-range hunk).

    The hunks of ``ide.protocol.diff.line_hunks``, made straight from the grouped opcodes: each line is
    prefixed once, with no (prefix, line) pair in between."""
    a, b = split_lines(old), split_lines(new)
    hunks: list[Hunk] = []
    for old_start, old_count, new_start, new_count, group in grouped_hunks(a, b, CONTEXT_LINES):
        lines: list[bytes] = []
        removed: list[bytes] = []
        added: list[bytes] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [b" " + line for line in a[a1:a2]]
                continue
            gone, came = a[a1:a2], b[b1:b2]
            removed += gone
            added += came
            lines += [b"-" + line for line in gone]
            lines += [b"+" + line for line in came]
        hunks.append(
            Hunk(
                hunk_id(path, old_start, removed, added),
                path,
                old_start,
                old_count,
                new_start,
                new_count,
                tuple(lines),
            )
        )
    return hunks


def binary_hunk(path: str, old: bytes | None, new: bytes | None) -> Hunk:
    """The whole-file pseudo-hunk of a binary change."""
    salt = hashlib.sha1(old or b"").digest() + hashlib.sha1(new or b"").digest()
    return Hunk(hunk_id(path, 0, [], [], b"binary" + salt), path, 0, 0, 0, 0, (), "binary")


def rename_hunk(old_path: str, new_path: str) -> Hunk:
    """The pseudo-hunk that moves a file; its content hunks are separate."""
    salt = b"rename\0" + old_path.encode("utf-8", "surrogateescape")
    return Hunk(hunk_id(new_path, 0, [], [], salt), new_path, 0, 0, 0, 0, (), "rename")


def mode_hunk(path: str, old_mode: str, new_mode: str) -> Hunk:
    """The pseudo-hunk that changes a file's mode as git records it (``100644`` → ``100755`` or back);
    decided on its own, like a rename, apart from the file's content hunks."""
    salt = f"mode\0{old_mode}\0{new_mode}".encode()
    return Hunk(hunk_id(path, 0, [], [], salt), path, 0, 0, 0, 0, (), "mode", (old_mode, new_mode))


def apply_hunks(old: bytes, hunks: list[Hunk]) -> bytes:
    """``old`` with exactly ``hunks`` (text hunks of one diff against ``old``) applied."""
    a = split_lines(old)
    out: list[bytes] = []
    pos = 0  # 0-based index of the next base line to copy
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        start = hunk.old_start - 1 if hunk.old_count else hunk.old_start
        out.extend(a[pos:start])
        out.extend(hunk.added)
        pos = start + hunk.old_count
    out.extend(a[pos:])
    return b"".join(out)


def patch_text(path: str, hunks: list[Hunk]) -> bytes:
    """A ``git apply``-able patch of exactly ``hunks`` (new starts recomputed for the subset)."""
    parts: list[TextHunk] = []
    delta = 0
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        new_start = hunk.old_start + delta
        if hunk.old_count == 0:
            new_start += 1
        if hunk.new_count == 0:
            new_start -= 1
        header = hunk_header(hunk.old_start, hunk.old_count, new_start, hunk.new_count)
        parts.append(TextHunk(header, _patch_lines(hunk.lines)))
        delta += hunk.new_count - hunk.old_count
    return diff_text([TextFile(path, parts)], "patch").encode("utf-8", "surrogateescape")


def _patch_lines(lines: tuple[bytes, ...]) -> list[str]:
    """Byte lines as lossless text (surrogate escapes) without b"\\n", a marker after a line lacking it."""
    out: list[str] = []
    for line in lines:
        text = line.decode("utf-8", "surrogateescape")
        if text.endswith("\n"):
            out.append(text[:-1])
        else:
            out.extend([text, NO_NEWLINE])
    return out
