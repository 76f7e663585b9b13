"""A git index of our own holding the stat data of a shadow's baseline files, so that a capture asks
``git diff-files`` — ``lstat`` in C, on git's preload threads — which of them moved, instead of one
Python ``lstat`` per file (100,000 of them took ~0.2 s in Python; git takes a third of that).

The index lives in the shadow's private directory, beside its checkout and never inside it (a confined
agent cannot see it; its stamp is checked before each use, so one written by anything else is refused
with a ChangeError, never trusted). It is read by a git directory of its own (no objects, no hooks, our
own config) with every setting that weakens git's stat comparison forced on the command line, and its
own mtime lies far in the future, so git never takes an entry for "racily clean" and never compares
content (which would go through the attributes an agent can write): ``diff-files`` names exactly the
entries whose stat data differ, and the files gone.

Git (without ``USE_NSEC``, as Debian builds it) compares whole seconds of mtime and ctime, so an entry
may vouch for a file only when the file's ctime lies in a second that ended before anyone else could
write it: every later write moves the ctime to a later second (nothing can set a ctime back). Files
younger than that stay with the caller's own stamps until they are old enough (:func:`vouches`).

The entries come from the index ``git checkout`` wrote (sliced, unchanged) or are packed from an
``lstat`` (``pack_entry``, with a null object id: no content is ever looked at).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

from ide.changes.overlay import ChangeError
from ide.gitsafe import run_git

HEADER = struct.Struct(">4sII")
ENTRY = struct.Struct(">10I20sH")
"""ctime s, ctime ns, mtime s, mtime ns, dev, ino, mode, uid, gid, size, object id, flags."""
NAME_MASK = 0x0FFF
ODD_FLAGS = 0xF000
"""assume-valid, extended flags (skip-worktree, intent-to-add) and a merge stage: none in an entry we use."""
LINK_MODE = 0o120000
GITLINK_MODE = 0o160000
FAR_FUTURE_S = 4_000_000_000
"""The index file's mtime (2096, within git's 32-bit seconds): no entry is ever newer, so none is racy."""
RACY_NS = 50_000_000
"""A margin for the kernel's coarse clock: a write's ctime may lag the time read just before it."""
FORCED = (
    "core.checkStat=default",
    "core.trustctime=true",
    "core.filemode=true",
    "core.symlinks=true",
    "core.ignoreStat=false",
    "core.preloadIndex=true",
    "core.sparseCheckout=false",
    "core.splitIndex=false",
)
"""What git compares, whatever the user's global config says."""
CHECKOUT_CONFIG = (
    "index.version=2",
    "core.splitIndex=false",
    "core.ignoreStat=false",
    "core.sparseCheckout=false",
)
"""For the checkout whose index is read here: a plain version-2 index without assume-valid bits."""

Parsed = tuple[bytes, int, int, int, int, int]
"""(name, start, end, ctime seconds, mtime seconds, mode) of one entry in an index's bytes."""


def read_entries(data: bytes) -> list[Parsed] | None:
    """The entries of a version-2 index, or None for anything else (another version, a split index, an
    entry with flags or a merge stage): the caller then learns the files another way."""
    if len(data) < HEADER.size + 20:
        return None
    signature, version, count = HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version != 2:
        return None
    entries: list[Parsed] = []
    unpack = ENTRY.unpack_from
    offset = HEADER.size
    end_of_entries = len(data) - 20
    try:
        for _ in range(count):
            ctime_s, _cn, mtime_s, _mn, _dev, _ino, mode, _uid, _gid, _size, _oid, flags = unpack(
                data, offset
            )
            if flags & ODD_FLAGS:
                return None
            length = flags & NAME_MASK
            if length == NAME_MASK:
                length = data.index(b"\0", offset + 62) - offset - 62
            end = offset + ((62 + length + 8) & ~7)
            if end > end_of_entries:
                return None
            entries.append((data[offset + 62 : offset + 62 + length], offset, end, ctime_s, mtime_s, mode))
            offset = end
    except (struct.error, ValueError):
        return None
    return entries


def vouches(ctime_s: int, decided_ns: int) -> bool:
    """Whether an entry whose ctime lies in second ``ctime_s`` can vouch for its file from the moment
    ``decided_ns`` on: any later write lands in a later second, which git sees."""
    return ctime_s < (decided_ns - RACY_NS) // 1_000_000_000


def index_mode(st_mode: int) -> int | None:
    """Git's mode for a file of ``st_mode`` (None: no file git keeps in an index)."""
    if stat.S_ISLNK(st_mode):
        return LINK_MODE
    if stat.S_ISREG(st_mode):
        return 0o100755 if st_mode & 0o100 else 0o100644
    return None


def pack_entry(
    name: bytes, size: int, mtime_ns: int, ctime_ns: int, ino: int, dev: int, st_mode: int, uid: int, gid: int
) -> bytes | None:
    """An index entry for ``name`` holding these stat data (an ``lstat``'s), with a null object id; None
    for what git keeps in no index (a directory, a FIFO)."""
    mode = index_mode(st_mode)
    if mode is None:
        return None
    fields = (
        ctime_ns // 1_000_000_000 & 0xFFFFFFFF,
        ctime_ns % 1_000_000_000,
        mtime_ns // 1_000_000_000 & 0xFFFFFFFF,
        mtime_ns % 1_000_000_000,
        dev & 0xFFFFFFFF,
        ino & 0xFFFFFFFF,
        mode,
        uid & 0xFFFFFFFF,
        gid & 0xFFFFFFFF,
        size & 0xFFFFFFFF,
    )
    head = ENTRY.pack(*fields, b"\0" * 20, min(len(name), NAME_MASK))
    return head + name + b"\0" * (8 - (62 + len(name)) % 8)


class StatIndex:
    """The vouching entries (workspace-relative path → entry bytes) and the index file that holds them."""

    def __init__(self, state: Path, work_tree: Path, prefix: str) -> None:
        self.state = state
        self.work_tree = work_tree
        self.prefix = prefix
        self.git_dir = state / "stat.git"
        self.path = state / "stat.index"
        self.entries: dict[str, bytes] = {}
        """Workspace-relative path → its entry; kept in the index's order (by name)."""
        self._written: tuple[int, int, int, int] | None = None
        (self.git_dir / "objects").mkdir(parents=True)
        (self.git_dir / "refs").mkdir()
        (self.git_dir / "HEAD").write_text("ref: refs/heads/none\n", encoding="utf-8")
        (self.git_dir / "config").write_text(
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n", encoding="utf-8"
        )

    def name(self, rel: str) -> bytes:
        return os.fsencode(f"{self.prefix}/{rel}" if self.prefix else rel)

    def write(self, *, sort: bool = False) -> None:
        """Write :attr:`entries` as the index (by name when ``sort``: entries were added out of order)."""
        if sort:
            keyed = sorted((self.name(rel), rel) for rel in self.entries)
            self.entries = {rel: self.entries[rel] for _name, rel in keyed}
        body = HEADER.pack(b"DIRC", 2, len(self.entries)) + b"".join(self.entries.values())
        temp = self.path.with_name(self.path.name + ".new")
        with open(temp, "wb") as handle:
            handle.write(body)
            handle.write(hashlib.sha1(body).digest())
        os.utime(temp, (FAR_FUTURE_S, FAR_FUTURE_S))
        os.replace(temp, self.path)
        self._written = _file_stamp(self.path)

    def moved(self) -> Iterator[str]:
        """The workspace-relative paths of entries whose file's stat data moved (or that are gone)."""
        if not self.entries:
            return
        if self._written is None or _file_stamp(self.path) != self._written:
            raise ChangeError(
                f"the shadow's stat index {self.path} was changed by something other than Arbor; its "
                "captures cannot be trusted — close the shadow and start the agent again"
            )
        flags = [part for item in FORCED for part in ("-c", item)]
        done = run_git(
            self.git_dir,  # so gitsafe blanks whatever program its config might name
            *flags,
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.work_tree}",
            "diff-files",
            "--name-only",
            "-z",
            env_extra={"GIT_INDEX_FILE": str(self.path)},
        )
        if done.returncode != 0:
            raise ChangeError(f"git diff-files failed in the shadow: {done.stderr.decode(errors='replace')}")
        cut = len(self.prefix) + 1 if self.prefix else 0
        for raw in done.stdout.split(b"\0"):
            if raw:
                yield os.fsdecode(raw)[cut:]


def _file_stamp(path: Path) -> tuple[int, int, int, int]:
    info = os.lstat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
