"""One exclusive lock per workspace over everything that writes and commits a batch: Apply (plan → write
→ commit), Roll back and the recovery of an interrupted Apply.

Two Applies planned from the same base must not interleave: the second would write over the first and
commit on top of it, silently reverting it. The lock is an ``flock`` on a file under Arbor's data dir
(never inside the repository), named for the real path of the repository's top (or of the workspace
outside git), so every Arbor process of the user — windows, ``arbor run``, threads of one backend —
takes turns on one repository. A process that dies releases it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ide.changes.overlay import ChangeError
from ide.private import private_dir, private_file, tightened
from ide.settings import Settings, workspace_key

WAIT_S = 120.0
"""How long an Apply waits for another one on the same workspace before it gives up (nothing written)."""
_POLL_S = 0.05


def lock_path(place: Path) -> Path:
    """The lock file of the workspace or repository at ``place`` (its real path is the key)."""
    return tightened(Settings().resolved_data_dir()) / "locks" / f"{workspace_key(place)}.lock"


@contextlib.contextmanager
def workspace_lock(place: Path, *, wait_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of ``place`` (a repository's top, or a workspace outside git).

    Waits up to ``wait_s`` (default ``WAIT_S``) for another holder; then a ChangeError naming it, before
    anything is written. A no-op where ``fcntl`` is missing (Windows), where the commit's HEAD check still
    refuses a lost update.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Linux/macOS
        yield
        return
    path = lock_path(place)
    private_file(private_dir(path.parent) / path.name)
    wait_s = WAIT_S if wait_s is None else wait_s
    with open(path, "a+b") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ChangeError(
                        f"another Apply or Roll back is still running on {place} (process "
                        f"{_holder(path)}) after {wait_s:g} s; nothing was written — try again when it "
                        "has finished"
                    ) from None
                time.sleep(_POLL_S)
        try:
            handle.truncate(0)
            handle.write(str(os.getpid()).encode())
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"
