"""Processes read from /proc: whether a process group still has members (zombies included), a process's
children and all its descendants, and which of the processes recorded earlier still run."""

from __future__ import annotations

import os
import time
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


def _started(pid: int) -> tuple[str, str] | None:
    """(state, start time) of ``pid``, or None when there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], fields[19]


def running_pid(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs: not gone, and not a zombie its parent (after a killed
    parent, init) has not reaped yet."""
    started = _started(pid)
    return started is not None and started[0] != "Z"


def descendants(root: int) -> dict[int, str]:
    """Every process below ``root`` now (children, theirs, …), each with its start time: a pid taken by
    another process later is not mistaken for it."""
    parents = {pid: parent for pid, parent, _group in _processes()}
    found: dict[int, str] = {}
    below = {root}
    while below:
        below = {pid for pid, parent in parents.items() if parent in below and pid not in found}
        for pid in below:
            started = _started(pid)
            if started is not None:
                found[pid] = started[1]
    return found


def command_line(pid: int) -> str:
    """What ``pid`` runs, its arguments joined by spaces ('' when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def running(recorded: dict[int, str]) -> list[str]:
    """The command lines of the ``recorded`` processes (pid → start time) still running; a zombie, dead
    but not yet reaped, is not running."""
    return [
        f"{pid} {command_line(pid)}"
        for pid, start in recorded.items()
        if (now := _started(pid)) is not None and now[1] == start and now[0] != "Z"
    ]


def left_after(recorded: dict[int, str], seconds: float) -> list[str]:
    """Wait until none of ``recorded`` runs, checking every 50 ms for at most ``seconds``; what still runs."""
    deadline = time.monotonic() + seconds
    while (still := running(recorded)) and time.monotonic() < deadline:
        time.sleep(0.05)  # a bounded poll: the kernel tells no one else's process about these ends
    return still
