"""Git for tests: a fixed identity (set for every test by tests/conftest.py) and a one-call runner."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Arbor Tests",
    "GIT_AUTHOR_EMAIL": "tests@arbor.invalid",
    "GIT_COMMITTER_NAME": "Arbor Tests",
    "GIT_COMMITTER_EMAIL": "tests@arbor.invalid",
}


def git(root: Path, *args: str) -> str:
    """Run git in ``root``; its stdout, or CalledProcessError."""
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


HELLO = 'print("hello")\n'


def hello_repo(parent: Path) -> Path:
    """``parent/ws``: a git repository holding one committed ``hello.py`` (branch main) — the workspace the
    foreign-agent tests hand an agent."""
    root = parent / "ws"
    root.mkdir()
    (root / "hello.py").write_text(HELLO)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root
