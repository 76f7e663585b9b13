"""A process killed while applying leaves every file whole (old or new), and the batch rollbackable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ide.changes import BatchStore, rollback_batch
from ide.changes.rollback import recover_batches
from tests.support.git import git

SCRIPT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import ide.changes.review as review_module
    from ide.changes import BatchStore, ChangeSet, Review
    from ide.protocol.review import DecideParams

    root, data, stage, after = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    writes = renames = 0
    real_stage = review_module.NoFollow._stage
    real_replace = os.replace
    real_finish = BatchStore.finish

    def dying_stage(self, rel, content, mode):
        global writes
        if stage == "write" and writes == after:
            os._exit(9)  # temp files of the first files written, none synced or renamed yet
        writes += 1
        return real_stage(self, rel, content, mode)

    def dying_replace(*args, **kwargs):
        global renames
        if "src_dir_fd" in kwargs:  # a workspace file's rename (not a git object's)
            if stage == "temp" and renames == after:
                os._exit(9)  # every temp file written and synced, the first ones renamed
            renames += 1
        real_replace(*args, **kwargs)

    def dying_commit(*args):
        os._exit(9)

    def dying_finish(self, batch_id, **kwargs):
        if kwargs.get("state") == "applied":
            os._exit(9)  # committed, not yet recorded
        real_finish(self, batch_id, **kwargs)

    review_module.NoFollow._stage = dying_stage
    os.replace = dying_replace
    if stage == "commit":
        review_module.commit_paths = dying_commit
    if stage == "recorded":
        BatchStore.finish = dying_finish
    cs = ChangeSet(root)
    for i in range(4):
        cs.write(f"f{i}.txt", f"new {i}\\n" * 1000)
    review = Review(cs, session_id="s", title="t", store=BatchStore(data))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    review.apply()
    """
)


@pytest.mark.parametrize(
    ("stage", "after", "written", "temp"),
    [("commit", 0, 4, False), ("write", 2, 0, True), ("temp", 1, 1, True), ("recorded", 0, 4, False)],
)
def test_a_killed_apply_leaves_whole_files_and_the_next_start_recovers_it(
    git_workspace: Path, tmp_path: Path, stage: str, after: int, written: int, temp: bool
) -> None:
    """On main a kill -9 mid-Apply left a temp file and a batch stuck ``applying`` with no recovery."""
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
    assert sum((root / name).read_bytes() == new[name] for name in old) == written
    assert bool(list(root.glob(".*.arbor-*"))) == temp
    store = BatchStore(data_dir)
    [batch] = store.history(root)
    assert batch.state == "applying"

    assert recover_batches(root, store) == [batch.id]
    assert not list(root.glob(".*.arbor-*")), "the temp file is removed"
    [batch] = store.history(root)
    if stage == "recorded":
        # The commit landed before the process died: the batch is finished, not undone.
        assert batch.state == "applied" and batch.commit == git(root, "rev-parse", "HEAD").strip()
        result = rollback_batch(root, store)
        assert result.refused == [] and result.batch.rolled_back
    else:
        assert batch.state == "rolled_back" and "interrupted" in (batch.reason or "")
        assert git(root, "rev-parse", "HEAD") == head
    assert {name: (root / name).read_bytes() for name in old} == old
    assert recover_batches(root, store) == []
