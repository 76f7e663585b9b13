"""Small git plumbing helpers, blob stores for checkpoints, three-way merges and atomic file writes."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ide.changes.overlay import ChangeError

GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def git(cwd: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    """Run git in ``cwd`` and return its stdout; a ChangeError carrying git's message on failure."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **GIT_ENV, **(env or {})},
        check=False,
    )
    if proc.returncode != 0:
        raise ChangeError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


@dataclass(frozen=True)
class Repo:
    """The git repository a workspace lives in; ``prefix`` is the workspace's path inside it."""

    top: Path
    prefix: str

    def path(self, rel: str) -> str:
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def head(self) -> str | None:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=self.top, capture_output=True, check=False
        )
        return proc.stdout.decode().strip() or None


def find_repo(root: Path) -> Repo | None:
    """The repository containing ``root``, or None outside git."""
    proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, check=False)
    if proc.returncode != 0:
        return None
    top = Path(os.path.realpath(proc.stdout.decode().strip()))
    prefix = Path(os.path.realpath(root)).relative_to(top).as_posix()
    return Repo(top, "" if prefix == "." else prefix)


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
            self._objects = repo.top / git(repo.top, "rev-parse", "--git-path", "objects").decode().strip()

    def put(self, data: bytes, *, durable: bool = True) -> str:
        """Store ``data`` (fsynced when ``durable``); returns its git blob id."""
        oid = blob_id(data)
        if self.repo is not None:
            # Same format as `git hash-object -w`, without a process per blob.
            target = self._objects / oid[:2] / oid[2:]  # type: ignore[operator]
            payload = zlib.compress(b"blob %d\0" % len(data) + data, 1)
        else:
            target = self.directory / oid[:2] / oid[2:]
            payload = data
        if not target.exists():
            _atomic_bytes(target, payload, 0o444, durable=durable)
        return oid

    def put_files(self, paths: list[Path]) -> None:
        """Store the current content of files (the ids are known already)."""
        if self.repo is not None:
            listing = b"".join(os.fsencode(p) + b"\n" for p in paths)
            git(self.repo.top, "hash-object", "-w", "--stdin-paths", input=listing)
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

    def has(self, oid: str) -> bool:
        if self.repo is not None:
            return (
                subprocess.run(
                    ["git", "cat-file", "-e", oid], cwd=self.repo.top, capture_output=True, check=False
                ).returncode
                == 0
            )
        return (self.directory / oid[:2] / oid[2:]).exists()


def merge3(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> tuple[bytes, bool]:
    """``git merge-file -p``: (merged bytes, clean?)."""
    with tempfile.TemporaryDirectory(prefix="arbor-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        args = ["git", "merge-file", "-p"]
        for label in labels:
            args += ["-L", label]
        proc = subprocess.run([*args, *paths], capture_output=True, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise ChangeError(f"git merge-file failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout, proc.returncode == 0


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Write ``path`` whole or not at all: temp file in the same directory, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_bytes(path, data, mode)


def _atomic_bytes(path: Path, data: bytes, mode: int, *, durable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.arbor-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_file(path: Path, root: Path) -> None:
    """Delete ``path`` and the directories under ``root`` it leaves empty (as git does)."""
    path.unlink(missing_ok=True)
    parent = path.parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def commit_paths(repo: Repo, rels: list[str], message: str) -> str:
    """Commit exactly the disk state of ``rels`` on top of HEAD, leaving the user's other changes alone.

    A temporary index built from HEAD holds only these paths' changes; the real index then gets the same
    entries so ``git status`` shows them clean.
    """
    paths = [repo.path(rel) for rel in rels]
    head = repo.head()
    git_dir = Path(git(repo.top, "rev-parse", "--absolute-git-dir").decode().strip())
    index = git_dir / f"arbor-index-{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        if head:
            git(repo.top, "read-tree", head, env=env)
        else:
            git(repo.top, "read-tree", "--empty", env=env)
        git(repo.top, "update-index", "--add", "--remove", "-z", "--stdin", input=_z(paths), env=env)
        tree = git(repo.top, "write-tree", env=env).decode().strip()
        parents = ["-p", head] if head else []
        commit = git(repo.top, "commit-tree", tree, *parents, input=message.encode()).decode().strip()
        git(
            repo.top,
            "update-ref",
            "-m",
            "arbor: " + message.splitlines()[0],
            "HEAD",
            commit,
            head or "0" * 40,
        )
    finally:
        index.unlink(missing_ok=True)
    git(repo.top, "update-index", "--add", "--remove", "-z", "--stdin", input=_z(paths))
    return commit


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


def stage_paths(repo: Repo, rels: list[str]) -> None:
    git(
        repo.top, "update-index", "--add", "--remove", "-z", "--stdin", input=_z([repo.path(r) for r in rels])
    )


def _z(paths: list[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def read_disk(path: Path) -> tuple[bytes | None, int | None]:
    """(bytes, permission bits) of a file, or (None, None) when it does not exist."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return None, None
        return path.read_bytes(), stat.S_IMODE(st.st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
