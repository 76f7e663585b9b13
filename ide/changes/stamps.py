"""Whether a file changed since it was read, from ``stat`` alone: its stamp, and when a stamp vouches."""

from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[int, int, int, int, int]
"""What ``stat`` says of a file, (mtime_ns, ctime_ns, size, inode, mode): while it holds, so does the file."""
MISSING: Stamp = (0, 0, 0, 0, 0)
"""The stamp of no file at the path."""
RACY_NS = 50_000_000
"""A file written this shortly before its stamp was taken may change again within the same timestamp tick
unseen by ``stat``: such a stamp vouches for nothing, and the file is read again (git's "racily clean")."""


def stamp(path: Path | str) -> Stamp | None:
    """The stamp of the file at ``path`` (links followed; MISSING: none there), None when ``stat`` fails."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except (OSError, ValueError):
        return None
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_mode)


def vouching(found: Stamp | None, taken_ns: int) -> Stamp | None:
    """``found``, taken by a ``stat`` after ``time.time_ns()`` said ``taken_ns``, when it can tell a later
    write from the content read after it; None when the file was written too recently for that."""
    if found is None or max(found[:2]) >= taken_ns - RACY_NS:
        return None
    return found
