"""A process killed while applying leaves every file whole (old or new), and the batch rollbackable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ide.changes import BatchStore, rollback_batch

from .conftest import git

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import ide.changes.review as review_module
    from ide.changes import BatchStore, ChangeSet, Review
    from ide.protocol.review import DecideParams

    root, data, stage, after = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    writes = 0
    real_write = review_module.atomic_write

    def dying_write(path, content, mode):
        global writes
        if stage == "write" and writes == after:
            os._exit(9)
        writes += 1
        real_write(path, content, mode)

    def dying_commit(*args):
        os._exit(9)

    review_module.atomic_write = dying_write
    if stage == "commit":
        review_module.commit_paths = dying_commit
    cs = ChangeSet(root)
    for i in range(4):
        cs.write(f"f{i}.txt", f"new {i}\\n" * 1000)
    review = Review(cs, session_id="s", title="t", store=BatchStore(data))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    review.apply()
    """
)


@pytest.mark.parametrize(("stage", "after"), [("commit", 0), ("write", 2)])
def test_killed_apply_leaves_whole_files_and_can_roll_back(
    git_workspace: Path, tmp_path: Path, stage: str, after: int
) -> None:
    root = git_workspace
    old = {f"f{i}.txt": f"old {i}\n".encode() * 1000 for i in range(4)}
    for name, data in old.items():
        (root / name).write_bytes(data)
    git(root, "add", ".")
    git(root, "commit", "-qm", "files")
    head = git(root, "rev-parse", "HEAD")
    data_dir = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(root), str(data_dir), stage, str(after)], check=False
    )
    assert proc.returncode == 9

    new = {name: f"new {i}\n".encode() * 1000 for i, name in enumerate(old)}
    for name in old:
        assert (root / name).read_bytes() in (old[name], new[name])
    assert not list(root.glob(".*.arbor-*")), "no temp files left behind"
    assert git(root, "rev-parse", "HEAD") == head
    written = sum((root / name).read_bytes() == new[name] for name in old)
    assert written == (4 if stage == "commit" else after)

    store = BatchStore(data_dir)
    [batch] = store.history(root)
    assert batch.commit is None and not batch.rolled_back
    result = rollback_batch(root, store)
    assert result.refused == [] and result.batch.rolled_back
    assert {name: (root / name).read_bytes() for name in old} == old
    assert git(root, "status", "--porcelain") == ""
