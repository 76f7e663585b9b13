"""The files a change set changes, each diffed against its base into hunks: text hunks, and the
pseudo-hunks of a binary file, a rename and a mode change, each decided like a hunk in review."""

from __future__ import annotations

from dataclasses import dataclass, field

from ide.changes.hunks import Hunk, binary_hunk, is_binary, mode_hunk, rename_hunk, text_hunks
from ide.changes.meta import meta_reason
from ide.changes.overlay import ChangeSet, git_mode, git_permissions


@dataclass
class FileChange:
    """One file of the change set, diffed against its base."""

    path: str
    old_path: str | None
    status: str
    old: bytes | None
    new: bytes | None
    mode: int | None
    binary: bool
    hunks: list[Hunk] = field(default_factory=list)
    old_mode: int | None = None
    """The permission bits of the file before (of the file renamed from), None when there was none."""

    @property
    def text_hunks(self) -> list[Hunk]:
        return [h for h in self.hunks if h.kind == "text"]

    @property
    def mode_changed(self) -> bool:
        """Whether the change makes the file executable or no longer so (all git records of a mode)."""
        if self.old is None or self.new is None:
            return False
        return git_mode(self.old_mode) != git_mode(self.mode)

    def written_mode(self, mode_accepted: bool) -> int:
        """The permission bits Apply writes the file with: git's (0o755 or 0o644) for a new file or an
        accepted mode change, else the file's own without setuid, setgid or sticky (a private 0o600 file
        stays private). Never the special bits: git records none, and an agent must not set them."""
        if self.old_mode is None or (mode_accepted and self.mode_changed):
            return git_permissions(self.mode)
        return self.old_mode & 0o777

    @property
    def meta(self) -> str | None:
        """Why this file needs its own accept (ide.changes.meta), or None."""
        return meta_reason(self.path) or (meta_reason(self.old_path) if self.old_path else None)

    @property
    def whole(self) -> bool:
        """Decided as one piece: binary, added or deleted."""
        return self.binary or self.status in ("added", "deleted")


HunkCache = dict[tuple[str, str | None, bytes | None, bytes | None, str, str], list[Hunk]]


def file_changes(changeset: ChangeSet, cache: HunkCache | None = None) -> list[FileChange]:
    """The files ``changeset`` changes, sorted by path, with their hunks.

    ``cache`` (filled and pruned here) keeps the hunks of files that did not change since the last call.
    """
    previous = dict(cache) if cache is not None else {}
    if cache is not None:
        cache.clear()
    paths = changeset.changed_paths()
    origins = {changeset.entry(p).origin for p in paths} - {None}  # type: ignore[union-attr]
    out: list[FileChange] = []
    for path in paths:
        entry = changeset.entry(path)
        assert entry is not None
        if entry.data is None and path in origins:
            continue  # shown as the rename's old side
        source = entry.origin or path
        base = changeset.base(source)
        old = base.data
        if entry.origin:
            status = "renamed"
        elif entry.data is None:
            status = "deleted"
        elif old is None:
            status = "added"
        else:
            status = "modified"
        binary = any(data is not None and is_binary(data) for data in (old, entry.data))
        change = FileChange(path, entry.origin, status, old, entry.data, entry.mode, binary)
        change.old_mode = base.mode
        modes = (git_mode(base.mode), git_mode(entry.mode))
        key = (path, entry.origin, old, entry.data, *modes)
        known = previous.get(key)
        if known is not None:
            change.hunks.extend(known)
            out.append(change)
            if cache is not None:
                cache[key] = known
            continue
        if entry.origin:
            change.hunks.append(rename_hunk(entry.origin, path))
        if change.mode_changed:
            change.hunks.append(mode_hunk(path, *modes))
        if binary:
            if old != entry.data:
                change.hunks.append(binary_hunk(path, old, entry.data))
        else:
            found = text_hunks(path, old or b"", entry.data or b"")
            if not found and status in ("added", "deleted"):
                found = [binary_hunk(path, old, entry.data)]  # an empty file: one whole-file pseudo-hunk
            change.hunks.extend(found)
        if cache is not None:
            cache[key] = list(change.hunks)
        out.append(change)
    return out
