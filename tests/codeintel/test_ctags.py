"""Cross-check against universal-ctags on the running interpreter's standard library."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from ide.codeintel.index import CodeIndex
from ide.settings import WorkspaceSettings

pytestmark = pytest.mark.skipif(shutil.which("ctags") is None, reason="universal-ctags is not installed")


def test_definitions_include_ctags_classes_functions_and_members(tmp_path: Path) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    settings = WorkspaceSettings(exclude=["site-packages/", "__pycache__/"])
    index = CodeIndex(stdlib, tmp_path / "index.sqlite", settings)
    stats = index.refresh()
    assert stats.files > 1000, stats
    rows = index.db.execute("SELECT path FROM files WHERE language = 'python' AND path LIKE '%.py'")
    python_files = [row[0] for row in rows]
    ctags = subprocess.run(
        ["ctags", "--languages=Python", "--python-kinds=cfm", "-x", "--_xformat=%N\t%K\t%n\t%F", "-L", "-"],
        input="\n".join(python_files),
        cwd=stdlib,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    theirs = set()
    for row in ctags.stdout.splitlines():
        name, _kind, line, path = row.split("\t")
        theirs.add((path, name, int(line)))
    ours = {(symbol.path, symbol.name, symbol.line) for symbol in index.definitions()}
    index.close()
    assert len(theirs) > 30_000
    missing = theirs - ours
    coverage = 1 - len(missing) / len(theirs)
    assert coverage >= 0.98, f"{coverage:.2%} of ctags' tags; first missing: {sorted(missing)[:20]}"
