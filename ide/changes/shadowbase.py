"""What a shadow workspace is made of, and its making: HEAD checked out in a repository of its own, the
user's uncommitted files copied in, secrets withheld, and the baseline taken — each file's mode, and who
vouches for its stat data (the stat index of ``ide/changes/statindex.py``, or a stamp kept here). The
captures, and everything between turns, are ``ide/changes/shadow.py``'s :class:`Shadow`."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ide.changes.gitstate import Watch
from ide.changes.gitutil import Repo, git
from ide.changes.nofollow import NoFollow
from ide.changes.overlay import Base, ChangeError
from ide.changes.shadowrepo import head_files, own_repository, umask
from ide.changes.statindex import GITLINK_MODE, LINK_MODE, StatIndex, index_mode, read_entries, vouches
from ide.fswalk import MAX_WALK_DEPTH, folder_entries

Stamp = tuple[int, int, int, int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device, mode, uid, gid) of an ``lstat``: what moves when a file is
touched."""
RACY_NS = 50_000_000
"""A file modified this recently may change again within the same timestamp tick unseen by ``lstat``:
its stamp is not trusted, its content is compared (git's "racily clean" rule)."""


def lstat_stamp(path: str) -> Stamp | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_ino,
        info.st_dev,
        info.st_mode,
        info.st_uid,
        info.st_gid,
    )


class ShadowBase:
    """A shadow's state and its making; :class:`~ide.changes.shadow.Shadow` captures and keeps it."""

    stat_index_min = 5_000
    """Fewer files than this are not worth a git process at each capture (Python's ``lstat`` costs ~1.8 µs
    a file, ``git diff-files`` ~0.6 µs plus ~5 ms to start): their stamps are kept here."""

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
        self._watched: dict[str, Stamp | None] = {}
        """Baseline files the stat index does not vouch for → the stamp they had when their content was
        last seen equal to the baseline (None: not seen so, their content is compared)."""
        self._index: StatIndex | None = None
        """The stat index: every other baseline file, whose moves ``git diff-files`` finds."""
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

    def _make(self) -> None:
        """Check HEAD out and copy the user's uncommitted files in, secrets withheld, then take the
        baseline. While git checks out (most of the cost), the user's workspace is listed and read and
        HEAD's files are held against the secret list."""
        outcome: list[BaseException | None] = []
        listing: list[set[str]] = []

        def check_out() -> None:
            try:
                own_repository(self.repo, self.top, self.head)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        def list_uncommitted() -> None:
            with contextlib.suppress(BaseException):
                listing.append(self._changed_or_untracked())

        threads = [threading.Thread(target=job, daemon=True) for job in (check_out, list_uncommitted)]
        for thread in threads:
            thread.start()
        try:
            tracked_secrets = [rel for rel in head_files(self.repo, self.head) if self.is_secret(rel)]
            threads[1].join()
            listed = listing[0] if listing else self._changed_or_untracked()  # its error, raised here
            self.withheld.update(rel for rel in listed if self.is_secret(rel))
            copies = self._read_uncommitted(sorted(listed - self.withheld))
        finally:
            for thread in threads:
                thread.join()  # nothing is removed while git still writes there
        if outcome[0] is not None:
            raise outcome[0]
        root = str(self.root)
        for rel in tracked_secrets:
            # A secret the repository tracks is taken out of the checkout before the agent starts.
            with contextlib.suppress(OSError):
                os.unlink(f"{root}/{rel}")
            self.withheld.add(rel)
        for rel, data, mode in copies:
            self._files.put(rel, data, mode, durable=False)
            self._base[rel] = Base(data, mode)
        self._index = StatIndex(
            Path(tempfile.mkdtemp(prefix=".stat-", dir=self.tmp)), self.top, self.repo.prefix
        )
        if not self._baseline_from_index():
            self._stamp_all()
            self._trust_when_settled()
        self._index.write()
        if self.withheld:
            shown = ", ".join(sorted(self.withheld)[:10]) + (", …" if len(self.withheld) > 10 else "")
            self.notes.append(
                f"withheld from the agent: {shown} — the secret list (workspace.secrets) names them, so "
                "they are not in its workspace, and it can neither read nor write them there"
            )

    def _read_uncommitted(self, rels: list[str]) -> list[tuple[str, bytes | None, int | None]]:
        real = NoFollow(self.workspace)
        copies: list[tuple[str, bytes | None, int | None]] = []
        for rel in rels:
            try:
                copies.append((rel, *real.read(rel, self.max_file_bytes)))
            except ChangeError as exc:
                self.notes.append(f"{rel} was not copied into the shadow: {exc}")
        return copies

    def _baseline_from_index(self) -> bool:
        """The baseline from the index the checkout wrote, as a walk of the shadow finds it (see
        :meth:`_stamp_all`), without a Python ``lstat`` per file: entries whose stat data are old enough
        vouch for their files in the stat index; the others (written in the checkout's last second, or
        replaced since) are stamped here. False, nothing recorded, when that index cannot be read or the
        files' modes are not what the checkout's umask made them: the caller walks instead."""
        assert self._index is not None
        try:
            data = (self.admin / "index").read_bytes()
        except OSError:
            return False
        parsed, mask = read_entries(data), umask()
        if parsed is None or mask is None:
            return False
        lead = os.fsencode(self.repo.prefix + "/") if self.repo.prefix else b""
        root, skip = str(self.root), self.withheld | self._base.keys()
        known: dict[str, int] = {}
        vouched: dict[str, bytes] = {}
        watched: list[str] = []
        dirs: set[str] = {""}
        first: dict[int, str] = {}
        decided = time.time_ns()
        cut = len(lead)
        bits = {0o100644: 0o666 & ~mask, 0o100755: 0o777 & ~mask, LINK_MODE: 0o777}
        for name, start, end, ctime_s, mtime_s, mode in parsed:
            if cut and not name.startswith(lead):
                continue
            rel = os.fsdecode(name[cut:])
            folder = rel if mode == GITLINK_MODE else rel.rpartition("/")[0]
            if folder not in dirs:
                _add_parents(dirs, folder)
            permissions = bits.get(mode)
            if permissions is None and mode != GITLINK_MODE:
                return False  # a mode a checkout does not make: let a walk say what is there
            if permissions is None or rel.count("/") >= MAX_WALK_DEPTH or rel in skip:
                continue
            known[rel] = permissions
            if mode not in first:
                first[mode] = rel
            if vouches(max(ctime_s, mtime_s), decided):
                vouched[rel] = data[start:end]
            else:
                watched.append(rel)
        if len(vouched) < self.stat_index_min:
            watched.extend(vouched)
            vouched = {}
        for mode, rel in first.items():
            found = lstat_stamp(f"{root}/{rel}")
            if found is None or index_mode(found[5]) != mode or stat.S_IMODE(found[5]) != known[rel]:
                return False  # not the modes a checkout under this umask makes (an ACL, core.symlinks)
        # The files copied in, and those the checkout wrote too recently, are stamped as a walk would.
        for rel in [*watched, *(rel for rel, base in self._base.items() if base.data is not None)]:
            found = lstat_stamp(f"{root}/{rel}")
            if found is None:
                known.pop(rel, None)
                continue
            known[rel] = stat.S_IMODE(found[5])
            self._watched[rel] = found if found[1] < decided - RACY_NS else None
            _add_parents(dirs, rel.rpartition("/")[0])
        self._trust_when_settled()
        self._known = known
        self._index.entries = vouched
        for rel in sorted(dirs):
            found = lstat_stamp(f"{root}/{rel}" if rel else root)
            if found is not None and stat.S_ISDIR(found[5]):
                self._dirs[rel] = found
        return True

    def _trust_when_settled(self) -> None:
        """Stamp the watched files seen too recently to trust (``None``) again once their last write is
        ``RACY_NS`` old (at most that long a wait): the checkout's last files would otherwise have their
        content compared at the first capture, one git process each for their baselines (3 s for the 2,800
        files a 10,000-file checkout writes in its last 50 ms). Nothing but this shadow's making writes
        there before the agent starts."""
        racy = [rel for rel, seen in self._watched.items() if seen is None]
        root = str(self.root)
        newest = max(
            (found[1] for rel in racy if (found := lstat_stamp(f"{root}/{rel}")) is not None), default=0
        )
        wait = newest + RACY_NS - time.time_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        now = time.time_ns()
        for rel in racy:
            found = lstat_stamp(f"{root}/{rel}")
            if found is not None and found[1] < now - RACY_NS:
                self._watched[rel] = found

    def _stamp_all(self) -> None:
        """Record every file of the fresh shadow as the baseline by a walk, with its stamp unless racy,
        and every directory with its stamp: what :meth:`_baseline_from_index` gives, one ``lstat`` a file."""
        now = time.time_ns()
        root = str(self.root)
        files, dirs = self._walk([""], top=True)
        for rel in files:
            if self.is_secret(rel):
                with contextlib.suppress(OSError):
                    os.unlink(f"{root}/{rel}")
                self.withheld.add(rel)
                continue
            found = lstat_stamp(f"{root}/{rel}")
            if found is None:
                continue
            self._known[rel] = stat.S_IMODE(found[5])
            self._watched[rel] = found if found[1] < now - RACY_NS else None
        # Directories last: a withheld secret's removal moved its directory's stamp.
        for rel in dirs:
            self._dirs[rel] = lstat_stamp(f"{root}/{rel}" if rel else root)

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


def _add_parents(dirs: set[str], folder: str) -> None:
    """``folder`` and the folders above it, those a walk enters (at most ``MAX_WALK_DEPTH`` deep)."""
    while folder and folder not in dirs:
        if folder.count("/") < MAX_WALK_DEPTH - 1:
            dirs.add(folder)
        folder = folder.rpartition("/")[0]
