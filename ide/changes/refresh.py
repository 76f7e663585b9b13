"""Pending edits over today's workspace: when the disk moves under a pending edit its base follows, merged
three-way where the two do not overlap and kept, with the overlap said, where they do; before the agent's
next turn the hunks the user rejected leave what it sees."""

from __future__ import annotations

from collections.abc import Iterable

from ide.changes.files import FileChange, file_changes
from ide.changes.gitutil import merge3
from ide.changes.hunks import apply_hunks, is_binary
from ide.changes.overlay import Base, ChangeSet, Entry, OnDisk, git_mode
from ide.changes.review import Review
from ide.protocol.review import DecideParams, Decision, FileChangeView

OVERLAP = (
    "{path} was changed on disk since the agent read it, and that change overlaps the agent's pending edit: "
    "the agent's version is still made on the file as the agent read it, without that change — Apply shows "
    "where the two overlap; edit the file, or reject the edit"
)
"""What the review and the agent's tool results say of a pending edit whose base could not follow the disk."""


class Overlap(Exception):
    """The disk's change and a pending edit touch the same lines (or one deletes what the other edits)."""


def refresh_bases(
    changeset: ChangeSet, paths: Iterable[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Move the base of each pending edit (of ``paths``; default all) whose file the disk no longer holds as
    it was to what the disk holds now, with the edit merged onto it; an edit that overlaps the disk's change
    keeps its base and is said in ``changeset.overlaps``. Only files whose ``stat`` stamp moved are read.

    Returns the paths whose pending edit moved (as the review names them: a rename by its new path) and the
    overlaps found, by path."""
    return take_moved(changeset, changeset.moved(paths))


def take_moved(changeset: ChangeSet, moved: dict[str, OnDisk]) -> tuple[list[str], dict[str, str]]:
    """:func:`refresh_bases` of what :meth:`ChangeSet.moved` found."""
    entries = changeset.recorded()[1]
    changed: list[str] = []
    overlaps: dict[str, str] = {}
    for rel, now in moved.items():
        shown = _shown(entries, rel)
        mine = changeset.entry(shown)
        if mine is None:
            continue
        try:
            merged = rebased(changeset.base(rel), now.base, mine)
        except Overlap:
            overlaps[shown] = changeset.overlaps[shown] = OVERLAP.format(path=shown)
            continue
        changeset.rebase(rel, now)
        changeset.overlaps.pop(shown, None)
        # A rename's old path moved: the renamed file takes the disk's change.
        changeset.set_entry(shown, merged)
        changed.append(shown)
    return changed, overlaps


def _shown(entries: dict[str, Entry], rel: str) -> str:
    """The path the review shows ``rel``'s change under: the new path when ``rel`` was renamed away."""
    if entries[rel].data is None:
        return next((path for path, entry in entries.items() if entry.origin == rel), rel)
    return rel


def rebased(base: Base, disk: Base, mine: Entry) -> Entry | None:
    """``mine``, an edit of ``base``, made onto ``disk`` instead; None when nothing of it is left to propose.
    Raises :class:`Overlap` where the two changes overlap."""
    if mine.data is None:  # the agent deletes the file
        if disk.data is None or base.data is None:
            return None
        raise Overlap  # the user changed the file the agent deletes
    data = _merged_data(base.data, disk.data, mine.data)
    agent_mode = git_mode(mine.mode) != git_mode(base.mode)
    mode = mine.mode if agent_mode or None in (base.data, disk.data) else disk.mode
    if not mine.origin and data == disk.data and (data is None or git_mode(mode) == git_mode(disk.mode)):
        return None
    return Entry(data, mode if data is not None else None, mine.origin)


def _merged_data(base: bytes | None, disk: bytes | None, mine: bytes | None) -> bytes | None:
    if mine == disk:
        return mine
    if mine == base and disk is not None:
        return disk
    if disk == base:
        return mine
    if base is None or disk is None or mine is None or any(is_binary(d) for d in (base, disk, mine)):
        raise Overlap
    merged, clean = merge3(disk, base, mine, ("yours (disk)", "base", "agent"))
    if not clean:
        raise Overlap
    return merged


def refresh_review(
    review: Review, paths: Iterable[str] | None = None, *, settle: bool = False
) -> dict[str, str]:
    """:func:`refresh_bases` of the review's change set, its decisions carried to the hunks the move
    renumbered; with ``settle`` (before the agent's next turn) the rejected hunks go first. Returns the
    overlaps found, by path."""
    changeset = review.changeset
    if settle:
        drop_rejected(review)
    moved = changeset.moved(paths)
    if not moved:
        return {}
    entries = changeset.recorded()[1]
    before = _decided(review.hunks([_shown(entries, rel) for rel in moved])) if review.decisions() else {}
    changed, overlaps = take_moved(changeset, moved)
    if changed and before:
        _carry(review, before, review.hunks(changed))
    return overlaps


def drop_rejected(review: Review) -> list[str]:
    """Take the rejected hunks out of the change set, as an Apply that writes nothing would (their files
    read as the base plus the rest); returns the paths whose change moved."""
    rejected = {hunk_id for hunk_id, decision in review.decisions().items() if decision == "rejected"}
    if not rejected:
        return []
    changes = [c for c in file_changes(review.changeset) if any(h.id in rejected for h in c.hunks)]
    decided = {h.id: review.decision(h) for change in changes for h in change.hunks}
    present = [hunk_id for hunk_id, decision in decided.items() if decision == "rejected"]
    review.decide(DecideParams(session_id=review.session_id, decision="pending", hunk_ids=present))
    for change in changes:
        _without_rejected(review.changeset, change, decided)
    return [change.path for change in changes]


def _without_rejected(changeset: ChangeSet, change: FileChange, decided: dict[str, Decision]) -> None:
    source = change.old_path or change.path
    if change.whole:  # one piece (binary, added, deleted): any of it rejected, all of it is
        changeset.set_entry(change.path, None)
        if change.old_path:
            changeset.set_entry(change.old_path, None)
        return
    kept = [h for h in change.text_hunks if decided[h.id] != "rejected"]
    content = apply_hunks(change.old or b"", kept)
    mode_back = any(h.kind == "mode" and decided[h.id] == "rejected" for h in change.hunks)
    mode = change.old_mode if mode_back else change.mode
    moved_back = any(h.kind == "rename" and decided[h.id] == "rejected" for h in change.hunks)
    if change.old_path and not moved_back:
        changeset.set_entry(change.path, Entry(content, mode, change.old_path))
        return
    changeset.set_entry(change.path, None)
    unchanged = content == change.old and git_mode(mode) == git_mode(change.old_mode)
    changeset.set_entry(source, None if unchanged else Entry(content, mode))


HunkKey = tuple[str, str, tuple[str, ...]]


def _decided(files: list[FileChangeView]) -> dict[HunkKey, Decision]:
    """Each decided hunk's decision, by its file, kind and changed lines (what a renumbering keeps)."""
    return {
        _key(f.path, hunk.kind, hunk.lines): hunk.decision
        for f in files
        for hunk in f.hunks
        if hunk.decision != "pending"
    }


def _carry(review: Review, before: dict[HunkKey, Decision], files: list[FileChangeView]) -> None:
    by_decision: dict[Decision, list[str]] = {}
    for f in files:
        for hunk in f.hunks:
            found = before.get(_key(f.path, hunk.kind, hunk.lines))
            if hunk.decision == "pending" and found is not None:
                by_decision.setdefault(found, []).append(hunk.id)
    for decision, hunk_ids in by_decision.items():
        review.decide(DecideParams(session_id=review.session_id, decision=decision, hunk_ids=hunk_ids))


def _key(path: str, kind: str, lines: list[str]) -> HunkKey:
    return path, kind, tuple(line for line in lines if line[:1] in ("+", "-"))
