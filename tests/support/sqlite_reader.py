"""What another process reads from an SQLite file: whether a store's calls are committed when they return."""

from __future__ import annotations

import json
import subprocess
import sys
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
