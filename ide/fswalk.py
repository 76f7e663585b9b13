"""An iterative directory walk, bounded in depth, that never follows links: Python 3.11's ``os.walk``
recurses, so a 1,400-deep tree raises RecursionError, and a walk that follows links can loop.

Qt-free and dependency-free: the window's file list uses it as well as the backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

MAX_WALK_DEPTH = 64
"""Directories deeper than this are not entered (real projects stay far below it)."""


def folder_entries(folder: str | os.PathLike[str], rel_folder: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative POSIX path, entry) of each entry of ``folder``, whose own path is ``rel_folder`` ("" for the
    walk's root), by name so a walk's order is the same on every file system; none when it is unreadable."""
    try:
        with os.scandir(folder) as handle:
            entries = sorted(handle, key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        yield (f"{rel_folder}/{entry.name}" if rel_folder else entry.name), entry


def walk_files(
    root: str | os.PathLike[str],
    keep_dir: Callable[[str], bool] = lambda _rel: True,
    max_depth: int = MAX_WALK_DEPTH,
) -> Iterator[str]:
    """Relative POSIX paths of the files (and links) under ``root``; ``keep_dir(rel)`` prunes directories.

    Links are listed but never followed into, unreadable directories are skipped, and so is anything
    deeper than ``max_depth``.
    """
    stack: list[tuple[str, str, int]] = [(os.fspath(root), "", 0)]
    while stack:
        folder, rel_folder, depth = stack.pop()
        subdirs = []
        for rel, entry in folder_entries(folder, rel_folder):
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 < max_depth and keep_dir(rel):
                        subdirs.append((entry.path, rel, depth + 1))
                elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                    yield rel  # a link is listed as what it is, never entered
            except OSError:
                continue
        stack.extend(reversed(subdirs))
