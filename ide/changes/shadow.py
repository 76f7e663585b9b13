"""A shadow workspace for an agent Arbor does not control: its cwd, and what it changed there captured.

Most foreign agents write with their own tools and shell commands, not through the client's ``fs/*``,
so their edits can only be reviewed if they land somewhere that is not the user's workspace. The shadow
is a checkout of HEAD in a git repository of its own — its own refs, config and no hooks, the user's
objects read through ``objects/info/alternates`` — so whatever git the agent runs there (commit,
update-ref, config, hooks) never reaches the user's repository (a ``git worktree`` would share all of
those). On top come the user's uncommitted and untracked-but-not-ignored files. Ignored files — build
output — are not there at all, and neither is any file the secret list names, tracked or not (the agent
is told they are withheld, and a secret it writes is not captured). Its baseline is that state
(``ide/changes/shadowbase.py`` makes it): ``_known`` holds every baseline file's mode, and its stat data
are vouched for either by the stat index (``ide/changes/statindex.py``: a git index of the shadow's own,
outside the checkout, which ``git diff-files`` compares) or, once its content was seen equal to the
baseline, by an ``lstat`` stamp kept here (``_watched``); content is read only for what moved, and
compared with the baseline bytes (HEAD's blob through git's checkout filters, or the bytes copied in).
New files are looked for only in the directories whose own stamp moved (an entry was added, removed or
renamed there), and kept unless ``git check-ignore`` says they are ignored. The shadow's own index is
read once, as the checkout left it, before the agent starts: whatever git the agent runs there (add,
commit) changes nothing here.

A capture fills a :class:`~ide.changes.overlay.ChangeSet` over the real workspace whose bases are the
shadow's baseline, so today's Review and Apply (three-way with the user's edits, commit, rollback) take
it as they take Arbor's own edits. Renames come out as a deletion and a creation; links, files over the
size limit and paths below a link are not captured but named in ``Capture.skipped``. Reads and writes
here never follow a link (``NoFollow``); git runs only through ``ide.gitsafe``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ide.changes.gitstate import Watch
from ide.changes.gitutil import find_repo, git, merge3
from ide.changes.hunks import apply_hunks, is_binary
from ide.changes.nofollow import NoFollow
from ide.changes.overlay import MAX_FILE_BYTES, Base, ChangeError, ChangeSet, Entry
from ide.changes.review import Review, file_changes
from ide.changes.shadowbase import RACY_NS, ShadowBase, lstat_stamp
from ide.changes.shadowrepo import renames
from ide.changes.statindex import pack_entry, vouches
from ide.changes.worktree import PREFIX
from ide.fswalk import MAX_WALK_DEPTH, folder_entries
from ide.gitsafe import run_git

ABSENT = Base(None, None)
PROMOTE_MIN = 1_000
PROMOTE_SHARE = 10
"""A capture hands the watched files it saw unchanged (once old enough) to the stat index when there are at
least ``PROMOTE_MIN`` of them and a ``PROMOTE_SHARE``-th of the index: rewriting the index costs about as
much as ``lstat`` of a fifth of its files here, and fewer run beside git's ``diff-files`` anyway."""


@dataclass
class Capture:
    """What the agent changed in the shadow since its baseline."""

    changes: dict[str, tuple[Base, Base]] = field(default_factory=dict)
    """Workspace-relative path → (baseline, now); ``data`` None: absent."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Paths that changed but are not captured, and why (a link, too large, below a link)."""


class Shadow(ShadowBase):
    """One foreign-agent session's shadow of ``workspace``; :meth:`create` makes it, :meth:`close` ends it."""

    @classmethod
    def create(
        cls,
        workspace: Path,
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        secret: Callable[[str], bool] | None = None,
    ) -> Shadow:
        """A shadow of ``workspace`` (inside a git repository with a commit; ChangeError otherwise).
        ``secret`` tells a workspace-relative path the secret list names: such files are withheld."""
        workspace = Path(os.path.realpath(workspace))
        repo = find_repo(workspace)
        head = repo.head() if repo is not None else None
        if repo is None or head is None or repo.objects is None:
            raise ChangeError(
                f"{workspace} is not in a git repository with a commit; a foreign agent's changes are "
                "captured from a git checkout — run git init and commit once, then start again"
            )
        tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-shadow-")))
        top = tmp / (repo.top.name or "workspace")
        shadow = cls(workspace, repo, tmp, top, head, max_file_bytes, secret)
        atexit.register(_close_quietly, weakref.ref(shadow))
        try:
            shadow._make()
            shadow.git = Watch(repo)
        except BaseException:
            shadow.close()
            raise
        return shadow

    def baseline(self, rel: str) -> Base:
        """What ``rel`` held when the shadow was made (or last took in the workspace)."""
        known = self._base.get(rel)
        if known is not None:
            return known
        if rel not in self._known:
            return ABSENT
        # Checkout filters as the worktree got them (eol); the repository's own programs are blanked.
        data = git(self.repo.top, "cat-file", "--filters", f"{self.head}:{self.repo.path(rel)}")
        found = self._base[rel] = Base(data, self._known[rel])
        return found

    def _set_baseline(self, rel: str, state: Base) -> None:
        self._base[rel] = state
        if state.data is None:
            self._known.pop(rel, None)
            self._watched.pop(rel, None)
            if self._index is not None:
                self._index.entries.pop(rel, None)
        else:
            self._known[rel] = state.mode or 0o644
            self._distrust(rel)

    def _distrust(self, rel: str) -> None:
        """From now on ``rel``'s content is compared until it is seen equal to the baseline again."""
        if rel in self._known:
            if self._index is not None:
                self._index.entries.pop(rel, None)
            self._watched[rel] = None

    def read(self, rel: str) -> Base:
        """What ``rel`` holds in the shadow now (never through a link; ChangeError for a link)."""
        try:
            data, mode = self._files.read(rel, self.max_file_bytes)
        except ChangeError:
            if self._below_a_file(rel):
                return ABSENT  # a parent directory became a file: nothing is there any more
            raise
        return Base(data, mode)

    def _below_a_file(self, rel: str) -> bool:
        """A parent of ``rel`` is a plain file (looked at from the top down, so no link is followed)."""
        parts = rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            try:
                mode = os.lstat(os.path.join(self.root, *parts[:depth])).st_mode
            except OSError:
                return False
            if not stat.S_ISDIR(mode):
                return stat.S_ISREG(mode)
        return False

    def put(self, rel: str, state: Base) -> None:
        """Make the shadow's ``rel`` hold ``state`` (a revert, a take-in); the baseline is not touched."""
        self._files.put(rel, state.data, state.mode, durable=False)
        self._distrust(rel)

    def _new_files(self) -> list[str]:
        """Files not in the baseline, not ignored: looked for only in directories whose stamp moved, and
        below the new directories found there that are not ignored themselves (one ``check-ignore`` per
        level, so an ignored ``node_modules`` is never walked)."""
        root = str(self.root)
        files: list[str] = []
        fresh: list[str] = []
        for folder, seen in self._dirs.items():
            now = lstat_stamp(f"{root}/{folder}" if folder else root)
            if now == seen or now is None or not stat.S_ISDIR(now[5]):
                continue  # unchanged, or gone or a link now: its files show as deleted or skipped
            for rel, entry in folder_entries(f"{root}/{folder}" if folder else root, folder):
                if not self.repo.prefix and rel == ".git":
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                # A baseline file may be a directory now, and a baseline directory a file.
                if is_dir and rel not in self._dirs:
                    fresh.append(rel)
                elif not is_dir and rel not in self._known:
                    files.append(rel)
        for _depth in range(MAX_WALK_DEPTH):
            if not fresh:
                break
            kept = self._not_ignored(fresh)
            fresh = []
            for folder in kept:
                for rel, entry in folder_entries(f"{root}/{folder}", folder):
                    try:
                        (fresh if entry.is_dir(follow_symlinks=False) else files).append(rel)
                    except OSError:
                        continue
        return self._not_ignored(files)

    def _not_ignored(self, paths: list[str]) -> list[str]:
        """``paths`` without those the shadow's ignore rules match (``git check-ignore --no-index``)."""
        if not paths:
            return []
        listing = b"".join(os.fsencode(self.repo.path(rel)) + b"\0" for rel in paths)
        args = ("--git-dir", str(self.admin), "--work-tree", str(self.top), "check-ignore", "-z", "--stdin")
        # Hardened by the shadow's own config, which the agent may have written.
        done = run_git(self.top, *args, "--no-index", input=listing)
        if done.returncode not in (0, 1):
            raise ChangeError(
                f"git check-ignore failed in the shadow: {done.stderr.decode(errors='replace')}"
            )
        ignored = {self._scoped(os.fsdecode(raw)) for raw in done.stdout.split(b"\0") if raw}
        return [rel for rel in paths if rel not in ignored]

    def capture(self) -> Capture:
        """The agent's changes since the baseline: the files whose stat data moved (``git diff-files``
        over the stat index, ``lstat`` here for the rest), then content only where they did."""
        result = Capture()
        started = time.time_ns()
        racy_before = started - RACY_NS
        root = str(self.root)
        index = self._index
        moved: list[str] = []
        failed: list[BaseException] = []
        asking = None
        if index is not None and index.entries:

            def ask() -> None:
                try:
                    moved.extend(index.moved())
                except BaseException as exc:
                    failed.append(exc)

            asking = threading.Thread(target=ask, daemon=True)
            asking.start()
        # While git looks at the vouched files: strings, not Paths (Path joins cost more than lstat).
        watched = self._watched
        candidates = [
            rel for rel, seen in watched.items() if seen is None or seen != lstat_stamp(f"{root}/{rel}")
        ]
        if asking is not None:
            asking.join()
            if failed:
                raise failed[0]
            for rel in moved:
                if index is not None and index.entries.pop(rel, None) is not None:
                    watched[rel] = None
                    candidates.append(rel)
        for rel in candidates:
            self._compare(rel, result, racy_before)
        for rel in sorted(set(self._new_files())):
            self._compare(rel, result, racy_before)
        self._promote(started)
        return result

    def _promote(self, started: int) -> None:
        """Hand the watched files whose stamps this capture saw, once old enough, to the stat index."""
        index = self._index
        if index is None:
            return
        ready = [
            (rel, seen)
            for rel, seen in self._watched.items()
            if seen is not None and vouches(max(seen[1], seen[2]) // 1_000_000_000, started)
        ]
        if not ready or len(ready) < max(PROMOTE_MIN, len(index.entries) // PROMOTE_SHARE):
            return
        if len(index.entries) + len(ready) < self.stat_index_min:
            return
        for rel, seen in ready:
            entry = pack_entry(index.name(rel), *seen)
            if entry is not None:
                index.entries[rel] = entry
                del self._watched[rel]
        index.write(sort=True)

    def _compare(self, rel: str, result: Capture, racy_before: int) -> None:
        if self.is_secret(rel):
            result.skipped[rel] = (
                "the secret list (workspace.secrets) names it: Arbor never takes a secret from an agent"
            )
            return
        path = f"{self.root}/{rel}"
        before = lstat_stamp(path)
        try:
            now = self.read(rel)
        except ChangeError as exc:
            result.skipped[rel] = str(exc)
            return
        base = self.baseline(rel)
        if now == base:
            # Trusted from now on only if nothing wrote the file while it was read, and not too recently.
            if (
                before is not None
                and rel in self._known
                and before[1] < racy_before
                and lstat_stamp(path) == before
            ):
                self._watched[rel] = before
            return
        result.changes[rel] = (base, now)

    def fill(self, changeset: ChangeSet) -> Capture:
        """Capture into ``changeset`` (over the real workspace): each changed file's base is the shadow's
        baseline, its entry what the shadow holds; files no longer changed leave it."""
        found = self.capture()
        for rel in self._captured - found.changes.keys():
            changeset.set_entry(rel, None)
            changeset.rebase(rel, self.baseline(rel))
        origins = renames(found.changes)
        for rel, (base, now) in sorted(found.changes.items()):
            mode = now.mode if now.data is not None else None
            try:
                changeset.rebase(rel, base)
                changeset.set_entry(rel, Entry(now.data, mode, origins.get(rel)))
            except ChangeError as exc:  # a name no author may write (control or bidi characters), …
                found.skipped[rel] = str(exc)
        for rel in found.skipped.keys() & found.changes.keys():
            del found.changes[rel]
        self._captured = set(found.changes)
        return found

    def settle(self, review: Review) -> list[str]:
        """Make the shadow hold what the user decided (before the agent's next turn): rejected hunks
        reverted, applied files taken as the new baseline. Returns the paths rewritten."""
        changeset = review.changeset
        rewritten: list[str] = []
        rejected: dict[str, Base] = {}
        for change in file_changes(changeset):
            decisions = {hunk.id: review.decision(hunk) for hunk in change.hunks}
            if "rejected" not in decisions.values():
                continue
            kept = [h for h in change.text_hunks if decisions[h.id] != "rejected"]
            mode_back = any(h.kind == "mode" and decisions[h.id] == "rejected" for h in change.hunks)
            mode = change.old_mode if mode_back else change.mode
            if change.old_path is not None:  # a rename: rejected, the file goes back, kept hunks and all
                moved = next(h for h in change.hunks if h.kind == "rename")
                if change.binary:  # one piece: any of it rejected, all of it is
                    content, back = changeset.base(change.old_path), True
                else:
                    content = Base(apply_hunks(change.old or b"", kept), mode)
                    back = decisions[moved.id] == "rejected"
                rejected[change.old_path] = content if back else ABSENT
                rejected[change.path] = ABSENT if back else content
            elif change.whole:
                rejected[change.path] = changeset.base(change.path)
            else:
                rejected[change.path] = Base(apply_hunks(change.old or b"", kept), mode)
        for rel in sorted(self._captured):
            base = changeset.base(rel)
            if base != self.baseline(rel):
                self._set_baseline(rel, base)  # Apply wrote it: the workspace holds this now
            entry = changeset.entry(rel)
            wanted = rejected.get(rel) or (Base(entry.data, entry.mode) if entry is not None else base)
            with contextlib.suppress(ChangeError):
                if self.read(rel) != wanted:
                    self.put(rel, wanted)
                    rewritten.append(rel)
        return rewritten

    def take_in(self) -> list[str]:
        """Bring the user's workspace edits made since the baseline into the shadow (at a turn's start):
        a file the agent did not touch takes the user's version, one both changed is merged three-way.
        Returns the files where the two overlap (left as the agent has them, the baseline unchanged)."""
        conflicts: list[str] = []
        real = NoFollow(self.workspace)
        for rel in sorted(self._uncommitted() | self._base.keys()):
            try:
                mine = Base(*real.read(rel, self.max_file_bytes))
                theirs = self.read(rel)
            except ChangeError as exc:
                self.notes.append(f"{rel} was not taken into the shadow: {exc}")
                continue
            base = self.baseline(rel)
            if mine == base:
                continue
            if theirs == base:
                self.put(rel, mine)
            elif theirs != mine:
                if None in (mine.data, base.data, theirs.data) or any(
                    is_binary(d) for d in (mine.data, base.data, theirs.data) if d is not None
                ):
                    conflicts.append(rel)
                    continue
                merged, clean = merge3(theirs.data, base.data, mine.data, ("agent", "base", "yours"))  # type: ignore[arg-type]
                if not clean:
                    conflicts.append(rel)
                    continue
                self.put(rel, Base(merged, theirs.mode))
            self._set_baseline(rel, mine)
        return conflicts

    def workspace_changes(self, changeset: ChangeSet | None = None) -> list[str]:
        """Workspace files that differ from the baseline now: the user's own edits since it was taken, or
        an agent writing outside its shadow (a file it cannot read through no link counts as changed) —
        not those that hold what an Apply of ``changeset`` wrote (its base of a captured path)."""
        real = NoFollow(self.workspace)
        changed: list[str] = []
        for rel in sorted(self._uncommitted() | self._base.keys()):
            try:
                now = Base(*real.read(rel, self.max_file_bytes))
            except ChangeError:
                changed.append(rel)
                continue
            applied = changeset is not None and rel in self._captured and now == changeset.base(rel)
            if now != self.baseline(rel) and not applied:
                changed.append(rel)
        return changed

    def close(self) -> None:
        """Remove the shadow, its git directory with it; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        shutil.rmtree(self.tmp, ignore_errors=True)


def _close_quietly(ref: weakref.ref[Shadow]) -> None:
    shadow = ref()
    if shadow is not None:
        with contextlib.suppress(Exception):
            shadow.close()
