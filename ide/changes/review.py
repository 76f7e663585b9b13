"""Review of a change set: decisions on its hunks (``ide.changes.files``), and apply (checkpoint, merge,
write, commit)."""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ide.changes.applylock import workspace_lock
from ide.changes.files import FileChange, HunkCache, file_changes
from ide.changes.gitutil import (
    Blobs,
    IndexEntry,
    blob_id,
    check_trackable,
    commit_paths,
    ensure_identity,
    find_repo,
    merge3,
    read_disk,
    same_repository,
    stage_paths,
)
from ide.changes.hunks import Hunk, apply_hunks, is_binary
from ide.changes.nofollow import NoFollow
from ide.changes.overlay import Base, ChangeError, ChangeSet, Entry, check_name, git_mode
from ide.changes.replay import replay_change
from ide.changes.snapshot import decode_review, encode_review
from ide.changes.store import BatchStore, FileCheckpoint
from ide.protocol import from_record
from ide.protocol.hidden import HiddenFinding, scan_hunk
from ide.protocol.review import (
    FIRST_SCREEN_HUNKS,
    ApplyResult,
    BatchView,
    ChangeSetView,
    ConflictView,
    DecideParams,
    Decision,
    FileChangeView,
    HunkView,
)

log = logging.getLogger(__name__)

COMMIT_MODES = ("commit", "stage", "none")


SUBJECT_MAX = 72
"""Longest commit subject git tools show without cutting it."""


def commit_subject(text: str | None, limit: int = SUBJECT_MAX) -> str | None:
    """A commit subject from a prompt: its first non-blank line, spaces collapsed, cut at a word boundary
    with "…" to at most ``limit`` characters (mid-word only for a single word longer than that)."""
    line = next((raw.strip() for raw in (text or "").splitlines() if raw.strip()), "")
    line = " ".join(line.split())
    if len(line) <= limit:
        return line or None
    room = line[: limit - 1]
    cut = room.rfind(" ")
    if cut > limit // 3:  # a word boundary that keeps most of the line
        room = room[:cut]
    return room.rstrip(" ,;:-–—.") + "…"


class Review:
    """Decisions on a change set's hunks, and applying the accepted ones to the workspace."""

    def __init__(
        self,
        changeset: ChangeSet,
        *,
        session_id: str,
        title: str | None,
        store: BatchStore,
        commit_mode: str = "commit",
    ) -> None:
        if commit_mode not in COMMIT_MODES:
            raise ChangeError(f"review.commit must be one of {', '.join(COMMIT_MODES)}, not {commit_mode!r}")
        self.changeset = changeset
        self.session_id = session_id
        self.title = title
        self.agent: str | None = None
        """Another agent whose changes these are (its ``[agents]`` name or its program's name), said in the
        commit's body; None for Arbor's own."""
        self.store = store
        self.commit_mode = commit_mode
        self._decisions: dict[str, tuple[Decision, str | None]] = {}
        self._conflicts: dict[str, str] = {}
        self._hunk_cache: HunkCache = {}
        self.repo = find_repo(changeset.root)
        """The repository found when the review began: Apply writes and commits only into it."""

    def snapshot(self) -> dict[str, Any]:
        """Everything needed to rebuild this review exactly, as JSON-safe data (ide.changes.snapshot).

        Reads nothing from disk; the recorded bases go in as they are, so a restored review still
        merges with what the user changed on disk since the agent read each file.
        """
        return encode_review(
            self.changeset,
            session_id=self.session_id,
            title=self.title,
            commit_mode=self.commit_mode,
            decisions=dict(self._decisions),
            conflicts=dict(self._conflicts),
        )

    @classmethod
    def restore(cls, snapshot: dict[str, Any], *, store: BatchStore, root: Path | None = None) -> Review:
        """The review ``snapshot`` was taken of, over ``root`` (default: the snapshot's workspace).

        A ChangeError when the snapshot is malformed or of a version this code does not read.
        """
        state = decode_review(snapshot, COMMIT_MODES)
        changeset = ChangeSet.from_recorded(
            Path(state.root) if root is None else root, state.bases, state.entries, id=state.changeset_id
        )
        review = cls(
            changeset,
            session_id=state.session_id,
            title=state.title,
            store=store,
            commit_mode=state.commit_mode,
        )
        review._decisions = dict(state.decisions)  # type: ignore[arg-type]
        review._conflicts = dict(state.conflicts)
        return review

    def view(self, *, summary: bool = False) -> ChangeSetView:
        """The change set with every hunk, or (``summary``) each file's hunk ids and decisions with the
        bodies of the first screen's, commented and hiding hunks only (``ide.protocol.review``)."""
        return self._view(file_changes(self.changeset, self._hunk_cache), summary=summary)

    def hunks(self, paths: list[str]) -> list[FileChangeView]:
        """Files ``paths`` in full, as :meth:`view` shows them (a path not in the change set is left out)."""
        wanted = set(paths)
        files = [f for f in file_changes(self.changeset, self._hunk_cache) if f.path in wanted]
        return [self._file_view(change, full=True) for change in files]

    def _view(self, files: list[FileChange], *, summary: bool = False) -> ChangeSetView:
        views, shown = [], 0
        commented = {hunk_id for hunk_id, (_d, comment) in self._decisions.items() if comment is not None}
        for change in files:
            full = (
                not summary
                or shown < FIRST_SCREEN_HUNKS
                or (bool(commented) and any(h.id in commented for h in change.hunks))
                or (not (change.new or b"").isascii() and any(self._hidden(h) for h in change.hunks))
            )
            if shown < FIRST_SCREEN_HUNKS:
                shown += len(change.hunks)
            views.append(self._file_view(change, full=full))
        return ChangeSetView(
            session_id=self.session_id, cwd=str(self.changeset.root), title=self.title, files=views
        )

    def _hidden(self, hunk: Hunk) -> list[HiddenFinding]:
        """What ``hunk``'s added lines hide (none when they are ASCII, the common case: no line to decode)."""
        if all(line.isascii() for line in hunk.lines if line[:1] == b"+"):
            return []
        return scan_hunk(hunk.display_lines(), hunk.new_start)

    def _file_view(self, change: FileChange, *, full: bool) -> FileChangeView:
        hunks, ids, decisions = [], None, None
        if full:
            for hunk in change.hunks:
                decision, comment = self._decisions.get(hunk.id, ("pending", None))
                hunks.append(
                    from_record(
                        HunkView,
                        hunk,
                        lines=(lines := hunk.display_lines()),
                        decision=decision,
                        comment=comment,
                        hidden=scan_hunk(lines, hunk.new_start),
                    )
                )
        else:
            ids = [hunk.id for hunk in change.hunks]
            decisions = [self._decisions.get(hunk_id, ("pending", None))[0] for hunk_id in ids]
        # Each line's prefix byte, of all the hunks at once: the +/- counts (Hunk.additions, .deletions).
        heads = b"".join([line[:1] for hunk in change.hunks for line in hunk.lines])
        shown = change.mode_changed
        return FileChangeView(
            path=change.path,
            old_path=change.old_path,
            status=change.status,  # type: ignore[arg-type]
            binary=change.binary,
            old_mode=git_mode(change.old_mode) if shown or change.status == "deleted" else None,  # type: ignore[arg-type]
            new_mode=git_mode(change.mode) if shown or change.status == "added" else None,  # type: ignore[arg-type]
            additions=heads.count(b"+"),
            deletions=heads.count(b"-"),
            hunks=hunks,
            hunk_ids=ids,
            decisions=decisions,
            conflict=self._conflicts.get(change.path) or self.changeset.overlaps.get(change.path),
            meta=change.meta,
        )

    def decide(self, params: DecideParams, *, summary: bool = False) -> ChangeSetView:
        """Set the decision (and comment) of hunks by id, of every hunk of ``paths``, or of all; the change
        set after it (``summary``: as :meth:`view` makes one)."""
        files = file_changes(self.changeset, self._hunk_cache)
        by_id = {h.id: h for f in files for h in f.hunks}
        by_path = {f.path: f for f in files}
        chosen: list[str] = []
        if params.all:
            # Meta files and hunks hiding characters are accepted or rejected only on their own: the rule of
            # ChangeSetView.wholesale_hunks, which the window applies to what it shows.
            chosen = [h.id for f in files if not f.meta for h in f.hunks if not self._hidden(h)]
        for hunk_id in params.hunk_ids:
            if hunk_id not in by_id:
                raise ChangeError(f"no hunk {hunk_id} in the change set; it may have changed, fetch it again")
            chosen.append(hunk_id)
        for path in params.paths:
            if path not in by_path:
                raise ChangeError(f"{path} is not part of the change set")
            chosen.extend(h.id for h in by_path[path].hunks)
        for hunk_id in chosen:
            comment = (
                params.comment if params.comment is not None else self._decisions.get(hunk_id, ("", None))[1]
            )
            self._decisions[hunk_id] = (params.decision, comment)
        return self._view(files, summary=summary)

    def decision(self, hunk: Hunk) -> Decision:
        return self._decisions.get(hunk.id, ("pending", None))[0]

    def decisions(self) -> dict[str, Decision]:
        """Each decided hunk's decision, by hunk id (hunks no longer in the change set included)."""
        return {hunk_id: d for hunk_id, (d, _comment) in self._decisions.items() if d != "pending"}

    def apply(self, message: str | None = None, *, summary: bool = False) -> ApplyResult:
        """Write exactly the accepted hunks: checkpoint, merge if the disk moved, atomic writes, commit.

        Holds the workspace's lock (ide.changes.applylock) from planning to commit, so another Apply or
        Roll back never runs in between; the commit is made against the HEAD seen when planning began."""
        root = self.changeset.root
        with workspace_lock(self.repo.top if self.repo is not None else root):
            head = self.repo.head() if self.repo is not None else None
            files = file_changes(self.changeset, self._hunk_cache)
            plans: list[_Plan] = []
            conflicts: list[ConflictView] = []
            for change in files:
                plan = self._plan(change)
                if plan is None:
                    continue
                conflict = self._merge_with_disk(plan)
                if conflict is not None:
                    conflicts.append(conflict)
                    self._conflicts[change.path] = conflict.message
                    for hunk in change.hunks:
                        if self.decision(hunk) == "accepted":
                            self._decisions[hunk.id] = ("pending", self._decisions[hunk.id][1])
                    continue
                self._conflicts.pop(change.path, None)
                plans.append(plan)

            writing = [p for p in plans if p.writes]
            batch, uncommitted = None, []
            if writing:
                batch, uncommitted = self._write_batch(root, writing, message, head)
            for plan in plans:
                self._settle(plan)
        remaining = self.view(summary=summary)
        return ApplyResult(batch=batch, conflicts=conflicts, uncommitted=uncommitted, changeset=remaining)

    def _write_batch(
        self, root: Path, writing: list[_Plan], message: str | None, head: str | None
    ) -> tuple[BatchView | None, list[str]]:
        """Checkpoint, write and commit the planned files — all of it or, when any step fails, nothing.

        The disk gets the merged files (the user's edits since the agent read them kept); git gets only the
        accepted change, replayed onto ``head`` (HEAD when planning began), so the user's own uncommitted
        edits stay uncommitted; the commit lands only if HEAD is still ``head``. Returns the batch and the
        files left out of the commit (where that replay overlapped such edits)."""
        entries: list[IndexEntry] = [
            (rel, data, mode) for plan in writing for rel, (data, mode) in plan.writes.items()
        ]
        # Everything that can be refused is refused before the first byte is written.
        for rel, _data, _mode in entries:
            try:
                check_name(rel)  # an entry that came in some other way than the change set's checks
            except ChangeError as exc:
                raise ChangeError(f"Apply wrote nothing: {exc}. Reject that file, then Apply.") from None
        repo = same_repository(self.repo, root)
        writer = NoFollow(root)
        for rel, _data, _mode in entries:
            writer.check(rel)
        if repo is not None and self.commit_mode == "commit":
            ensure_identity(repo)
        blobs = Blobs(repo, self.store.blob_dir)
        recorded: list[IndexEntry] = []
        uncommitted: list[str] = []
        if repo is not None and self.commit_mode in ("commit", "stage"):
            changes = [
                (rel, plan.bases.get(rel), data, mode)
                for plan in writing
                for rel, (data, mode) in plan.proposed.items()
            ]
            recorded, uncommitted = replay_change(repo, head, changes)
            check_trackable(repo, recorded)
        batch_id = uuid.uuid4().hex
        text = message or commit_subject(self.title) or "Apply reviewed changes"
        if self.agent and not message:
            text += f"\n\nMade by {self.agent} in a shadow workspace, reviewed in Arbor."
        full_message = f"{text.rstrip()}\n\nArbor-Session: {self.session_id}\nArbor-Batch: {batch_id}\n"
        checkpoints = []
        kept: list[bytes] = []
        before: dict[str, tuple[bytes | None, int | None]] = {}
        for plan in writing:
            for rel, (data, mode) in plan.writes.items():
                pre, pre_mode = before[rel] = read_disk(root / rel)
                if pre != plan.seen.get(rel):
                    # Another program wrote it after the merge above read it: writing now would drop that.
                    raise ChangeError(
                        f"{rel} changed on disk while Apply was preparing it; nothing was written — "
                        "Apply again to merge with the new version"
                    )
                base = plan.bases.get(rel)
                # Only pre-images must be durable before writing; what we write is stored after.
                pre_id = blob_id(pre) if pre is not None else None
                base_id = pre_id if base == pre else blob_id(base) if base is not None else None
                kept += [image for image in (pre, base) if image is not None]
                post_id = blob_id(data) if data is not None else None
                checkpoints.append(
                    FileCheckpoint(
                        rel, pre_id, pre_mode, post_id, mode if data is not None else None, base_id
                    )
                )
        blobs.put_synced(kept)  # the checkpoint's pre-images, on disk before the first file is written
        self.store.begin(
            batch_id,
            session_id=self.session_id,
            cwd=str(root),
            message=full_message,
            commit_mode=self.commit_mode if repo else "none",
            files=checkpoints,
            git_dir=str(repo.git_dir) if repo is not None and repo.git_dir else None,
        )
        written: list[str] = []
        try:
            writer.put_many(entries, written)
            commit = None
            if repo is not None and self.commit_mode == "commit" and recorded:
                commit = commit_paths(repo, blobs, recorded, full_message, head)
            elif repo is not None and self.commit_mode == "stage" and recorded:
                stage_paths(repo, blobs, recorded)
            else:
                blobs.put_many(data for _rel, data, _mode in entries if data is not None)
        except (OSError, ChangeError) as exc:
            self._put_back(writer, written, before)
            if isinstance(exc, OSError):
                failed = getattr(exc, "filename", None) or "a file"
                reason = f"writing {failed} failed ({os.strerror(exc.errno) if exc.errno else exc})"
                fix = "Free some space (or fix the permission), then Apply."
            else:
                reason = f"git could not record the batch: {exc}"
                fix = "Fix what git reports (e.g. remove a stale .git/index.lock if no git runs), then Apply."
            self.store.finish(batch_id, state="failed", reason=reason)
            raise ChangeError(
                f"Apply stopped: {reason}; the {len(written)} file(s) already written were put back, nothing "
                f"else changed. {fix}"
            ) from None
        self.store.finish(batch_id, state="applied", commit=commit)
        return self.store.get(batch_id), uncommitted

    def _put_back(
        self, writer: NoFollow, written: list[str], before: dict[str, tuple[bytes | None, int | None]]
    ) -> None:
        """Restore the files a failed Apply wrote, from the pre-images its checkpoint read."""
        for rel in reversed(written):
            previous, previous_mode = before[rel]
            try:
                writer.put(rel, previous, previous_mode)
            except (OSError, ChangeError):
                log.exception("could not restore %s after a failed apply", rel)

    def _plan(self, change: FileChange) -> _Plan | None:
        """What applying ``change``'s decisions writes, or None when it has no decided hunk."""
        decisions = {h.id: self.decision(h) for h in change.hunks}
        if all(d == "pending" for d in decisions.values()):
            return None
        accepted = [h for h in change.text_hunks if decisions[h.id] == "accepted"]
        kept = [h for h in change.text_hunks if decisions[h.id] != "rejected"]
        rename = next((h for h in change.hunks if h.kind == "rename"), None)
        plan = _Plan(change, decisions)
        old = change.old or b""
        if change.whole:
            # A binary rename (or mode change) is one piece too: accepted when all of it is, rejected when
            # any of it is.
            values = set(decisions.values())
            decision: Decision = (
                "rejected" if "rejected" in values else "pending" if "pending" in values else "accepted"
            )
            plan.whole_decision = decision
            if decision == "accepted":
                plan.writes[change.path] = (change.new, change.written_mode(True))
                plan.bases[change.path] = change.old if change.old_path is None else None
                if change.old_path:
                    plan.writes[change.old_path] = (None, None)
                    plan.bases[change.old_path] = change.old
            return plan
        content = apply_hunks(old, accepted)
        plan.kept = apply_hunks(old, kept)
        plan.accepted_content = content
        moved = rename is not None and decisions[rename.id] == "accepted"
        chmod = next((h for h in change.hunks if h.kind == "mode"), None)
        mode_accepted = chmod is not None and decisions[chmod.id] == "accepted"
        mode = change.written_mode(mode_accepted)
        source = change.old_path or change.path
        if moved:
            plan.writes[source] = (None, None)
            plan.writes[change.path] = (content, mode)
            plan.bases[source] = change.old
            plan.bases[change.path] = None
        elif accepted or mode_accepted:
            plan.writes[source] = (content, mode)
            plan.bases[source] = change.old
        return plan

    def _merge_with_disk(self, plan: _Plan) -> ConflictView | None:
        """Fold in what the user changed on disk since the agent read each file; a conflict stops the file."""
        root = self.changeset.root
        plan.proposed = dict(plan.writes)
        for rel, (data, mode) in list(plan.writes.items()):
            base = plan.bases.get(rel)
            if data is not None:
                try:
                    # The disk can change after the edit was checked: a folder or file now in the way.
                    self.changeset.check_file_path(rel, on_disk=True)
                except ChangeError as exc:
                    return ConflictView(
                        path=plan.change.path,
                        message=f"{rel} cannot be written: {exc}; reject this file, or move what is in the "
                        "way on disk, then apply again",
                    )
            if (root / rel).is_symlink():
                return ConflictView(
                    path=plan.change.path,
                    message=f"{rel} is a symbolic link on disk; Arbor does not write through links — "
                    "change the file it points to instead",
                )
            disk, _ = read_disk(root / rel)
            plan.seen[rel] = disk
            if disk == base:
                continue
            if disk is None or base is None or data is None or is_binary(disk) or is_binary(data):
                what = "deleted" if disk is None else "changed"
                return ConflictView(
                    path=plan.change.path,
                    message=f"{rel} was {what} on disk since the agent read it; "
                    "review the agent's version against yours and apply again",
                )
            merged, clean = merge3(disk, base, data, ("yours (disk)", "base", "agent"))
            if not clean:
                return ConflictView(
                    path=plan.change.path,
                    message=f"{rel} was changed on disk since the agent read it and the changes overlap; "
                    "it was not written — resolve the conflict or edit the file, then apply again",
                    merged=merged.decode("utf-8", errors="replace"),
                )
            plan.writes[rel] = (merged, mode)
            plan.merged = True
        return None

    def _settle(self, plan: _Plan) -> None:
        """After a successful apply: written hunks leave the review, rejected ones are dropped."""
        cs, change = self.changeset, plan.change
        for rel, (data, mode) in plan.writes.items():
            cs.rebase(rel, Base(data, mode if data is not None else None))
            cs.set_entry(rel, None)
        for hunk in change.hunks:
            if plan.decisions[hunk.id] != "pending":
                self._decisions.pop(hunk.id, None)
        if change.whole:
            if plan.whole_decision == "rejected":
                cs.set_entry(change.path, None)
                if change.old_path:
                    cs.set_entry(change.old_path, None)
            return
        rename = next((h for h in change.hunks if h.kind == "rename"), None)
        rename_decision = plan.decisions[rename.id] if rename else None
        chmod = next((h for h in change.hunks if h.kind == "mode"), None)
        mode_pending = chmod is not None and plan.decisions[chmod.id] == "pending"
        pending = [h for h in change.text_hunks if plan.decisions[h.id] == "pending"]
        source = change.old_path or change.path
        if rename_decision == "accepted" or rename is None:
            target = change.path
        elif rename_decision == "rejected":
            cs.set_entry(change.path, None)
            target = source
        else:
            target = change.path  # rename still pending: the content stays with it
            cs.set_entry(source, Entry(None, None))
        now = cs.base(target if target in plan.writes else source)  # the file as Apply left it
        # A mode still pending stays proposed; a decided one is what Apply left (accepted: written).
        mode = change.mode if mode_pending else now.mode
        if not pending and not mode_pending:
            if rename_decision == "pending":
                cs.set_entry(target, Entry(now.data, mode, source))
            elif target not in plan.writes:
                cs.set_entry(target, None)
            return
        proposed = plan.kept if pending else now.data
        if pending and plan.merged and plan.accepted_content is not None:
            written = now.data or b""
            merged, clean = merge3(written, plan.accepted_content, plan.kept, ("disk", "accepted", "pending"))
            proposed = merged if clean else plan.kept
        origin = source if rename_decision == "pending" else None
        cs.set_entry(target, Entry(proposed, mode, origin))


@dataclass
class _Plan:
    change: FileChange
    decisions: dict[str, Decision]
    writes: dict[str, tuple[bytes | None, int | None]] = field(default_factory=dict)
    """What goes to disk: the accepted change, merged with the user's edits since the agent read."""
    proposed: dict[str, tuple[bytes | None, int | None]] = field(default_factory=dict)
    """The accepted change alone (what the commit records, replayed onto HEAD)."""
    bases: dict[str, bytes | None] = field(default_factory=dict)
    seen: dict[str, bytes | None] = field(default_factory=dict)
    """What each written file held on disk when the plan was merged with it."""
    kept: bytes = b""
    accepted_content: bytes | None = None
    whole_decision: Decision = "pending"
    merged: bool = False
