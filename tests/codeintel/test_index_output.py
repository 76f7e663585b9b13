"""The index's output pinned: every file, definition, reference and import row (and a few searches) a full
pass writes for a fixed corpus — the language samples and some standard-library packages — digested and
compared with the digest the code made before issue 32's speed-ups. A faster pass must find the same."""

from __future__ import annotations

import hashlib
import shutil
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import pytest

import ide.codeintel.index.extract as extract
import ide.codeintel.index.indexer as indexer
from ide.codeintel.index import CodeIndex
from ide.settings import WorkspaceSettings
from tests.support.language_samples import CPP, GO, JAVA, JAVASCRIPT, PYTHON, RUST, TSX, TYPESCRIPT, C

SAMPLES = {
    "samples/app.py": PYTHON,
    "samples/app.js": JAVASCRIPT,
    "samples/app.ts": TYPESCRIPT,
    "samples/app.tsx": TSX,
    "samples/app.go": GO,
    "samples/app.rs": RUST,
    "samples/App.java": JAVA,
    "samples/app.c": C,
    "samples/app.cpp": CPP,
}
PACKAGES = (
    "json", "email", "asyncio", "importlib", "concurrent", "xml", "http", "logging", "unittest", "urllib",
    "tomllib", "collections", "ctypes", "sqlite3", "lib2to3",
)  # fmt: skip
MODULES = ("typing.py", "dataclasses.py", "argparse.py", "enum.py", "inspect.py")
SEARCHES = ("Cache", "get", "loads", "parse_args", "Futur", "EmailMessage", "xmlrpc", "qzx")

STDLIB_INPUT = "be840e9f8fc4ac052ae1d64bb7765d6c6fb742fff0f8fb99a64bd3aeccd52128"
"""Digest of the standard-library files copied (Python 3.11.7's); another Python's differ and skip."""
STDLIB_OUTPUT = "7fd1f85d33c561f660a46d48d9b9e2d2358993c9a79a8d83527096f362d70dfe"
SAMPLES_OUTPUT = "c969d21e6fb4159549b6ba5cab8da8692747addc9b76c079c4524c7afd84a222"


def _corpus(root: Path) -> str:
    """Copy the corpus under ``root``; the digest of the standard-library files copied."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in PACKAGES:
        shutil.copytree(stdlib / name, root / "stdlib" / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in MODULES:
        shutil.copy(stdlib / name, root / "stdlib" / name)
    digest = hashlib.sha256()
    for path in sorted((root / "stdlib").rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for rel, text in SAMPLES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return digest.hexdigest()


def _digest(rows: Iterable[tuple[object, ...]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(repr(row).encode() + b"\n")
    return digest.hexdigest()


def _output(index: CodeIndex, prefix: str) -> str:
    """Every row the index holds for the files under ``prefix``, in each file's own order."""
    db, like = index.db, prefix + "%"
    tables = [
        db.execute(
            "SELECT path, language, status, note, lines FROM files WHERE path LIKE ? ORDER BY path", (like,)
        ),
        db.execute(
            "SELECT f.path, d.name, d.qualname, d.kind, d.line, d.end_line, d.signature, d.params, "
            "d.returns, d.doc, d.parent FROM defs d JOIN files f ON f.id = d.file_id WHERE f.path LIKE ? "
            "ORDER BY f.path, d.id",
            (like,),
        ),
        db.execute(
            "SELECT f.path, r.name, r.lines, r.count FROM refs r JOIN files f ON f.id = r.file_id "
            "WHERE f.path LIKE ? ORDER BY f.path, r.name",
            (like,),
        ),
        db.execute(
            "SELECT f.path, i.module FROM imports i JOIN files f ON f.id = i.file_id WHERE f.path LIKE ? "
            "ORDER BY f.path, i.rowid",
            (like,),
        ),
    ]
    rows: list[tuple[object, ...]] = [row for table in tables for row in table]
    for query in SEARCHES:  # as a set: ties are ordered by row id, which follows the workers' finishing order
        rows += sorted(
            (query, s.path, s.qualname, s.kind, s.line, round(s.score, 6))
            for s in index.search(query, 1000)
            if s.path.startswith(prefix)
        )
    return _digest(rows)


@pytest.mark.parametrize(
    ("workers", "bulk_min", "commit_every", "over_older"),
    [(2, 1, 50, False), (1, 10**9, 2000, False), (2, 1, 50, True)],
    ids=["pool-bulk", "in-process-row-by-row", "pool-bulk-over-an-older-index"],
)
def test_a_full_pass_writes_the_pinned_rows(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: int,
    bulk_min: int,
    commit_every: int,
    over_older: bool,
) -> None:
    monkeypatch.setattr(indexer, "BULK_MIN", bulk_min)
    monkeypatch.setattr(indexer, "COMMIT_EVERY", commit_every)  # a bulk pass feeds search at each commit
    root = tmp_path / "ws"
    stdlib_input = _corpus(root)
    index = CodeIndex(root, tmp_path / "index.sqlite", WorkspaceSettings(), workers)
    try:
        if over_older:  # every file held another's text at the first pass: the second replaces all rows
            files = sorted(path for path in root.rglob("*") if path.is_file())
            texts = [path.read_bytes() for path in files]
            for path, text in zip(files, texts[1:] + texts[:1], strict=True):
                path.write_bytes(text)
            index.refresh()
            for path, text in zip(files, texts, strict=True):
                path.write_bytes(text)
        stats = index.refresh()
        assert stats.parsed > 300 and stats.symbols > 9000, stats
        assert _output(index, "samples/") == SAMPLES_OUTPUT
        if stdlib_input != STDLIB_INPUT:
            pytest.skip("another Python's standard library: its rows are pinned for 3.11.7's only")
        assert _output(index, "stdlib/") == STDLIB_OUTPUT
    finally:
        index.close()


def test_definitions_by_captures_are_the_ones_by_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's definitions, imports and references are read from the query's captures (no dict per
    match); every file of the corpus must give what the matches give, field for field."""
    _corpus(tmp_path)
    files = sorted(path for path in tmp_path.rglob("*.py") if path.is_file())
    assert len(files) > 300
    by_captures = [extract.extract(path.read_bytes(), "python") for path in files]
    monkeypatch.setattr(extract, "BY_CAPTURES", frozenset())
    calls = []
    monkeypatch.setattr(extract, "_by_captures", lambda *args: calls.append(args))  # never called now
    by_matches = [extract.extract(path.read_bytes(), "python") for path in files]
    assert not calls
    assert sum(len(symbols.definitions) for symbols in by_matches) > 5000
    for path, new, old in zip(files, by_captures, by_matches, strict=True):
        assert new == old, path
