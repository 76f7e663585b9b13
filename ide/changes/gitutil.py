"""Small git plumbing helpers, blob stores for checkpoints, three-way merges and atomic file writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import struct
import tempfile
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ide.changes.nofollow import SYNC_TOGETHER, TEMP_MARK, sync_all, write_all, write_fd
from ide.changes.overlay import ChangeError, git_mode
from ide.gitsafe import run_git


def git(cwd: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    """Run git in ``cwd`` (through ide.gitsafe: nothing in the repository runs) and return its stdout; a
    ChangeError carrying git's message on failure."""
    proc = run_git(cwd, *args, input=input, env_extra=env)
    if proc.returncode != 0:
        raise ChangeError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


@dataclass(frozen=True)
class Repo:
    """The git repository a workspace lives in; ``prefix`` is the workspace's path inside it, ``git_dir``
    the repository's own directory (where a ``.git`` file may point), ``objects`` its object directory
    (a linked worktree's is its main repository's)."""

    top: Path
    prefix: str
    git_dir: Path | None = None
    objects: Path | None = None

    def path(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def head(self) -> str | None:
        proc = run_git(self.top, "rev-parse", "--verify", "-q", "HEAD")
        return proc.stdout.decode().strip() or None


def find_repo(root: Path) -> Repo | None:
    """The repository containing ``root``, or None outside git."""
    asked = ("--show-toplevel", "--absolute-git-dir", "--path-format=absolute", "--git-path", "objects")
    proc = run_git(root, "rev-parse", *asked)
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode(errors="surrogateescape").splitlines()
    top = Path(os.path.realpath(lines[0].strip()))
    prefix = Path(os.path.realpath(root)).relative_to(top).as_posix()
    git_dir = Path(os.path.realpath(lines[1].strip())) if len(lines) > 1 else None
    objects = Path(lines[2].strip()) if len(lines) > 2 else None
    return Repo(top, "" if prefix == "." else prefix, git_dir, objects)


def same_repository(expected: Repo | None, root: Path) -> Repo | None:
    """The repository of ``root`` if it is still ``expected`` (the one found when the session began);
    a ChangeError when git would now work in another one (a ``.git`` file or folder appeared or changed)."""
    found = find_repo(root)
    before = expected.git_dir if expected is not None else None
    now = found.git_dir if found is not None else None
    if before != now:
        was = before or "none (not a git repository)"
        raise ChangeError(
            f"the git repository of {root} changed since this session began: it was {was}, git now finds "
            f"{now or 'none'}. Arbor writes and commits only into the repository it found at the start — "
            "check for a .git file or folder you did not make, then start a new session."
        )
    return found


def blob_id(data: bytes) -> str:
    """Git's object id of a blob with ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Blobs:
    """Content-addressed storage of checkpoint bytes: git's object store, or files under a directory."""

    def __init__(self, repo: Repo | None, directory: Path) -> None:
        self.repo = repo
        self.directory = directory
        self._objects: Path | None = None
        if repo is not None:
            self._objects = (
                repo.objects
                or repo.top / git(repo.top, "rev-parse", "--git-path", "objects").decode().strip()
            )

    def put(self, data: bytes, *, durable: bool = True) -> str:
        """Store ``data`` (fsynced when ``durable``); returns its git blob id."""
        # In git the same format as `git hash-object -w`, without a process per blob.
        oid = blob_id(data)
        target = self._target(oid)
        if not target.exists():
            _atomic_bytes(target, self._payload(data), 0o444, durable=durable)
        return oid

    def put_synced(self, datas: Iterable[bytes]) -> list[str]:
        """:meth:`put` of each of ``datas``, each synced before it is in place (what a checkpoint needs
        before the first file is written), the syncs of many together; returns their ids. A blob git
        holds already, loose or in a pack (most pre-images are HEAD's files), is not written again."""
        ids, new = [], {}
        for data in datas:
            oid = blob_id(data)
            ids.append(oid)
            if oid not in new and not self._target(oid).exists():
                new[oid] = data
        if new and self.repo is not None:
            for oid in stored_blobs(self.repo, list(new)):
                del new[oid]
        _atomic_many([(self._target(oid), self._payload(data)) for oid, data in new.items()], 0o444)
        return ids

    def _target(self, oid: str) -> Path:
        """The file holding the blob ``oid`` (loose, in git)."""
        return self._loose(oid) if self.repo is not None else self.directory / oid[:2] / oid[2:]

    def _payload(self, data: bytes) -> bytes:
        """The bytes of the file holding the blob of ``data`` (in git, a loose object's format)."""
        return zlib.compress(b"blob %d\0" % len(data) + data, 1) if self.repo is not None else data

    def put_many(self, datas: Iterable[bytes]) -> list[str]:
        """:meth:`put` of each of ``datas``, not synced; returns their ids. In git, when ``PACK_FROM`` or
        more are not stored yet they go into one pack (one ``git index-pack``, which syncs it) instead of
        a loose file each; should git refuse the pack, they are written loose after all."""
        datas = list(datas)
        ids = [blob_id(data) for data in datas]
        if self.repo is None:
            for data in datas:
                self.put(data, durable=False)
            return ids
        new = {oid: data for oid, data in zip(ids, datas, strict=True) if not self._loose(oid).exists()}
        if len(new) >= PACK_FROM:
            try:
                git(self.repo.top, "index-pack", "--stdin", input=_pack(new.values()))
                return ids
            except ChangeError:
                pass
        for data in new.values():
            self.put(data, durable=False)
        return ids

    def _loose(self, oid: str) -> Path:
        return self._objects / oid[:2] / oid[2:]  # type: ignore[operator]

    def put_files(self, paths: list[Path]) -> None:
        """Store the current content of files (the ids are known already)."""
        if self.repo is not None:
            listing = b"".join(os.fsencode(p) + b"\n" for p in paths)
            git(self.repo.top, "hash-object", "-w", "--no-filters", "--stdin-paths", input=listing)
        else:
            for path in paths:
                self.put(path.read_bytes(), durable=False)

    def get(self, oid: str) -> bytes:
        if self.repo is not None:
            return git(self.repo.top, "cat-file", "blob", oid)
        try:
            return (self.directory / oid[:2] / oid[2:]).read_bytes()
        except FileNotFoundError as err:
            raise ChangeError(f"checkpoint blob {oid} is missing from {self.directory}") from err

    def get_many(self, oids: Iterable[str | None]) -> dict[str, bytes]:
        """The bytes of each stored blob of ``oids`` (None skipped), by id; a blob not stored is left out.
        One ``git cat-file --batch`` for all of them, not a process per blob."""
        wanted = list(dict.fromkeys(oid for oid in oids if oid))
        if self.repo is not None:
            found = cat_blobs(self.repo, wanted)
            return {oid: data for oid, data in zip(wanted, found, strict=True) if data is not None}
        stored = {}
        for oid in wanted:
            with contextlib.suppress(FileNotFoundError):
                stored[oid] = (self.directory / oid[:2] / oid[2:]).read_bytes()
        return stored

    def missing(self, oid: str) -> ChangeError:
        """The error for a checkpoint blob that is not stored (any more)."""
        where = "git's object store" if self.repo is not None else str(self.directory)
        return ChangeError(f"checkpoint blob {oid} is missing from {where}")

    def has(self, oid: str) -> bool:
        if self.repo is not None:
            return run_git(self.repo.top, "cat-file", "-e", oid).returncode == 0
        return (self.directory / oid[:2] / oid[2:]).exists()


def merge3(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> tuple[bytes, bool]:
    """``git merge-file -p``: (merged bytes, clean?)."""
    with tempfile.TemporaryDirectory(prefix="arbor-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        args = ["merge-file", "-p"]
        for label in labels:
            args += ["-L", label]
        # A temp directory, no repository: the fixed settings only, no repository config looked up first.
        proc = run_git(tmp, *args, *paths, overrides=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise ChangeError(f"git merge-file failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout, proc.returncode == 0


def _atomic_many(items: list[tuple[Path, bytes]], mode: int) -> None:
    """:func:`_atomic_bytes` of each ``(path, data)``, durable, with the syncs of ``SYNC_TOGETHER`` files
    at a time running together (as :meth:`~ide.changes.nofollow.NoFollow.put_many` does)."""
    for start in range(0, len(items), SYNC_TOGETHER):
        staged: list[tuple[int, str, Path]] = []
        try:
            for path, data in items[start : start + SYNC_TOGETHER]:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", dir=path.parent)
                staged.append((fd, tmp, path))
                write_all(fd, data)
            sync_all([fd for fd, _tmp, _path in staged])
            for index, (fd, tmp, path) in enumerate(staged):
                os.close(fd)
                staged[index] = (-1, tmp, path)
                os.chmod(tmp, mode)
                os.replace(tmp, path)
                staged[index] = (-1, "", path)
        finally:
            for fd, tmp, _path in staged:
                if fd >= 0:
                    os.close(fd)
                if tmp:
                    Path(tmp).unlink(missing_ok=True)


def _atomic_bytes(path: Path, data: bytes, mode: int, *, durable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", dir=path.parent)
    try:
        write_fd(fd, data, durable=durable)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


IndexEntry = tuple[str, bytes | None, int | None]
"""(workspace-relative path, bytes or None for a deletion, permission bits) of one committed file."""


def _index_info(repo: Repo, blobs: Blobs | None, entries: list[IndexEntry]) -> bytes:
    """``update-index --index-info`` lines for ``entries``, their blobs stored first unless ``blobs`` is
    None (``update-index`` does not look the objects up). Arbor hashes the bytes itself, so no clean filter
    of the repository runs and the commit holds exactly these bytes."""
    datas = [data for _rel, data, _mode in entries if data is not None]
    ids = iter(blobs.put_many(datas) if blobs is not None else [blob_id(data) for data in datas])
    lines = []
    for rel, data, mode in entries:
        path = repo.path(rel).encode("utf-8", "surrogateescape")
        if data is None:
            lines.append(b"0 " + b"0" * 40 + b"\t" + path + b"\0")
        else:
            lines.append(git_mode(mode).encode() + b" " + next(ids).encode() + b"\t" + path + b"\0")
    return b"".join(lines)


PACK_FROM = 16
"""From how many new blobs on :meth:`Blobs.put_many` writes one pack rather than a loose file each."""


def _pack(datas: Iterable[bytes]) -> bytes:
    """A git pack (version 2, no deltas) of blobs holding ``datas``."""
    body = []
    count = 0
    for data in datas:
        size = len(data)
        header = bytearray()
        byte = (3 << 4) | (size & 0x0F)  # type 3: blob
        size >>= 4
        while size:
            header.append(byte | 0x80)
            byte = size & 0x7F
            size >>= 7
        header.append(byte)
        body += [bytes(header), zlib.compress(data, 1)]
        count += 1
    pack = b"PACK" + struct.pack(">II", 2, count) + b"".join(body)
    return pack + hashlib.sha1(pack).digest()


def _update_index(repo: Repo, info: bytes, env: dict[str, str] | None = None) -> None:
    """``update-index --index-info``, which skips a path it will not track (``.GIT/x``) with only a
    message on stderr and success: that message is an error here."""
    proc = run_git(repo.top, "update-index", "-z", "--index-info", input=info, env_extra=env)
    errors = proc.stderr.decode(errors="replace").strip()
    if proc.returncode != 0 or "Ignoring path" in errors:
        raise ChangeError(f"git update-index failed: {errors or f'exit status {proc.returncode}'}")


def check_trackable(repo: Repo, entries: list[IndexEntry]) -> None:
    """Refuse, before anything is written, paths git will not put in an index (``.GIT/x``, ``a/../b``…)."""
    git_dir = repo.git_dir or Path(git(repo.top, "rev-parse", "--absolute-git-dir").decode().strip())
    index = git_dir / f"arbor-check-{os.getpid()}"
    try:
        # Only the paths are checked: the blobs are stored when they are committed or staged.
        _update_index(repo, _index_info(repo, None, entries), {"GIT_INDEX_FILE": str(index)})
    except ChangeError as exc:
        raise ChangeError(
            f"git will not track every file of this batch, so nothing was written ({exc})"
        ) from None
    finally:
        index.unlink(missing_ok=True)


def commit_paths(repo: Repo, blobs: Blobs, entries: list[IndexEntry], message: str, head: str | None) -> str:
    """Commit exactly ``entries`` on top of ``head`` (the HEAD the change was planned against), leaving
    the user's other changes alone.

    A temporary index built from that commit holds only these entries; the real index then gets the same
    entries so ``git status`` shows them clean. Nothing git reads from the working tree is involved. HEAD
    moves only if it is still ``head`` (``update-ref NEW OLD``): a commit that landed meanwhile is never
    overwritten — a ChangeError says so instead.
    """
    info = _index_info(repo, blobs, entries)
    # HEAD moving meanwhile is caught where it matters, by update-ref's old value below.
    git_dir = repo.git_dir or Path(git(repo.top, "rev-parse", "--absolute-git-dir").decode().strip())
    index = git_dir / f"arbor-index-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if head:
            git(repo.top, "read-tree", head, env=env)
        else:
            git(repo.top, "read-tree", "--empty", env=env)
        _update_index(repo, info, env)
        tree = git(repo.top, "write-tree", env=env).decode().strip()
        parents = ["-p", head] if head else []
        commit = git(repo.top, "commit-tree", tree, *parents, input=message.encode()).decode().strip()
    finally:
        index.unlink(missing_ok=True)
    subject = "arbor: " + message.splitlines()[0]
    try:
        git(repo.top, "update-ref", "-m", subject, "HEAD", commit, head or "0" * 40)
    except ChangeError:
        if repo.head() != head:
            raise ChangeError(_moved(head, repo.head())) from None
        raise
    try:
        _update_index(repo, info)
    except ChangeError:
        # The real index is locked or refuses: take the commit back, so files and history stay together.
        if head:
            git(repo.top, "update-ref", "-m", "arbor: undo " + subject[7:], "HEAD", head, commit)
        else:
            git(repo.top, "update-ref", "-d", "HEAD", commit)
        raise
    return commit


def _moved(planned: str | None, now: str | None) -> str:
    return (
        f"HEAD moved from {(planned or 'no commit')[:12]} to {(now or 'no commit')[:12]} while Apply was "
        "running (another commit landed); Arbor commits only on top of the HEAD it planned against, so "
        "nothing was committed over it — Apply again to merge onto the new HEAD"
    )


def tree_blob(repo: Repo, rev: str | None, rel: str) -> bytes | None:
    """The bytes of ``rel`` in commit ``rev``; None when it is not there (or there is no commit)."""
    return tree_blobs(repo, rev, [rel])[0]


def tree_blobs(repo: Repo, rev: str | None, rels: Sequence[str]) -> list[bytes | None]:
    """:func:`tree_blob` of each of ``rels``, all read by one git process."""
    if not rev:
        return [None for _ in rels]
    return cat_blobs(repo, [f"{rev}:{repo.path(rel)}" for rel in rels])


def cat_blobs(repo: Repo, specs: Sequence[str]) -> list[bytes | None]:
    """The bytes of the blob each of ``specs`` names (an object id or ``REV:PATH``), None where git finds
    no blob there: one ``git cat-file --batch -z`` (hardened like every git here) for all of them.

    Names go in NUL-terminated, so a path holding a newline or a carriage return is read as it is. When
    the batch fails as a whole (an object git cannot read makes it stop) each name is asked on its own,
    as :func:`cat_blob` does, so a broken object costs only its own file."""
    if not specs:
        return []
    names = [spec.encode("utf-8", "surrogateescape") for spec in specs]
    if all(b"\0" not in name for name in names):
        batch = b"".join(name + b"\0" for name in names)
        proc = run_git(repo.top, "cat-file", "--batch", "--buffer", "-z", input=batch)
        if proc.returncode == 0:
            parsed = _batch_blobs(proc.stdout, names)
            if parsed is not None:
                return parsed
    return [cat_blob(repo, spec) for spec in specs]


def stored_blobs(repo: Repo, oids: Sequence[str]) -> set[str]:
    """Those of ``oids`` git's object store holds as blobs (packed or loose): one ``git cat-file
    --batch-check``; none when git fails, so a caller stores them all itself."""
    listing = "".join(oid + "\n" for oid in oids).encode()
    proc = run_git(repo.top, "cat-file", "--batch-check", "--buffer", input=listing)
    if proc.returncode != 0:
        return set()
    wanted = set(oids)
    found = set()
    for line in proc.stdout.decode(errors="replace").splitlines():
        oid, _, kind = line.partition(" ")
        if oid in wanted and kind.startswith("blob "):
            found.add(oid)
    return found


def cat_blob(repo: Repo, spec: str) -> bytes | None:
    """The bytes of the blob ``spec`` names, None when there is none: a git process of its own (what
    :func:`cat_blobs` falls back to)."""
    try:
        proc = run_git(repo.top, "cat-file", "blob", spec)
    except ValueError:  # a NUL in the name: git could not be given it
        return None
    return proc.stdout if proc.returncode == 0 else None


_BATCH_HEADER = re.compile(rb"([0-9a-f]{40}|[0-9a-f]{64}) ([a-z]+) ([0-9]+)\n")


def _batch_blobs(out: bytes, names: list[bytes]) -> list[bytes | None] | None:
    """``cat-file --batch`` output split per name (None where it names no blob); None when the output
    is not one answer per name, in order."""
    found: list[bytes | None] = []
    pos = 0
    for name in names:
        # Git echoes a name it cannot resolve; a name is never the start of an object's header line
        # (that begins with an object id and a space, a REV:PATH name has ':' or '^' there).
        if out.startswith(name + b" missing\n", pos) or out.startswith(name + b" ambiguous\n", pos):
            found.append(None)
            pos = out.index(b"\n", pos + len(name)) + 1
            continue
        header = _BATCH_HEADER.match(out, pos)
        if header is None:
            return None
        start = header.end()
        end = start + int(header.group(3))
        if out[end : end + 1] != b"\n":
            return None
        found.append(out[start:end] if header.group(2) == b"blob" else None)
        pos = end + 1
    return found if pos == len(out) else None


def ensure_identity(repo: Repo) -> None:
    """Refuse before writing anything when git cannot name the author of a commit."""
    for variable in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        try:
            git(repo.top, "var", variable)
        except ChangeError:
            raise ChangeError(
                "git does not know who you are, so Arbor cannot commit the reviewed changes; nothing was "
                'written. Run git config --global user.name "Your Name" and git config --global '
                'user.email you@example.com, or set review.commit = "stage" (ARBOR_REVIEW_COMMIT=stage).'
            ) from None


def stage_paths(repo: Repo, blobs: Blobs, entries: list[IndexEntry]) -> None:
    """Put exactly ``entries`` into the real index."""
    _update_index(repo, _index_info(repo, blobs, entries))


def read_disk(path: Path) -> tuple[bytes | None, int | None]:
    """(bytes, permission bits) of a file, or (None, None) when it does not exist."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return None, None
        return path.read_bytes(), stat.S_IMODE(st.st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
