"""The files an ``arbor eval`` report points at — a run's tree, another agent's diff and transcript — read
safely, and that diff parsed for the review pane's diff editor. No Qt here.

A report is input: its paths are relative to the report's folder, and one that is absolute or leads out of
it (``../../etc/passwd``, or a link inside the folder to somewhere else) is refused, never read. A file
that is missing, unreadable or too large is said in words (:class:`RunFileError`), never a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from ide.protocol.hidden import show_hidden
from ide.protocol.review import FileChangeView, FileStatus, HunkView

MAX_BYTES = 500_000
"""Past this a run's transcript is shown cut (its first part), so a runaway agent's output cannot hold the
window."""
MAX_DIFF_BYTES = 200_000
"""The same for a diff, whose rows cost more to lay out (a few hundred milliseconds at this size)."""
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class RunFileError(ValueError):
    """A run's file that cannot be shown; the message says which and why, for the dock."""


def run_file(folder: Path, relative: str, what: str) -> Path:
    """``relative`` (a path from the report) resolved in the report's ``folder``; :class:`RunFileError`
    when it is absolute or leads outside the folder (links followed), or is missing."""
    if not relative or PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).is_absolute():
        raise RunFileError(f"its {what} file {relative!r} is not a path inside the report's folder.")
    base = folder.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise RunFileError(f"its {what} file {relative!r} is outside the report's folder.")
    if not target.is_file():
        raise RunFileError(f"its {what} file {relative} is missing.")
    return target


def read_run_file(folder: Path, relative: str, what: str, limit: int = MAX_BYTES) -> tuple[str, bool]:
    """The text of a run's file (see :func:`run_file`) and whether it was cut at ``limit`` bytes; bytes
    that are not UTF-8 are shown replaced."""
    target = run_file(folder, relative, what)
    try:
        with target.open("rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise RunFileError(f"its {what} file {relative} cannot be read ({exc.strerror or exc}).") from exc
    cut = len(data) > limit
    return data[:limit].decode("utf-8", errors="replace"), cut


def readable_text(text: str) -> str:
    """A transcript as plain text to show: terminal colour and control sequences dropped, other control
    characters and bidi or invisible characters made visible (an agent's output is input too)."""
    text = ANSI.sub("", text).replace("\r\n", "\n")
    text = CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return show_hidden(text)


def _path_of(line: str) -> str | None:
    """The path of a ``--- a/x`` or ``+++ b/x`` line; None for /dev/null."""
    name = line[4:].split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    return name[2:] if name[:2] in ("a/", "b/") else name


def _counts(header: re.Match[str]) -> tuple[int, int, int, int]:
    old_start, old_count, new_start, new_count = header.groups()
    return (
        int(old_start),
        1 if old_count is None else int(old_count),
        int(new_start),
        1 if new_count is None else int(new_count),
    )


class _File:
    """A file of the diff as it is read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.old_path: str | None = path
        self.new_path: str | None = path
        self.binary = False
        self.hunks: list[HunkView] = []

    def view(self) -> FileChangeView:
        status: FileStatus = "modified"
        if self.old_path is None:
            status = "added"
        elif self.new_path is None:
            status = "deleted"
        elif self.old_path != self.new_path:
            status = "renamed"
        lines = [line for hunk in self.hunks for line in hunk.lines]
        return FileChangeView(
            path=self.new_path or self.old_path or self.path,
            old_path=self.old_path if status == "renamed" else None,
            status=status,
            binary=self.binary,
            additions=sum(1 for line in lines if line.startswith("+")),
            deletions=sum(1 for line in lines if line.startswith("-")),
            hunks=self.hunks,
        )


def parse_unified(text: str) -> list[FileChangeView]:
    """The files of a unified diff (git's or plain), each with its hunks; lines outside any hunk that are
    not file headers (``# !`` notes, ``index`` lines) are skipped. Empty for a text with no file in it."""
    files: list[_File] = []
    current: _File | None = None
    hunk: HunkView | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current, hunk = _File(line.rsplit(" b/", 1)[-1]), None
            files.append(current)
        elif hunk is not None and line[:1] in (" ", "-", "+", "\\") and not _header_line(line, hunk):
            hunk.lines.append(line)
        elif line.startswith("--- ") and (hunk is None or _header_line(line, hunk)):
            if current is None or current.hunks:
                current = _File(_path_of(line) or "")
                files.append(current)
            current.old_path, hunk = _path_of(line), None
        elif line.startswith("+++ ") and current is not None:
            current.new_path, hunk = _path_of(line), None
            current.path = current.new_path or current.old_path or current.path
        elif (header := HUNK_HEADER.match(line)) and current is not None:
            old_start, old_count, new_start, new_count = _counts(header)
            hunk = HunkView(
                id=f"{len(files)}.{len(current.hunks)}",
                header=line,
                old_start=old_start,
                old_count=old_count,
                new_start=new_start,
                new_count=new_count,
                lines=[],
            )
            current.hunks.append(hunk)
        elif current is not None and line.startswith("Binary files "):
            current.binary = True
        elif current is not None and line.startswith(("new file mode", "deleted file mode")):
            if line.startswith("new"):
                current.old_path = None
            else:
                current.new_path = None
    return [file.view() for file in files]


def _header_line(line: str, hunk: HunkView) -> bool:
    """Whether ``line`` ends ``hunk`` (all its lines are in) and starts the next file's headers."""
    olds = sum(1 for text in hunk.lines if text[:1] in (" ", "-"))
    news = sum(1 for text in hunk.lines if text[:1] in (" ", "+"))
    return olds >= hunk.old_count and news >= hunk.new_count and line.startswith(("--- ", "+++ "))
