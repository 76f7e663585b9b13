"""For the stores' tests: what another process reads from an SQLite file (whether a store's calls are
committed when they return), and calls made from many threads at once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path


def other_process_reads(path: Path, sql: str) -> list[list[object]]:
    """The rows ``sql`` gives in a fresh process with its own connection to ``path``."""
    script = (
        "import json, sqlite3, sys; "
        "print(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), sql], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def from_threads(call: Callable[[int], None], count: int = 8) -> list[BaseException]:
    """Run ``call(n)`` for n below ``count``, each in its own thread, all at once; what they raised."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            call(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors
