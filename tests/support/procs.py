"""Processes read from /proc: whether a process group still has members (zombies included), a process's
children."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def _processes() -> Iterator[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every process, zombies included."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            yield int(entry), int(fields[1]), int(fields[2])


def group_alive(pgid: int) -> bool:
    """True while any process of the process group ``pgid`` exists (zombies included)."""
    return any(group == pgid for _pid, _parent, group in _processes())


def children(pid: int) -> list[int]:
    """The direct children of ``pid``."""
    return [child for child, parent, _group in _processes() if parent == pid]
