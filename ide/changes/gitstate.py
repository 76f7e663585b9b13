"""The user's repository's git state while another agent works: what moved in HEAD, refs, config and hooks.

A shadow workspace has a git directory of its own (ide.changes.shadow), so nothing an agent does to git
there reaches the user's repository. An agent that is not confined can still act on the repository
itself, as the user could. So the state that decides what a commit holds and what git will run — HEAD
and the branch it names, the other refs, the repository's own config files and its hooks — is read at
each turn's start and compared at its end. What changed during a turn is named to the user, and while
HEAD, the config or a hook still holds what the turn left there, Apply refuses to commit on top of it
(:meth:`Watch.check_apply`): an agent's commit would otherwise land under the user's review, and a
planted hook run at the user's next ``git commit``. A move made between turns is taken as the user's.

Reading runs nothing from the repository: refs through the hardened git, files read as bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ide.changes.gitutil import Repo, git
from ide.changes.overlay import ChangeError

MAX_HOOK_BYTES = 16 * 1024 * 1024
"""A hook file larger than this is fingerprinted by its size and mtime only."""


@dataclass(frozen=True)
class GitState:
    """One reading of a repository's git state: each item a name (``HEAD``, ``refs/…``, ``config:KEY``,
    ``hooks/NAME``) and a value that changes with it."""

    items: dict[str, str] = field(default_factory=dict)


BLOCKING = ("HEAD", "config:", "hooks/", "branch:", "modules/")
"""Items whose change during a turn stops Apply: the commit Apply builds on, and what git runs."""


def _common_dir(repo: Repo) -> Path | None:
    return repo.objects.parent if repo.objects is not None else repo.git_dir


def read_state(repo: Repo) -> GitState:
    """HEAD (what it names and the commit), every ref, the repository's own config entries and its hooks."""
    items: dict[str, str] = {}
    git_dir, common = repo.git_dir, _common_dir(repo)
    if git_dir is not None:
        items["HEAD"] = _read_text(git_dir / "HEAD")
    listing = git(repo.top, "for-each-ref", "--format=%(objectname) %(refname)")
    for line in listing.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition(" ")
        if name:
            items[name] = oid
    # The commit HEAD points at, from HEAD and the refs just read (a symbolic HEAD names its branch).
    named = items.get("HEAD", "")
    head = items.get(named[len("ref: ") :]) if named.startswith("ref: ") else named or repo.head()
    items["branch:HEAD"] = head or "(no commit)"
    configs = [common / "config"] if common is not None else []
    if git_dir is not None and git_dir != common:
        configs.append(git_dir / "config.worktree")
    for path in configs:
        for key, value in _config_entries(repo, path):
            name = f"config:{key}"
            items[name] = f"{items[name]}\n{value}" if name in items else value
    if common is not None:
        items.update(_hooks(common / "hooks"))
        for name in WATCHED_FILES:
            if (common / name).exists() or (common / name).is_symlink():
                items[f"file:{name}"] = _digest_file(common / name)
        items.update(_modules(common / "modules"))
    return GitState(items)


WATCHED_FILES = ("info/attributes", "info/exclude", "objects/info/alternates", "shallow")
"""Files of the git directory that change what git reads (attributes, ignores, where objects come from):
named when a turn changed them."""
MAX_MODULE_FILES = 2_000
"""Submodules' git directories are looked through for this many entries at most."""


def _modules(folder: Path) -> dict[str, str]:
    """Each submodule git directory's config and hooks (``modules/NAME/config``, ``…/hooks/*``): git runs
    them at the user's next ``git submodule update`` or commit there."""
    found: dict[str, str] = {}
    stack = [(folder, 0)]
    seen = 0
    while stack and seen < MAX_MODULE_FILES:
        here, depth = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            rel = Path(entry.path).relative_to(folder.parent).as_posix()
            if entry.name == "config" and entry.is_file(follow_symlinks=False):
                found[rel] = _digest_file(Path(entry.path))
            elif entry.name == "hooks" and entry.is_dir(follow_symlinks=False):
                found.update({f"{rel}/{k[len('hooks/') :]}": v for k, v in _hooks(Path(entry.path)).items()})
            elif entry.is_dir(follow_symlinks=False) and entry.name != "objects" and depth < 4:
                stack.append((Path(entry.path), depth + 1))
    return found


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes()[:4096].decode("utf-8", "replace").strip()
    except OSError as exc:
        return f"(unreadable: {exc.strerror})"


def _config_entries(repo: Repo, path: Path) -> list[tuple[str, str]]:
    if not path.is_file():
        return []
    try:
        out = git(repo.top, "config", "--file", str(path), "--no-includes", "--list", "-z")
    except ChangeError:
        return [("(unreadable)", _digest_file(path))]
    entries = []
    for raw in out.split(b"\0"):
        if raw:
            key, _, value = raw.decode("utf-8", "replace").partition("\n")
            entries.append((key, value))
    return entries


def _digest_file(path: Path) -> str:
    try:
        info = os.lstat(path)
    except OSError:
        return "(gone)"
    if not stat.S_ISREG(info.st_mode):
        return f"(not a file: mode {info.st_mode:o})"
    executable = "executable " if info.st_mode & 0o111 else ""
    if info.st_size > MAX_HOOK_BYTES:
        return f"{executable}{info.st_size} bytes, modified {info.st_mtime_ns}"
    try:
        with open(path, "rb", opener=_no_follow) as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()[:16]
    except OSError as exc:
        return f"(unreadable: {exc.strerror})"
    return f"{executable}sha256 {digest}"


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))


def _hooks(folder: Path) -> dict[str, str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    return {f"hooks/{name}": _digest_file(folder / name) for name in names}


@dataclass(frozen=True)
class GitChange:
    """One item that differs between two readings."""

    name: str
    before: str | None
    after: str | None

    @property
    def blocking(self) -> bool:
        return self.name.startswith(BLOCKING)

    def describe(self) -> str:
        what = _label(self.name)
        if self.before is None:
            return f"{what} added: {_short(self.after)}"
        if self.after is None:
            return f"{what} removed (was {_short(self.before)})"
        return f"{what} changed: {_short(self.before)} → {_short(self.after)}"


def _label(name: str) -> str:
    if name == "HEAD":
        return "HEAD"
    if name == "branch:HEAD":
        return "the commit HEAD points at"
    if name.startswith("config:"):
        return f"the repository's git config {name[len('config:') :]}"
    if name.startswith(("hooks/", "modules/")):
        return f"the git file .git/{name}"
    if name.startswith("file:"):
        return f"the git file .git/{name[len('file:') :]}"
    return f"the ref {name}"


def _short(value: str | None) -> str:
    text = (value or "").replace("\n", ", ")
    return text[:12] if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else text[:120]


def differences(before: GitState, after: GitState) -> list[GitChange]:
    """What differs, in name order."""
    names = sorted(before.items.keys() | after.items.keys())
    return [
        GitChange(name, before.items.get(name), after.items.get(name))
        for name in names
        if before.items.get(name) != after.items.get(name)
    ]


class Watch:
    """The git state of one foreign-agent session's repository, turn by turn (see the module docstring)."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._start = read_state(repo)
        self._suspect: dict[str, GitChange] = {}
        """Blocking items a turn changed, with the value before the turn and the one it left."""
        self.running = True
        """A turn is under way (from its start to the capture that ends it): the agent may act now."""

    def turn_started(self) -> None:
        """Read the state a new turn starts from (moves since the last turn were the user's)."""
        self._start = read_state(self.repo)
        self.running = True

    def turn_ended(self) -> list[GitChange]:
        """What changed since the turn started; the blocking ones are remembered for Apply."""
        now = read_state(self.repo)
        found = differences(self._start, now)
        self._suspect_of(found)
        self._start, self.running = now, False
        return found

    def _suspect_of(self, found: list[GitChange]) -> None:
        for change in found:
            if change.blocking:
                known = self._suspect.get(change.name)
                before = known.before if known is not None else change.before
                self._suspect[change.name] = GitChange(change.name, before, change.after)

    def applied(self) -> None:
        """Arbor itself just committed (Apply, Roll back): HEAD's commit and branch moved by its hand."""
        now = read_state(self.repo)
        for name, value in now.items.items():
            if name == "branch:HEAD" or name.startswith("refs/"):
                self._start.items[name] = value
                self._suspect.pop(name, None)

    def check_apply(self) -> None:
        """ChangeError while HEAD, a config entry or a hook still holds what an agent's turn left there —
        or, during a turn (Apply while the agent works), differs from what the turn started with."""
        if not self._suspect and not self.running:
            return
        state = read_state(self.repo)
        if self.running:
            self._suspect_of(differences(self._start, state))
        now = state.items
        for name, change in list(self._suspect.items()):
            if now.get(name) == change.before:
                del self._suspect[name]  # put back as it was before the turn
        if not self._suspect:
            return
        listed = "; ".join(change.describe() for change in self._suspect.values())
        raise ChangeError(
            f"the repository's git state changed while the agent worked, and Arbor will not commit on top "
            f"of it: {listed}. Nothing was written. If you did not make these changes, put them back (git "
            "reflog and git update-ref for a moved branch, git config --local --unset for a key, remove the "
            "hook), then Apply again; if you made them during the turn, put them back and make them again "
            "after the Apply."
        )
