"""Scratch worktrees hold HEAD + the user's uncommitted state + the overlay, and vanish afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ide.changes import ChangeSet, prune_stale_worktrees, scratch_worktree
from tests.support.git import git


def test_git_scratch_worktree_has_user_state_and_overlay(git_workspace: Path) -> None:
    root = git_workspace
    (root / "README.md").write_text("user edit\n")
    (root / "pkg" / "__init__.py").unlink()
    (root / "untracked.py").write_text("u = 1\n")
    cs = ChangeSet(root)
    cs.edit("pkg/greet.py", "Hello", "Hi")
    cs.create("pkg/new.py", "n = 1\n")
    cs.delete("untracked.py")
    with scratch_worktree(cs) as tree:
        assert tree.name == "tree" and tree.parent.name.startswith(f"arbor-scratch-{os.getpid()}-")
        assert (tree / "README.md").read_text() == "user edit\n"
        assert not (tree / "pkg/__init__.py").exists()
        assert "Hi, {name}" in (tree / "pkg/greet.py").read_text()
        assert (tree / "pkg/new.py").read_text() == "n = 1\n"
        assert not (tree / "untracked.py").exists()
        assert not (tree / "debug.log").exists()
        assert str(tree) in git(root, "worktree", "list")
    assert not tree.exists()
    assert str(tree) not in git(root, "worktree", "list")
    assert "Hello" in (root / "pkg/greet.py").read_text() and (root / "untracked.py").exists()


def test_plain_scratch_copy_skips_excludes(plain_workspace: Path) -> None:
    (plain_workspace / "node_modules").mkdir()
    (plain_workspace / "node_modules" / "big.js").write_text("x")
    cs = ChangeSet(plain_workspace)
    cs.edit("src/a.py", "two", "2")
    with scratch_worktree(cs) as tree:
        assert (tree / "src/a.py").read_text() == "one\n2\nthree\n"
        assert (tree / "notes.txt").read_bytes() == b"alpha\r\nbeta\r\n"
        assert not (tree / "node_modules").exists()
    assert not tree.exists()


def test_stale_worktrees_of_dead_processes_are_pruned(git_workspace: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    pid = int(dead.stdout)
    stale = Path(tempfile.mkdtemp(prefix=f"arbor-scratch-{pid}-"))
    git(git_workspace, "worktree", "add", "--detach", "-q", str(stale / "tree"), "HEAD")
    alive = Path(tempfile.mkdtemp(prefix=f"arbor-scratch-{os.getpid()}-"))
    try:
        removed = prune_stale_worktrees(git_workspace)
        assert stale in removed and not stale.exists()
        assert alive.exists()
        assert str(stale) not in git(git_workspace, "worktree", "list")
    finally:
        alive.rmdir()


def test_concurrent_scratch_worktrees_of_one_repository_all_work(git_workspace: Path) -> None:
    # LATS runs its test command in several branches at once; git's worktree add, remove and prune
    # racing each other failed ("not a git repository: .git/worktrees/treeN") before they took turns.
    import threading

    failures: list[str] = []

    def use_worktrees() -> None:
        for _ in range(15):
            try:
                with scratch_worktree(ChangeSet(git_workspace)) as tree:
                    assert (tree / "pkg/greet.py").is_file()
            except Exception as exc:  # collected: an assert in a thread would not fail the test
                failures.append(repr(exc))

    threads = [threading.Thread(target=use_worktrees) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert git(git_workspace, "worktree", "list").count("\n") == 1  # only the main one is left
