"""Rolling back an applied batch to its checkpoint, without clobbering what the user changed since."""

from __future__ import annotations

import os
from pathlib import Path

from ide.changes.applylock import workspace_lock
from ide.changes.gitutil import (
    Blobs,
    IndexEntry,
    Repo,
    blob_id,
    cat_blobs,
    commit_paths,
    find_repo,
    git,
    merge3,
    read_disk,
    stage_paths,
)
from ide.changes.hunks import is_binary
from ide.changes.nofollow import TEMP_MARK, NoFollow
from ide.changes.overlay import ChangeError, git_mode
from ide.changes.replay import replay_change, tree_modes
from ide.changes.store import BatchStore, FileCheckpoint
from ide.protocol.review import ConflictView, RollbackResult


def rollback_batch(root: Path, store: BatchStore, batch_id: str | None = None) -> RollbackResult:
    """Restore the files of ``batch_id`` (default: the newest batch not rolled back) to their pre-images.

    A file the user changed since the batch is merged three-way (base: what the batch wrote, theirs: the
    pre-image, ours: the disk) or, when that conflicts, left alone and reported in ``refused``. Holds the
    workspace's Apply lock (ide.changes.applylock) throughout.
    """
    root = Path(os.path.realpath(root))
    with workspace_lock(_lock_place(root)):
        return _rollback(root, store, batch_id)


def _lock_place(root: Path) -> Path:
    """What the Apply lock of ``root`` is keyed by: its repository's top, or itself outside git."""
    repo = find_repo(root)
    return repo.top if repo is not None else root


def _rollback(root: Path, store: BatchStore, batch_id: str | None) -> RollbackResult:
    _recover(root, store)
    batch_id = batch_id or store.latest_applied(root)
    if batch_id is None:
        raise ChangeError("nothing to roll back: no applied batch in this workspace")
    batch = store.get(batch_id)
    if batch is None:
        raise ChangeError(f"no batch {batch_id} in this workspace; see the review history for ids")
    if batch.state == "failed":
        raise ChangeError(f"batch {batch_id} never applied ({batch.reason}); there is nothing to roll back")
    if batch.rolled_back:
        why = f" ({batch.reason})" if batch.reason else ""
        raise ChangeError(f"batch {batch_id} was already rolled back{why}")
    repo = _batch_repository(root, store, batch_id)
    blobs = Blobs(repo, store.blob_dir)
    restored: list[str] = []
    refused: list[ConflictView] = []
    writes: list[tuple[str, bytes | None, int | None]] = []
    entries = store.files(batch_id)
    # Every checkpoint blob of the batch in one read (one git process), not one or two per file.
    stored = blobs.get_many(oid for entry in entries for oid in (entry.pre_blob, entry.post_blob))
    for entry in entries:
        disk, disk_mode = read_disk(root / entry.path)
        pre = _stored(stored, blobs, entry.pre_blob)
        post_known = entry.post_blob is None or entry.post_blob in stored
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
        post = stored[entry.post_blob]
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
        writes.append((entry.path, merged, _mode_back(entry, disk_mode)))
    writer = NoFollow(root)
    for rel, _data, _mode in writes:
        writer.check(rel)
    writer.put_many(writes, restored)
    changed: list[IndexEntry] = [(rel, data, mode or 0o644) for rel, data, mode in writes]
    mode = store.commit_mode(batch_id)
    if repo is not None and changed:
        first = batch.message.splitlines()[0] if batch.message else batch_id
        message = (
            f'Revert Arbor batch {batch_id[:12]}: "{first}"\n\n'
            f"Arbor-Session: {batch.session_id}\nArbor-Batch: {batch_id}\n"
        )
        if mode == "commit" and batch.commit:
            # Revert exactly what the batch committed: the restored files may hold the user's own edits,
            # which stay uncommitted as they were.
            rels = [rel for rel, _data, _mode in changed]
            specs = [f"{rev}:{repo.path(rel)}" for rel in rels for rev in (batch.commit, f"{batch.commit}^")]
            found = iter(cat_blobs(repo, specs))
            modes = _committed_modes(repo, batch.commit, [e.path for e in entries if _mode_changed(e)])
            undo: list[tuple[str, bytes | None, bytes | None, int | None]] = []
            reverting: list[tuple[str, bytes | None, bytes | None, int | None]] = []
            for rel, _data, file_mode in changed:
                committed, before = next(found), next(found)
                after_mode, before_mode = modes.get(rel, (None, None))
                remoded = before_mode is not None and after_mode is not None and after_mode != before_mode
                if remoded:  # the commit changed its mode: the revert records the mode before it
                    file_mode = 0o755 if before_mode == "100755" else 0o644
                undo.append((rel, committed, before, file_mode))
                if committed != before or remoded:
                    reverting.append(undo[-1])
            head = repo.head()
            # Right after the batch HEAD is its commit, whose files were just read: no second read.
            known = (
                [committed for _rel, committed, _before, _mode in reverting] if head == batch.commit else None
            )
            recorded, _left = replay_change(repo, head, reverting, known)
            if recorded:
                commit_paths(repo, blobs, recorded, message, head)
        elif mode == "stage":
            stage_paths(repo, blobs, changed)
    if not refused:
        store.finish(batch_id, state="rolled_back")
    result_batch = store.get(batch_id)
    assert result_batch is not None
    return RollbackResult(batch=result_batch, restored=sorted(restored), refused=refused)


def _mode_changed(entry: FileCheckpoint) -> bool:
    """Whether the batch changed the file's mode as git records it (made it executable, or not)."""
    if entry.pre_blob is None or entry.post_blob is None:
        return False
    return git_mode(entry.pre_mode) != git_mode(entry.post_mode)


def _mode_back(entry: FileCheckpoint, disk_mode: int | None) -> int | None:
    """The mode a file merged back on rollback gets: the one before the batch when the batch changed it and
    the disk still has the batch's, else the disk's (a chmod of the user's since stays)."""
    if _mode_changed(entry) and git_mode(disk_mode) == git_mode(entry.post_mode):
        return entry.pre_mode
    return disk_mode


def _committed_modes(repo: Repo, commit: str, rels: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """(mode in ``commit``, mode in its parent) of each of ``rels``: two ``git ls-tree``, only for files whose
    mode the batch changed (none when git cannot say, e.g. a first commit)."""
    if not rels:
        return {}
    after = tree_modes(repo, commit, rels)
    before = tree_modes(repo, f"{commit}^", rels)
    if after is None or before is None:
        return {}
    return {rel: (a, b) for rel, a, b in zip(rels, after, before, strict=True)}


def _batch_repository(root: Path, store: BatchStore, batch_id: str) -> Repo | None:
    """The repository the batch was committed into, if git still finds that one here; else refuse."""
    repo = find_repo(root)
    recorded = store.git_dir(batch_id)
    now = str(repo.git_dir) if repo is not None and repo.git_dir else None
    if recorded is not None and recorded != now:
        raise ChangeError(
            f"batch {batch_id} was committed into the repository at {recorded}, but git now finds "
            f"{now or 'no repository'} here; Arbor will not roll back into another repository — check for a "
            ".git file or folder you did not make"
        )
    return repo


def recover_batches(root: Path, store: BatchStore) -> list[str]:
    """Finish what a killed Apply left (``kill -9``, a power cut): each batch still ``applying`` is marked
    applied when its commit landed, else rolled back to its checkpoint; temp files of its writes go.

    Returns the ids of the batches recovered. Files the user changed since are left as they are. Waits for
    an Apply running in another process, whose batch is ``applying`` until it finishes."""
    root = Path(os.path.realpath(root))
    with workspace_lock(_lock_place(root)):
        return _recover(root, store)


def _recover(root: Path, store: BatchStore) -> list[str]:
    recovered = []
    for batch_id in store.unfinished(root):
        files = store.files(batch_id)
        _remove_temp_files(root, [entry.path for entry in files])
        repo = find_repo(root)
        landed = _landed_commit(repo, batch_id) if repo is not None else None
        if landed is not None:
            store.finish(batch_id, state="applied", commit=landed, reason="finished after an interruption")
            recovered.append(batch_id)
            continue
        blobs = Blobs(repo, store.blob_dir)
        writer = NoFollow(root)
        left: dict[int, str] = {}  # by position in the batch, so the note lists them in its order
        back: list[tuple[int, FileCheckpoint, int | None]] = []
        for index, entry in enumerate(files):
            disk, disk_mode = read_disk(root / entry.path)
            disk_id = blob_id(disk) if disk is not None else None
            moved_back = not _mode_changed(entry) or git_mode(disk_mode) == git_mode(entry.pre_mode)
            if disk_id == entry.pre_blob and moved_back:
                continue  # never written, or already back
            if disk_id != entry.post_blob:
                left[index] = entry.path
                continue
            back.append((index, entry, disk_mode))
        stored = blobs.get_many(entry.pre_blob for _index, entry, _mode in back)
        for index, entry, disk_mode in back:
            try:
                pre = _stored(stored, blobs, entry.pre_blob)
                writer.put(entry.path, pre, entry.pre_mode or disk_mode)
            except (OSError, ChangeError):
                left[index] = entry.path
        note = "interrupted before it finished; its files were put back"
        if left:
            paths = ", ".join(left[index] for index in sorted(left))
            note += f" except {paths}, changed since (left as they are)"
        store.finish(batch_id, state="rolled_back", reason=note)
        recovered.append(batch_id)
    return recovered


def _stored(stored: dict[str, bytes], blobs: Blobs, oid: str | None) -> bytes | None:
    """The checkpoint blob ``oid`` from what :meth:`Blobs.get_many` read (None for no file); a ChangeError
    when it is not stored."""
    if oid is None:
        return None
    if oid not in stored:
        raise blobs.missing(oid)
    return stored[oid]


def _landed_commit(repo: Repo, batch_id: str) -> str | None:
    """HEAD, when it is the batch's commit (the process died after committing, before recording it)."""
    try:
        body = git(repo.top, "log", "-1", "--format=%H%n%B", "HEAD").decode(errors="replace")
    except ChangeError:
        return None
    sha, _, message = body.partition("\n")
    return sha.strip() if f"Arbor-Batch: {batch_id}" in message else None


def _remove_temp_files(root: Path, rels: list[str]) -> None:
    """``.NAME.arbor-*`` files an atomic write left beside each of ``rels`` when its process died."""
    for rel in rels:
        folder = (root / rel).parent
        try:
            names = [entry.name for entry in os.scandir(folder)]
        except OSError:
            continue
        prefix = f".{Path(rel).name}{TEMP_MARK}"
        for name in names:
            if name.startswith(prefix):
                (folder / name).unlink(missing_ok=True)
