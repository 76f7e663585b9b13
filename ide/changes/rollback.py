"""Rolling back an applied batch to its checkpoint, without clobbering what the user changed since."""

from __future__ import annotations

import os
from pathlib import Path

from ide.changes.gitutil import (
    Blobs,
    atomic_write,
    blob_id,
    commit_paths,
    find_repo,
    merge3,
    read_disk,
    remove_file,
    stage_paths,
)
from ide.changes.hunks import is_binary
from ide.changes.overlay import ChangeError
from ide.changes.store import BatchStore
from ide.protocol.review import ConflictView, RollbackResult


def rollback_batch(root: Path, store: BatchStore, batch_id: str | None = None) -> RollbackResult:
    """Restore the files of ``batch_id`` (default: the newest batch not rolled back) to their pre-images.

    A file the user changed since the batch is merged three-way (base: what the batch wrote, theirs: the
    pre-image, ours: the disk) or, when that conflicts, left alone and reported in ``refused``.
    """
    root = Path(os.path.realpath(root))
    batch_id = batch_id or store.latest_applied(root)
    if batch_id is None:
        raise ChangeError("nothing to roll back: no applied batch in this workspace")
    batch = store.get(batch_id)
    if batch is None:
        raise ChangeError(f"no batch {batch_id} in this workspace; see the review history for ids")
    if batch.rolled_back:
        raise ChangeError(f"batch {batch_id} was already rolled back")
    repo = find_repo(root)
    blobs = Blobs(repo, store.blob_dir)
    restored: list[str] = []
    refused: list[ConflictView] = []
    writes: list[tuple[str, bytes | None, int | None]] = []
    for entry in store.files(batch_id):
        disk, disk_mode = read_disk(root / entry.path)
        pre = blobs.get(entry.pre_blob) if entry.pre_blob else None
        post_known = entry.post_blob is None or blobs.has(entry.post_blob)
        disk_id = blob_id(disk) if disk is not None else None
        if disk_id == entry.pre_blob and (pre is None or disk_mode == entry.pre_mode):
            restored.append(entry.path)  # already the pre-image (e.g. a crash before this file was written)
            continue
        if disk_id == entry.post_blob:
            writes.append((entry.path, pre, entry.pre_mode))
            continue
        if disk is None or pre is None or entry.post_blob is None or not post_known:
            refused.append(
                ConflictView(
                    path=entry.path,
                    message=f"{entry.path} changed since the batch was applied and cannot be merged "
                    "automatically; it was left as it is — restore it by hand if you want the old version",
                )
            )
            continue
        post = blobs.get(entry.post_blob)
        if is_binary(disk) or is_binary(pre) or is_binary(post):
            merged, clean = b"", False
        else:
            merged, clean = merge3(disk, post, pre, ("yours (disk)", "batch", "before batch"))
        if not clean:
            refused.append(
                ConflictView(
                    path=entry.path,
                    message=f"{entry.path} was edited since the batch was applied and your edits overlap "
                    "the batch's; it was left as it is",
                    merged=merged.decode("utf-8", errors="replace") if merged else None,
                )
            )
            continue
        writes.append((entry.path, merged, disk_mode))
    for rel, data, mode in writes:
        if data is None:
            remove_file(root / rel, root)
        else:
            atomic_write(root / rel, data, mode or 0o644)
        restored.append(rel)
    changed = [rel for rel, _, _ in writes]
    mode = store.commit_mode(batch_id)
    if repo is not None and changed:
        first = batch.message.splitlines()[0] if batch.message else batch_id
        message = (
            f'Revert Arbor batch {batch_id[:12]}: "{first}"\n\n'
            f"Arbor-Session: {batch.session_id}\nArbor-Batch: {batch_id}\n"
        )
        if mode == "commit" and batch.commit:
            commit_paths(repo, changed, message)
        elif mode == "stage":
            stage_paths(repo, changed)
    if not refused:
        store.finish(batch_id, state="rolled_back")
    result_batch = store.get(batch_id)
    assert result_batch is not None
    return RollbackResult(batch=result_batch, restored=sorted(restored), refused=refused)
