"""Helpers for change-set tests: git (identity set by tests/conftest.py), a store, a non-git workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import BatchStore
from tests.support.git import git

__all__ = ["git"]


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
