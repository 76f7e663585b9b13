"""Commands a hostile repository's configuration could name: one that leaves a marker behind, and the real
language server to exec after it."""

from __future__ import annotations

import sys
from pathlib import Path


def payload(marker: Path, then: str = "") -> list[str]:
    """A command that leaves ``marker`` behind, then (optionally) execs the real program."""
    script = f"open({str(marker)!r}, 'w').close()"
    if then:
        script += f"; import os; os.execvp({then!r}, [{then!r}])"
    return [sys.executable, "-c", script]


def jedi() -> str:
    beside = Path(sys.executable).parent / "jedi-language-server"
    return str(beside) if beside.exists() else "jedi-language-server"
