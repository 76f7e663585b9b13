"""A write that fails during Apply (the disk fills, a file is read-only): no torn file, the files already
written are put back, the batch is marked rolled back, the review keeps its decisions and can apply again."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review, nofollow
from ide.protocol.review import DecideParams
from tests.support.git import git


def test_a_full_disk_during_apply_leaves_every_file_whole_and_nothing_changed(
    git_workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_workspace
    old = {f"f{i}.txt": f"old {i}\n" * 500 for i in range(4)}
    for name, text in old.items():
        (root / name).write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-qm", "files")
    head = git(root, "rev-parse", "HEAD")
    changeset = ChangeSet(root)
    for i, name in enumerate(old):
        changeset.write(name, f"new {i}\n" * 500)
    changeset.create("added.txt", "brand new\n")
    review = Review(changeset, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))

    real = nofollow.NoFollow._stage  # each file's temp file, written before any is renamed into place
    writes = {"n": 0}

    def filling_disk(self: nofollow.NoFollow, rel: str, data: bytes, mode: int) -> object:
        writes["n"] += 1
        if writes["n"] == 3:  # the third file: the disk is full
            path = self.root / rel
            partial = path.parent / f".{path.name}.arbor-partial"
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY)
            os.write(fd, data[: len(data) // 2])  # a real full disk leaves a half-written temp file
            os.close(fd)
            partial.unlink()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(self, rel, data, mode)

    monkeypatch.setattr(nofollow.NoFollow, "_stage", filling_disk)
    with pytest.raises(ChangeError) as caught:
        review.apply()
    message = str(caught.value)
    assert "No space left on device" in message and "were put back" in message
    for name, text in old.items():
        assert (root / name).read_text() == text, name
    assert not (root / "added.txt").exists()
    assert not list(root.glob(".*.arbor-*")), "no temp files left behind"
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    [batch] = review.store.history(root)
    assert batch.rolled_back

    # Space is back: the same review applies, decisions intact.
    monkeypatch.setattr(nofollow.NoFollow, "_stage", real)
    result = review.apply()
    assert result.conflicts == [] and result.batch is not None
    assert (root / "f0.txt").read_text() == "new 0\n" * 500 and (root / "added.txt").exists()
