"""Processes read from /proc: whether a process group still has members (zombies included), a process's
children."""

from __future__ import annotations

import os
from pathlib import Path


def group_alive(pgid: int) -> bool:
    """True while any process of the process group ``pgid`` exists (zombies included)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                return True
    return False


def children(pid: int) -> list[int]:
    """The direct children of ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found
