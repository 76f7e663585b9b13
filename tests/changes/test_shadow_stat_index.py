"""The shadow's speed-ups keep what it holds and what it captures (issue 50): a baseline taken from the
checkout's index equals the one a walk of the shadow takes, and a capture through the stat index
(``git diff-files``) finds exactly what comparing every file's content with its baseline finds — for
edits of every kind, hostile ones included (same size, mtime set back, hard links from outside, mmap,
links out of the shadow), before and after the watched files are handed to the stat index.

The index vouches for a file only once its ctime lies in an earlier second, so these tests wait for
one (a checkout that takes a second does the same)."""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ide.changes.shadow as shadow_module
import ide.changes.shadowbase as base_module
from ide.changes.overlay import ChangeError
from ide.changes.shadow import Shadow
from ide.settings import WorkspaceSettings
from ide.tools import Workspace
from tests.support.git import git

SECOND_S = 1.1
"""Past the next second boundary: what the stat index needs before it vouches for a file."""


def _make_repo(root: Path) -> Path:
    root.mkdir()
    for folder in range(6):
        for n in range(12):
            path = root / f"pkg{folder}" / f"sub{n % 3}" / f"mod{n}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"value = {folder * 100 + n}\n" * (n + 1))
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "run.sh", 0o755)
    (root / "link.py").symlink_to("pkg0/sub0/mod0.py")
    (root / ".env").write_text("KEY=tracked secret\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "empty.txt").write_bytes(b"")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    # The user's uncommitted state: an edit, a new file in a new folder, a deletion, an ignored file.
    (root / "pkg1" / "sub1" / "mod1.py").write_text("the user's edit\n")
    (root / "fresh" / "new.py").parent.mkdir()
    (root / "fresh" / "new.py").write_text("untracked\n")
    (root / "pkg2" / "sub2" / "mod2.py").unlink()
    (root / "trace.log").write_text("ignored\n")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _make_repo(tmp_path / "ws")


def _secret(root: Path) -> Callable[[str], bool]:
    files = Workspace(root, WorkspaceSettings())
    return files.is_secret_rel  # as the backend asks (ide.backend.extensions.foreign)


@pytest.fixture(autouse=True)
def small_repositories_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """These repositories are small: the stat index takes them all the same."""
    monkeypatch.setattr(base_module.ShadowBase, "stat_index_min", 0)


@pytest.fixture
def slow_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkout ends a second before the baseline is taken, so the stat index vouches for it all."""
    checkout = base_module.own_repository

    def slow(*args: object) -> None:
        checkout(*args)  # type: ignore[arg-type]
        time.sleep(SECOND_S)

    monkeypatch.setattr(base_module, "own_repository", slow)


def _state(shadow: Shadow) -> tuple[object, ...]:
    files = sorted(
        (p.relative_to(shadow.root).as_posix(), p.is_symlink() or p.read_bytes(), p.lstat().st_mode)
        for p in shadow.root.rglob("*")
        if ".git" not in p.relative_to(shadow.root).parts and (p.is_symlink() or p.is_file())
    )
    return (dict(shadow._known), set(shadow._dirs), shadow.withheld, shadow.notes, shadow._base, files)


@pytest.fixture(params=[0o022, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask while the test runs (a checkout's files get their modes through it)."""
    before = os.umask(request.param)
    yield request.param
    os.umask(before)


def test_the_baseline_from_the_checkouts_index_is_the_one_a_walk_takes(
    repo: Path, slow_checkout: None, monkeypatch: pytest.MonkeyPatch, umask: int
) -> None:
    fast = Shadow.create(repo, secret=_secret(repo))
    try:
        assert fast._index is not None and len(fast._index.entries) > 60  # vouched by the stat index
        assert "empty.txt" in fast._index.entries and "link.py" in fast._index.entries
        monkeypatch.setattr(base_module, "read_entries", lambda _data: None)
        walked = Shadow.create(repo, secret=_secret(repo))
        try:
            assert walked._index is not None and not walked._index.entries
            assert _state(fast) == _state(walked)
            assert ".env" in fast.withheld and not (fast.root / ".env").exists()
            assert fast._known["run.sh"] == 0o777 & ~umask and fast._known["link.py"] == 0o777
        finally:
            walked.close()
    finally:
        fast.close()


def _edit_everything(root: Path, outside: Path) -> set[str]:
    """Edits of every kind in the shadow at ``root``; the paths a capture must report."""
    same = root / "pkg0" / "sub0" / "mod3.py"
    before = same.stat()
    same.write_bytes(same.read_bytes().replace(b"value = 3", b"value = 9"))  # same size, in place
    os.utime(same, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the mtime set back
    (root / "pkg0" / "sub1" / "mod4.py").write_text("longer content than before\n" * 3)
    os.chmod(root / "pkg0" / "sub2" / "mod5.py", 0o755)
    os.chmod(root / "run.sh", 0o644)
    (root / "pkg1" / "sub0" / "mod0.py").unlink()
    (root / "pkg1" / "sub0" / "mod3.py").unlink()
    (root / "pkg1" / "sub0" / "mod3.py").symlink_to(outside / "elsewhere.txt")  # a link out of the shadow
    (root / "pkg1" / "sub1" / "mod4.py").unlink()
    (root / "pkg1" / "sub1" / "mod4.py").mkdir()  # a file that became a directory
    (root / "pkg1" / "sub1" / "mod4.py" / "inner.py").write_text("inside\n")
    os.rename(root / "pkg3" / "sub0" / "mod6.py", root / "pkg3" / "moved.py")
    (root / "made.py").write_text("new\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("ignored\n")
    (root / "empty.txt").write_bytes(b"x")
    linked = outside / "hardlink.py"
    os.link(root / "pkg4" / "sub1" / "mod7.py", linked)  # written through a hard link from outside
    with open(linked, "r+b") as handle:
        handle.write(b"V")
    with open(root / "pkg5" / "sub2" / "mod8.py", "r+b") as handle, mmap.mmap(handle.fileno(), 0) as mapped:
        mapped[0:1] = b"W"  # written through a mapping, same size
    return {
        "pkg0/sub0/mod3.py",
        "pkg0/sub1/mod4.py",
        "pkg0/sub2/mod5.py",
        "run.sh",
        "pkg1/sub0/mod0.py",
        "pkg1/sub0/mod3.py",
        "pkg1/sub1/mod4.py",
        "pkg1/sub1/mod4.py/inner.py",
        "pkg3/sub0/mod6.py",
        "pkg3/moved.py",
        "made.py",
        "empty.txt",
        "pkg4/sub1/mod7.py",
        "pkg5/sub2/mod8.py",
    }


def _recomputed(shadow: Shadow) -> set[str]:
    """Every path whose content or mode differs from its baseline, by reading them all: the plain
    recomputation a capture must equal (what it reports, captured or skipped)."""
    on_disk: set[str] = set()
    for path in shadow.root.rglob("*"):
        rel = path.relative_to(shadow.root).as_posix()
        if rel.split("/")[0] != ".git" and (path.is_symlink() or path.is_file()):
            on_disk.add(rel)
    found: set[str] = set()
    for rel in on_disk | set(shadow._known):
        if rel.startswith("build/"):
            continue  # ignored
        path = shadow.root / rel
        if path.is_symlink():  # a link is reported (skipped) unless it is the baseline's own, unchanged
            same = rel in shadow._known and os.fsencode(os.readlink(path)) == shadow.baseline(rel).data
            if not same:
                found.add(rel)
            continue
        try:
            now = shadow.read(rel)
        except ChangeError:
            found.add(rel)
            continue
        if now != shadow.baseline(rel):
            found.add(rel)
    return found


def _reported(shadow: Shadow) -> set[str]:
    found = shadow.capture()
    return set(found.changes) | set(found.skipped)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "elsewhere.txt").write_text("not the shadow's\n")
    return place


def test_a_capture_through_the_stat_index_finds_every_kind_of_edit(
    repo: Path, slow_checkout: None, outside: Path
) -> None:
    shadow = Shadow.create(repo, secret=_secret(repo))
    try:
        assert shadow._index is not None and len(shadow._index.entries) > 60
        assert shadow.capture().changes == {}
        expected = _edit_everything(shadow.root, outside)
        assert _reported(shadow) == expected == _recomputed(shadow)
        assert _reported(shadow) == expected  # and again, from the stamps kept by the first
    finally:
        shadow.close()


def test_watched_files_handed_to_the_stat_index_are_still_captured(
    repo: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shadow_module, "PROMOTE_MIN", 1)
    shadow = Shadow.create(repo, secret=_secret(repo))
    try:
        assert shadow._index is not None
        time.sleep(SECOND_S)
        assert shadow.capture().changes == {}
        # All handed over but a link the checkout wrote too recently: its content cannot be read to be
        # seen unchanged, so it is named as skipped, as it always was.
        racy_link = set(shadow._watched)
        assert racy_link <= {"link.py"} and len(shadow._index.entries) > 60
        # A same-size edit at once after the hand-over, its mtime set back: only the ctime tells it.
        same = shadow.root / "pkg2" / "sub0" / "mod0.py"
        before = same.stat()
        same.write_text(same.read_text().replace("200", "201"))
        os.utime(same, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert set(shadow.capture().changes) == {"pkg2/sub0/mod0.py"}
        expected = _edit_everything(shadow.root, outside) | {"pkg2/sub0/mod0.py"}
        assert _reported(shadow) == expected | racy_link
        assert expected == _recomputed(shadow)
    finally:
        shadow.close()


def test_a_stat_index_written_by_anything_else_is_refused(repo: Path, slow_checkout: None) -> None:
    shadow = Shadow.create(repo)
    try:
        assert shadow._index is not None and shadow._index.entries
        path = shadow._index.path
        path.write_bytes(path.read_bytes())  # the same bytes, written again: its stamp moved
        with pytest.raises(ChangeError, match="stat index"):
            shadow.capture()
    finally:
        shadow.close()


def test_a_workspace_below_the_repository_top_is_vouched_for_and_captured_alone(
    repo: Path, slow_checkout: None, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    workspace = repo / "pkg1"
    shadow = Shadow.create(workspace)
    try:
        assert shadow._index is not None and shadow._index.prefix == "pkg1"
        assert set(shadow._index.entries) == {rel for rel in shadow._known if rel != "sub1/mod1.py"}
        (shadow.top / "pkg0" / "sub0" / "mod0.py").write_text("outside the workspace\n")
        (shadow.root / "sub2" / "mod5.py").write_text("inside\n")
        os.chmod(shadow.root / "sub0" / "mod6.py", 0o700)
        assert set(shadow.capture().changes) == {"sub2/mod5.py", "sub0/mod6.py"}
        monkeypatch.setattr(base_module, "read_entries", lambda _data: None)
        walked = Shadow.create(workspace)
        try:
            assert _state(shadow)[:4] == _state(walked)[:4]
        finally:
            walked.close()
    finally:
        shadow.close()


def test_a_small_repository_keeps_its_stamps_here_and_runs_no_git_to_capture(
    repo: Path, slow_checkout: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base_module.ShadowBase, "stat_index_min", 5_000)
    monkeypatch.setattr(shadow_module, "PROMOTE_MIN", 1)
    shadow = Shadow.create(repo)
    try:
        assert shadow._index is not None and not shadow._index.entries
        assert set(shadow._watched) == set(shadow._known)
        (shadow.root / "pkg0" / "sub0" / "mod1.py").write_text("changed\n")
        assert set(shadow.capture().changes) == {"pkg0/sub0/mod1.py"}
        assert not shadow._index.entries  # nothing handed over below the minimum
    finally:
        shadow.close()
