"""Helpers for change-set tests: git with a fixed identity, a store, and a non-git workspace."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ide.changes import BatchStore

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENV}
    ).stdout.decode()


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
