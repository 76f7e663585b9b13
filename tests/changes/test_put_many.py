"""``NoFollow.put_many`` (Apply's and Roll back's writes, issue 32 item 1) leaves exactly what one durable
``put`` after another leaves, syncs every file before it replaces the old one, and on a failure reports
just the files it put in place and leaves no temp file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ide.changes import ChangeError
from ide.changes.nofollow import SYNC_TOGETHER, TEMP_MARK, NoFollow

Entry = tuple[str, bytes | None, int | None]


def tree(root: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every file (bytes, permission bits) and directory under ``root``."""
    found: dict[str, tuple[bytes, int] | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        found[rel] = "dir" if path.is_dir() else (path.read_bytes(), path.stat().st_mode & 0o777)
    return found


def workspace(root: Path) -> Path:
    for index in range(SYNC_TOGETHER * 2 + 10):
        path = root / f"d{index % 5}" / f"f{index}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"old %d\n" % index)
    (root / "x").write_bytes(b"a file that becomes a directory\n")
    (root / "lonely").mkdir()
    (root / "lonely" / "a").write_bytes(b"the only file here\n")
    (root / "tool.sh").write_bytes(b"#!/bin/sh\n")
    return root


def entries() -> list[Entry]:
    changed: list[Entry] = [
        (f"d{index % 5}/f{index}.txt", b"new %d\n" % index, 0o644)
        for index in range(0, SYNC_TOGETHER * 2 + 10, 2)
    ]
    changed += [
        ("x", None, None),
        ("x/y", b"inside what was a file\n", 0o644),
        ("lonely/a", None, None),
        ("lonely/b", b"", 0o600),
        ("new/deep/file.bin", bytes(range(256)), 0o644),
        ("tool.sh", b"#!/bin/sh\necho new\n", 0o755),
        ("d1/f1.txt", None, None),
    ]
    return changed


def test_put_many_leaves_what_one_put_after_another_leaves(tmp_path: Path) -> None:
    one_by_one, together = workspace(tmp_path / "a"), workspace(tmp_path / "b")
    for rel, data, mode in entries():
        NoFollow(one_by_one).put(rel, data, mode)
    done: list[str] = []
    NoFollow(together).put_many(entries(), done)
    assert done == [rel for rel, _data, _mode in entries()]
    assert tree(together) == tree(one_by_one)
    assert tree(together)["x/y"] == (b"inside what was a file\n", 0o644)
    assert tree(together)["tool.sh"] == (b"#!/bin/sh\necho new\n", 0o755)
    assert not any(TEMP_MARK in rel for rel in tree(together))


def test_every_file_is_synced_before_it_replaces_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path / "ws")
    synced: set[int] = set()
    unsynced: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        synced.add(os.fstat(fd).st_ino)

    def replace(src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
        if os.stat(src, dir_fd=src_dir_fd).st_ino not in synced:
            unsynced.append(dst)
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    done: list[str] = []
    NoFollow(root).put_many(entries(), done)
    written = [rel for rel, data, _mode in entries() if data is not None]
    assert len(synced) == len(written) and unsynced == []


def test_a_failure_midway_reports_what_is_in_place_and_leaves_no_temp_file(tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "d3").rename(tmp_path / "moved")
    (root / "d3").symlink_to(outside)  # a directory swapped for a link: nothing is written through it
    changed = [(f"d{index % 5}/f{index}.txt", b"new\n", 0o644) for index in range(SYNC_TOGETHER * 2)]
    changed = [entry for entry in changed if not entry[0].startswith("d3/")]
    failing = SYNC_TOGETHER + 5
    changed.insert(failing, ("d3/f3.txt", b"through the link\n", 0o644))
    done: list[str] = []
    with pytest.raises(ChangeError, match="symbolic link"):
        NoFollow(root).put_many(changed, done)
    assert done == [rel for rel, _data, _mode in changed[:SYNC_TOGETHER]]
    assert all((root / rel).read_bytes() == b"new\n" for rel in done)
    assert all((root / rel).read_bytes().startswith(b"old") for rel, _d, _m in changed[SYNC_TOGETHER:failing])
    assert list(outside.iterdir()) == []
    assert not [path for path in root.rglob("*") if TEMP_MARK in path.name]
