"""Throwaway checkouts of a change set, where tests and linters can run against proposed changes."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pathspec import GitIgnoreSpec

from ide.changes.gitutil import find_repo, git
from ide.changes.overlay import ChangeError, ChangeSet, git_permissions
from ide.fswalk import walk_files
from ide.lifetime import SCRATCH_PREFIX
from ide.settings import WorkspaceSettings

PREFIX = SCRATCH_PREFIX
"""How every scratch directory's name begins, its maker's pid next (:func:`ide.lifetime.scratch_prefix`)."""
_NAME = re.compile(rf"^{PREFIX}(\d+)-")
WORKTREES_LOCK = threading.Lock()
"""git worktree add, remove and prune one at a time: a prune or an add that lists the worktrees while
another add is half done fails ("not a git repository: .git/worktrees/treeN"), as concurrent LATS test
runs showed."""


@contextmanager
def scratch_worktree(changeset: ChangeSet) -> Iterator[Path]:
    """Yield a directory holding the workspace as the change set sees it; removed on exit.

    In git: a detached worktree at HEAD, plus the user's uncommitted (and untracked, non-ignored) files,
    plus the overlay. Outside git: a copy of the workspace without the default excludes, plus the overlay.
    """
    root = changeset.root
    repo = find_repo(root)
    tmp = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    checkout = tmp / "tree"
    worktree = False
    try:
        if repo is not None and repo.head():
            with WORKTREES_LOCK:
                git(repo.top, "worktree", "add", "--detach", "--quiet", str(checkout), "HEAD")
            worktree = True
            _copy_uncommitted(repo.top, checkout)
            workdir = checkout / repo.prefix if repo.prefix else checkout
        else:
            _copy_tree(root, checkout)
            workdir = checkout
        for rel in changeset.changed_paths():
            entry = changeset.entry(rel)
            target = workdir / rel
            if entry is None or entry.data is None:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(entry.data)
            os.chmod(target, git_permissions(entry.mode))  # as a checkout of the commit would have it
        yield workdir
    finally:
        with WORKTREES_LOCK:
            if worktree and repo is not None:
                git_cleanup(repo.top, "worktree", "remove", "--force", str(checkout))
            shutil.rmtree(tmp, ignore_errors=True)
            if repo is not None:
                git_cleanup(repo.top, "worktree", "prune")


def prune_stale_worktrees(root: Path | None = None, temp: Path | None = None) -> list[Path]:
    """Remove the scratch directories whose process died — checkouts, shadows, an agent's TMPDIR, an eval
    run's workspace, in ``temp`` (default: the temporary directory) — and the worktree registrations they
    left in ``root``'s repository (call at start); returns what was removed."""
    removed: list[Path] = []
    for path in Path(temp or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        match = _NAME.match(path.name)
        if match is None or _alive(int(match.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    repo = find_repo(root) if root is not None else None
    if repo is not None:
        with WORKTREES_LOCK:
            git_cleanup(repo.top, "worktree", "prune")
    return removed


def git_cleanup(top: Path, *args: str) -> None:
    """git in ``top`` for a clean-up whose failure leaves nothing worse (a worktree already gone)."""
    with contextlib.suppress(ChangeError):
        git(top, *args)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (ended, not yet reaped by whoever adopted it) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux): it exists


def _copy_uncommitted(top: Path, checkout: Path) -> None:
    """Tracked modifications and deletions, and untracked files that are not ignored."""
    changed = git(top, "diff", "--name-only", "-z", "HEAD").split(b"\0")
    untracked = git(top, "ls-files", "--others", "--exclude-standard", "-z").split(b"\0")
    for raw in filter(None, changed + untracked):
        rel = os.fsdecode(raw)
        source, target = top / rel, checkout / rel
        if source.is_file() or source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
        elif not source.exists():
            target.unlink(missing_ok=True)


def _copy_tree(root: Path, checkout: Path) -> None:
    spec = GitIgnoreSpec.from_lines([".git/", *WorkspaceSettings().exclude])
    checkout.mkdir(parents=True, exist_ok=True)
    for rel in walk_files(root, lambda rel: not spec.match_file(rel + "/")):
        if not spec.match_file(rel):
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, checkout / rel, follow_symlinks=False)
