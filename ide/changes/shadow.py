"""A shadow workspace for an agent Arbor does not control: its cwd, and what it changed there captured.

Most foreign agents write with their own tools and shell commands, not through the client's ``fs/*``,
so their edits can only be reviewed if they land somewhere that is not the user's workspace. The shadow
is a checkout of HEAD in a git repository of its own — its own refs, config and no hooks, the user's
objects read through ``objects/info/alternates`` — so whatever git the agent runs there (commit,
update-ref, config, hooks) never reaches the user's repository (a ``git worktree`` would share all of
those). On top come the user's uncommitted and untracked-but-not-ignored files. Ignored files — build
output — are not there at all, and neither is any file the secret list names, tracked or not (the agent
is told they are withheld, and a secret it writes is not captured). Its baseline is that state:
``_known`` holds every baseline file's mode and, once its content was seen equal to the baseline, its
``lstat`` stamp; content is read only for what the stamps say moved, and compared with the baseline
bytes (HEAD's blob through git's checkout filters, or the bytes copied in). New files are looked for
only in the directories whose own stamp moved (an entry was added, removed or renamed there), and kept
unless ``git check-ignore`` says they are ignored; the shadow's index plays no part, so whatever git the
agent runs there (add, commit) changes nothing here.

A capture fills a :class:`~ide.changes.overlay.ChangeSet` over the real workspace whose bases are the
shadow's baseline, so today's Review and Apply (three-way with the user's edits, commit, rollback) take
it as they take Arbor's own edits. Renames come out as a deletion and a creation; links, files over the
size limit and paths below a link are not captured but named in ``Capture.skipped``. Reads and writes
here never follow a link (``NoFollow``); git runs only through ``ide.gitsafe``.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import os
import re
import shutil
import stat
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ide.changes.gitstate import Watch
from ide.changes.gitutil import Repo, find_repo, git, merge3
from ide.changes.hunks import apply_hunks, is_binary
from ide.changes.nofollow import NoFollow
from ide.changes.overlay import MAX_FILE_BYTES, Base, ChangeError, ChangeSet, Entry
from ide.changes.review import Review, file_changes
from ide.changes.worktree import PREFIX
from ide.fswalk import MAX_WALK_DEPTH, folder_entries
from ide.gitsafe import run_git

Stamp = tuple[int, int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device, mode) of an ``lstat``: what moves when a file is touched."""
RACY_NS = 50_000_000
"""A file modified this recently may change again within the same timestamp tick unseen by ``lstat``:
its stamp is not trusted, its content is compared (git's "racily clean" rule)."""
ABSENT = Base(None, None)


def _stamp(path: str) -> Stamp | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev, info.st_mode)


@dataclass
class Capture:
    """What the agent changed in the shadow since its baseline."""

    changes: dict[str, tuple[Base, Base]] = field(default_factory=dict)
    """Workspace-relative path → (baseline, now); ``data`` None: absent."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Paths that changed but are not captured, and why (a link, too large, below a link)."""


class Shadow:
    """One foreign-agent session's shadow of ``workspace``; :meth:`create` makes it, :meth:`close` ends it."""

    def __init__(
        self,
        workspace: Path,
        repo: Repo,
        tmp: Path,
        top: Path,
        head: str,
        limit: int,
        secret: Callable[[str], bool] | None = None,
    ) -> None:
        self.workspace = workspace
        self.repo = repo
        self.tmp = tmp
        self.top = top
        """The shadow checkout's top; :attr:`root` is the workspace's place in it (the agent's cwd)."""
        self.root = top / repo.prefix if repo.prefix else top
        self.head = head
        """The commit the shadow was made at."""
        self.max_file_bytes = limit
        self.admin = top / ".git"
        """The shadow's own git directory, named explicitly so a ``.git`` the agent swaps is not used."""
        self.is_secret = secret or (lambda _rel: False)
        """Whether a workspace-relative path is one the secret list names (withheld from the agent)."""
        self.withheld: set[str] = set()
        """Secret files of the workspace kept out of the shadow."""
        self._files = NoFollow(self.root)
        self._known: dict[str, int] = {}
        """Every file of the baseline (workspace-relative) → its permission bits."""
        self._clean: dict[str, Stamp] = {}
        """Files whose content was last seen equal to the baseline, with the stamp they had then."""
        self._base: dict[str, Base] = {}
        """Baseline content known here: copied in, taken in, or read from HEAD once."""
        self._dirs: dict[str, Stamp | None] = {}
        """Every directory of the baseline → its stamp then: where nothing was added, nothing is new."""
        self._captured: set[str] = set()
        self.notes: list[str] = []
        """What the shadow could not hold (links of the user's not copied, …), for the user to read."""
        self.git: Watch | None = None
        """The user's repository's git state, read at each turn's start (ide.changes.gitstate)."""
        self.closed = False

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
        try:
            _own_repository(repo, top, head)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shadow = cls(workspace, repo, tmp, top, head, max_file_bytes, secret)
        atexit.register(_close_quietly, weakref.ref(shadow))
        try:
            shadow._copy_uncommitted()
            shadow._stamp_all()
            shadow.git = Watch(repo)
        except BaseException:
            shadow.close()
            raise
        return shadow

    def _scoped(self, repo_rel: str) -> str | None:
        """A repository-relative path as workspace-relative, or None when it is outside the workspace."""
        prefix = self.repo.prefix
        if not prefix:
            return repo_rel
        return repo_rel[len(prefix) + 1 :] if repo_rel.startswith(prefix + "/") else None

    def _workspace_paths(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> set[str]:
        out = git(cwd or self.repo.top, *args, env=env)
        found = (self._scoped(os.fsdecode(raw)) for raw in out.split(b"\0") if raw)
        return {rel for rel in found if rel}

    def _uncommitted(self) -> set[str]:
        """Workspace files that differ from the shadow's commit, and untracked ones not ignored."""
        return {rel for rel in self._changed_or_untracked() if not self.is_secret(rel)}

    def _changed_or_untracked(self) -> set[str]:
        changed = self._workspace_paths("diff", "--name-only", "--no-renames", "-z", self.head)
        return changed | self._workspace_paths("ls-files", "--others", "--exclude-standard", "-z")

    def _copy_uncommitted(self) -> None:
        real = NoFollow(self.workspace)
        listed = self._changed_or_untracked()
        self.withheld.update(rel for rel in listed if self.is_secret(rel))
        for rel in sorted(listed - self.withheld):
            try:
                data, mode = real.read(rel, self.max_file_bytes)
            except ChangeError as exc:
                self.notes.append(f"{rel} was not copied into the shadow: {exc}")
                continue
            self._files.put(rel, data, mode, durable=False)
            self._base[rel] = Base(data, mode)

    def _stamp_all(self) -> None:
        """Record every file of the fresh shadow as the baseline, with its stamp unless racy, and every
        directory with its stamp."""
        now = time.time_ns()
        root = str(self.root)
        files, dirs = self._walk([""], top=True)
        for rel in files:
            if self.is_secret(rel):
                # A secret the repository tracks is taken out of the checkout before the agent starts.
                with contextlib.suppress(OSError):
                    os.unlink(f"{root}/{rel}")
                self.withheld.add(rel)
                continue
            found = _stamp(f"{root}/{rel}")
            if found is None:
                continue
            self._known[rel] = stat.S_IMODE(found[5])
            if found[1] < now - RACY_NS:
                self._clean[rel] = found
        # Directories last: a withheld secret's removal moved its directory's stamp.
        for rel in dirs:
            self._dirs[rel] = _stamp(f"{root}/{rel}" if rel else root)
        if self.withheld:
            shown = ", ".join(sorted(self.withheld)[:10]) + (", …" if len(self.withheld) > 10 else "")
            self.notes.append(
                f"withheld from the agent: {shown} — the secret list (workspace.secrets) names them, so "
                "they are not in its workspace, and it can neither read nor write them there"
            )

    def _walk(self, folders: list[str], *, top: bool = False) -> tuple[list[str], list[str]]:
        """Files (and links) and directories in and below ``folders`` (those included), never through a
        link, at most ``MAX_WALK_DEPTH`` deep; git's own ``.git`` at the worktree's top left out."""
        at_top = top and not self.repo.prefix
        files: list[str] = []
        dirs: list[str] = []
        stack = [(rel, 0) for rel in folders]
        while stack:
            folder, depth = stack.pop()
            dirs.append(folder)
            for rel, entry in folder_entries(f"{self.root}/{folder}" if folder else self.root, folder):
                if at_top and rel == ".git":
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if not is_dir:
                    files.append(rel)
                elif depth + 1 < MAX_WALK_DEPTH:
                    stack.append((rel, depth + 1))
        return files, dirs

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
        self._clean.pop(rel, None)
        if state.data is None:
            self._known.pop(rel, None)
        else:
            self._known[rel] = state.mode or 0o644

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
        self._clean.pop(rel, None)

    def _new_files(self) -> list[str]:
        """Files not in the baseline, not ignored: looked for only in directories whose stamp moved, and
        below the new directories found there that are not ignored themselves (one ``check-ignore`` per
        level, so an ignored ``node_modules`` is never walked)."""
        root = str(self.root)
        files: list[str] = []
        fresh: list[str] = []
        for folder, seen in self._dirs.items():
            now = _stamp(f"{root}/{folder}" if folder else root)
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
        """The agent's changes since the baseline: a stat scan, then content only where stats moved."""
        result = Capture()
        racy_before = time.time_ns() - RACY_NS
        root = str(self.root)
        clean = self._clean
        # Strings, not Paths: 10,000 Path joins cost more than the 10,000 lstat calls.
        candidates = [
            rel for rel in self._known if (seen := clean.get(rel)) is None or seen != _stamp(f"{root}/{rel}")
        ]
        for rel in candidates:
            self._compare(rel, result, racy_before)
        for rel in sorted(set(self._new_files())):
            self._compare(rel, result, racy_before)
        return result

    def _compare(self, rel: str, result: Capture, racy_before: int) -> None:
        if self.is_secret(rel):
            result.skipped[rel] = (
                "the secret list (workspace.secrets) names it: Arbor never takes a secret from an agent"
            )
            return
        path = f"{self.root}/{rel}"
        before = _stamp(path)
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
                and _stamp(path) == before
            ):
                self._clean[rel] = before
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


SIMILAR = 0.5
"""How alike (difflib's ratio of lines) a deleted and a new file must be to count as a rename, as git's
default ``-M50%``."""
RENAME_PAIRS_MAX = 2_500
"""Beyond this many deleted × new pairs only exact renames are looked for (the rest stay a deletion and a
creation): each similar pair is a line diff."""


def renames(changes: dict[str, tuple[Base, Base]]) -> dict[str, str]:
    """New path → the deleted path it was moved from: the same bytes first, then (text, few enough
    pairs) the most alike at ``SIMILAR`` or more; each deleted path is the origin of one new path at most."""
    deleted = {rel: base.data for rel, (base, now) in changes.items() if now.data is None and base.data}
    added = {rel: now.data for rel, (base, now) in changes.items() if base.data is None and now.data}
    if not deleted or not added:
        return {}
    found: dict[str, str] = {}
    by_bytes: dict[bytes, list[str]] = {}
    for rel, data in sorted(deleted.items()):
        by_bytes.setdefault(data, []).append(rel)
    for rel, data in sorted(added.items()):
        if by_bytes.get(data):
            found[rel] = by_bytes[data].pop(0)
    left = {rel: data for rel, data in deleted.items() if rel not in found.values() and not is_binary(data)}
    rest = {rel: data for rel, data in added.items() if rel not in found and not is_binary(data)}
    if len(left) * len(rest) > RENAME_PAIRS_MAX:
        return found
    scored = sorted(
        (
            (-difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False).ratio(), a, d)
            for a, new in rest.items()
            for d, old in left.items()
        ),
    )
    for score, new_rel, old_rel in scored:
        if -score < SIMILAR:
            break
        if new_rel not in found and old_rel not in found.values():
            found[new_rel] = old_rel
    return found


LOCAL_CHECKOUT_KEYS = (
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.filemode",
)
"""The repository's own settings that shape a checkout's bytes: the shadow's config gets them, so its files
are what the user's checkout holds. Nothing else of the repository's config is copied."""


def _own_repository(repo: Repo, top: Path, head: str) -> None:
    """Check ``head`` out at ``top`` in a git repository of its own: own refs, config and hooks (none), the
    user's objects read through ``objects/info/alternates`` (git never writes there). Unlike a worktree,
    nothing git does in it — update-ref, config, hooks, gc — reaches the user's repository."""
    assert repo.objects is not None
    top.mkdir(parents=True)
    git(top, "init", "--quiet", "--template=", str(top))
    admin = top / ".git"
    (admin / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (admin / "objects" / "info" / "alternates").write_text(f"{repo.objects}\n", encoding="utf-8")
    common = repo.objects.parent
    for name in ("shallow", "info/exclude", "info/attributes"):
        source = common / name
        if source.is_file() and not source.is_symlink():
            (admin / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, admin / name)
    # One read of the repository's own config for all the keys (exit 1: none of them is set).
    wanted = "^(" + "|".join(re.escape(key) for key in LOCAL_CHECKOUT_KEYS) + ")$"
    found = run_git(repo.top, "config", "--local", "-z", "--get-regexp", wanted)
    for entry in found.stdout.decode("utf-8", "replace").split("\0") if found.returncode == 0 else []:
        key, _, value = entry.partition("\n")
        if key and value:
            git(top, "config", "--local", key, value)
    # Parallel checkout (one worker per core): the checkout is most of the shadow's cost.
    git(top, "-c", "checkout.workers=0", "checkout", "--quiet", "--detach", head)


def _close_quietly(ref: weakref.ref[Shadow]) -> None:
    shadow = ref()
    if shadow is not None:
        with contextlib.suppress(Exception):
            shadow.close()
