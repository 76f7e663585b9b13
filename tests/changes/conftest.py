"""Fixtures of the change-set tests: a store and a non-git workspace (their git is tests/support/git.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import BatchStore


@pytest.fixture
def store(tmp_path: Path) -> BatchStore:
    return BatchStore(tmp_path / "data")


@pytest.fixture
def plain_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("one\ntwo\nthree\n")
    (root / "notes.txt").write_bytes(b"alpha\r\nbeta\r\n")
    return root
