"""Whether a process group still has members, read from /proc (zombies included)."""

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
