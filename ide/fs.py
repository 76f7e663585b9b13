"""The confined file system: paths kept inside the workspace root, secrets hidden, .gitignore honoured.

Below the agent's tools and the code index (both read through it); it knows nothing of either.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Protocol

from pathspec import GitIgnoreSpec
from pathspec.util import normalize_file

from ide.changes.overlay import FileTooLarge
from ide.fswalk import folder_entries
from ide.protocol.hidden import is_git_name, name_refusal
from ide.settings import WorkspaceSettings

ALWAYS_EXCLUDED = (".git/",)
MAX_PATH_CHARS = 1024
"""Longest path a tool takes: Linux allows 4,096, but nothing a project needs comes near 1,024."""
MAX_DEPTH = 64
"""Deepest path a tool takes, and the deepest directory a walk enters (deeper ones are skipped and
counted): real projects stay far below it, and every check along a path stays cheap."""
_ANY_FOLDER = "^(?:.+/)?"
"""How pathspec's regex of a gitignore pattern without a slash starts: the name in any folder."""
_NOT_NORMAL = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")
"""An empty, ``.`` or ``..`` part of a POSIX path (a leading, doubled or trailing ``/``: an empty part)."""


def check_path_text(path: str) -> None:
    """Refuse, before any file system work, a path a tool must not take: too long or deep, control
    characters (they fake lines in listings and diffs), bidi controls or invisible characters (a name
    that reads as another), or a ``.git`` component (git's metadata)."""
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"the path is {len(path)} characters long; paths are limited to {MAX_PATH_CHARS}")
    parts = [part for part in re.split(r"[/\\]", path) if part and part != "."]
    if any(is_git_name(part) for part in parts):
        raise ToolError(
            f"'{path}' is inside git's metadata (.git); the agent neither reads nor writes it — git "
            "configuration there could make git run programs"
        )
    refusal = name_refusal(path)
    if refusal is not None:
        raise ToolError(refusal)
    if len(parts) > MAX_DEPTH:
        raise ToolError(f"the path is {len(parts)} directories deep; paths are limited to {MAX_DEPTH}")


def secret_patterns(patterns: list[str]) -> list[str]:
    """``workspace.secrets`` without its ``!`` patterns: secrets only add up. A repository may add
    patterns to the user's list, and a negation appended there (``!.env``) would otherwise take a
    secret off it."""
    return [pattern for pattern in patterns if not pattern.startswith("!")]


class Overlay(Protocol):
    """The reads of a change set (ide.changes.ChangeSet): the workspace as the agent's edits left it."""

    def exists(self, rel: str) -> bool: ...
    def is_dir(self, rel: str) -> bool: ...
    def read_bytes(self, rel: str) -> bytes: ...
    def read_text(self, rel: str) -> str: ...
    def listdir(self, rel: str) -> list[tuple[str, bool]]: ...
    def changed_paths(self) -> list[str]: ...


class ToolError(Exception):
    """A path or file the agent got wrong; the message is shown to the model so it can correct itself."""


class ConfinedFS:
    """A directory the agent may read, with gitignore-aware listing and confinement of every path.

    With an ``overlay`` (the session's change set) every read sees the agent's proposed edits.
    """

    def __init__(
        self,
        root: Path,
        settings: WorkspaceSettings | None = None,
        overlay: Overlay | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.settings = settings or WorkspaceSettings()
        self.overlay = overlay
        secrets = tuple(secret_patterns(self.settings.secrets))
        self._excludes, self._maybe_excluded = _excludes((*ALWAYS_EXCLUDED, *self.settings.exclude, *secrets))
        self._secrets, self._maybe_secret = _excludes(secrets)
        self._secret_dirs: dict[tuple[str, ...], bool] = {}
        self._secret_folders: dict[str, bool] = {}
        self.skipped = 0
        """Directories the walks skipped (deeper than MAX_DEPTH, or a loop) since the last reset."""

    def resolve(self, path: str) -> Path:
        """Absolute real path of ``path`` (relative to the root, or absolute inside it).

        Raises ToolError for anything that lands outside the workspace, through ``..`` or a symlink.
        """
        if not isinstance(path, str) or "\x00" in path:
            raise ToolError("path must be a string without NUL bytes")
        check_path_text(path)
        candidate = Path(path.strip() or ".")
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            raise ToolError(f"'{path}' is outside the workspace {self.root}; use a path relative to it")
        # Checked on the path as given and as resolved: a symlink must not reach a secret either.
        given = Path(os.path.normpath(candidate))
        places = [real] + ([given] if given == self.root or self.root in given.parents else [])
        if any(self.is_secret(place) for place in places):
            raise ToolError(
                f"'{path}' is a secret file (workspace.secrets); Arbor neither reads nor writes it"
            )
        return real

    def _safe(self, path: Path) -> bool:
        """False for a symlink that leads outside the workspace or to a secret."""
        return not path.is_symlink() or self._link_safe(path)

    def _link_safe(self, link: Path) -> bool:
        """Whether the symlink ``link`` leads to something that exists (not a loop, not dangling), inside
        the workspace, that is not a secret."""
        target = Path(os.path.realpath(link))
        return os.path.exists(target) and self.contains(target) and not self.is_secret(target)

    def check_new_name(self, path: Path) -> None:
        """Refuse creating ``path`` when one of its new components looks exactly like an existing name (the
        same after Unicode NFC normalisation: ``café`` composed and decomposed are two files that look
        the same)."""
        rel = self.relative(path)
        if rel == ".":
            return
        parent = self.root
        for part in PurePosixPath(rel).parts:
            here = parent / part
            if not self.exists(here):
                wanted = unicodedata.normalize("NFC", part)
                try:
                    siblings = [name for name, _ in self.children(parent)] if self.is_dir(parent) else []
                except OSError:
                    siblings = []
                for name in siblings:
                    if name != part and unicodedata.normalize("NFC", name) == wanted:
                        raise ToolError(
                            f"'{self.relative(parent / name)}' already exists and looks the same as "
                            f"'{self.relative(here)}' (they differ only in Unicode normalisation); use the "
                            "existing name"
                        )
                return
            parent = here

    def is_secret(self, path: Path) -> bool:
        """True when ``path`` (absolute, inside the root) or a parent matches ``workspace.secrets``."""
        text, top = str(path), str(self.root)
        if text.startswith(top) and text[len(top) : len(top) + 1] == "/" and top != "/":
            # A Path's text is already normal (no "." parts, no doubled or trailing "/"): what
            # relative_to and parts give, without building three paths (a shadow asks 100,000 times).
            rel = text[len(top) + 1 :]
        else:
            rel = "/".join(PurePosixPath(path.relative_to(self.root).as_posix()).parts)
        return bool(rel) and self._secret_in(rel)

    def is_secret_rel(self, rel: str) -> bool:
        """:meth:`is_secret` of ``root / rel`` for a workspace-relative POSIX path, without a Path: a shadow
        asks it for every file of HEAD (git's names are normal text) while git checks out, and building and
        reading a Path was a third of a question's ~9 µs (the one regex most of the rest). A name not normal
        (an empty, ``.`` or ``..`` part) is asked as :meth:`is_secret` asks it, below the root whatever
        ``/`` it starts with."""
        if not rel or _NOT_NORMAL.search(rel):
            return bool(rel.lstrip("/")) and self.is_secret(self.root / rel.lstrip("/"))
        return self._secret_in(rel)

    def _secret_in(self, rel: str) -> bool:
        """Whether the path of ``rel``'s parts (joined by ``/``, none empty) or a folder of it is a secret;
        each folder's answer kept by its text (a checkout's files share a few thousand folders)."""
        folder = rel.rpartition("/")[0]
        known = self._secret_folders.get(folder)
        if known is None:
            known = bool(folder) and self._secret_dir(tuple(folder.split("/")))
            self._secret_folders[folder] = known
        return known or self._matches_secret(rel)

    def _matches_secret(self, rel: str) -> bool:
        # One search tells most paths that no pattern matches; only the others go pattern by pattern.
        return bool(self._maybe_secret.search(normalize_file(rel))) and self._secrets.match_file(rel)

    def _secret_dir(self, parts: tuple[str, ...]) -> bool:
        """Whether the directory ``parts`` (from the root) or a parent matches, remembered per directory:
        the files of one directory share the answer (70 patterns checked once, not once per file)."""
        if not parts:
            return False
        known = self._secret_dirs.get(parts)
        if known is None:
            known = self._secret_dir(parts[:-1]) or self._matches_secret("/".join(parts) + "/")
            self._secret_dirs[parts] = known
        return known

    def relative(self, path: Path) -> str:
        """Workspace-relative POSIX path ('.' for the root)."""
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    def is_ignored(self, path: Path) -> bool:
        """True when ``path`` (absolute, inside the root) or one of its parents is excluded or gitignored.

        One pass down the path: each directory's .gitignore is read once and applies below it, as in the
        walk (linear in depth, not quadratic)."""
        rel = PurePosixPath(path.relative_to(self.root).as_posix())
        if str(rel) == ".":
            return False
        parts = rel.parts
        specs: list[tuple[str, GitIgnoreSpec]] = []
        for depth in range(1, len(parts) + 1):
            base = "/".join(parts[: depth - 1])
            spec = _gitignore_spec(self.root / base) if base or depth == 1 else None
            if spec is not None:
                specs.append((base, spec))
            is_dir = depth < len(parts) or path.is_dir()
            if is_git_name(parts[depth - 1]) or self._scan_ignored("/".join(parts[:depth]), is_dir, specs):
                return True
        return False

    def walk(self, start: Path | None = None) -> Iterator[Path]:
        """Files under ``start`` (default: root) that are not ignored, as the overlay leaves them."""
        start = start or self.root
        if self.overlay is None:
            yield from self._walk_disk(start)
            return
        changed = {self.root / rel for rel in self.overlay.changed_paths()}
        files = {p for p in self._walk_disk(start) if p not in changed}
        for path in changed:
            inside = path == start or start in path.parents
            if inside and self.overlay.exists(self.relative(path)) and not self.is_ignored(path):
                files.add(path)
        yield from sorted(files)

    def _walk_disk(self, start: Path) -> Iterator[Path]:
        for rel, _entry in self.scan(start):
            yield self.root / rel

    def scan(self, start: Path | None = None) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """(relative POSIX path, directory entry) of every file under ``start`` on disk that is not ignored.

        Sorted by name within each directory; each .gitignore is read once per directory, not per file,
        so a 15,000-file tree is walked in a fraction of a second.
        """
        start = start or self.root
        if not start.is_dir() or (start != self.root and self.is_ignored(start)):
            return
        # .gitignore specs of start's ancestors, shallow to deep, each with its directory relative to root.
        specs: list[tuple[str, GitIgnoreSpec]] = []
        rel_start = self.relative(start)
        parts = () if rel_start == "." else PurePosixPath(rel_start).parts
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = _gitignore_spec(self.root / base)
            if spec is not None:
                specs.append((base, spec))
        yield from self._scan_dir(start, "" if rel_start == "." else rel_start, specs)

    def _scan_dir(
        self, directory: Path, rel_dir: str, specs: list[tuple[str, GitIgnoreSpec]]
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Depth first, iteratively (a 1,400-deep tree must not exhaust the stack); directories deeper than
        :data:`MAX_DEPTH` or already seen (a loop through a bind mount) are skipped and counted."""
        base_depth = 0 if not rel_dir else rel_dir.count("/") + 1
        seen: set[tuple[int, int]] = set()
        stack = [(directory, rel_dir, specs)]
        while stack:
            folder, rel_folder, folder_specs = stack.pop()
            own = _gitignore_spec(folder)
            if own is not None:
                folder_specs = [*folder_specs, (rel_folder, own)]
            try:
                info = folder.stat()
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen:
                self.skipped += 1
                continue
            seen.add((info.st_dev, info.st_ino))
            subdirs = []
            for rel, entry in folder_entries(folder, rel_folder):
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    # A link is listed only when it stays inside and does not lead to a secret.
                    if not is_dir and entry.is_symlink() and not self._link_safe(Path(entry.path)):
                        continue
                    is_file = not is_dir and entry.is_file()
                except OSError:
                    continue
                if is_git_name(entry.name) or self._scan_ignored(rel, is_dir, folder_specs):
                    continue
                if is_dir:
                    if rel.count("/") + 1 - base_depth >= MAX_DEPTH:
                        self.skipped += 1
                        continue
                    subdirs.append((Path(entry.path), rel, folder_specs))
                elif is_file:
                    yield rel, entry
            stack.extend(reversed(subdirs))

    def _scan_ignored(self, rel: str, is_dir: bool, specs: list[tuple[str, GitIgnoreSpec]]) -> bool:
        path = rel + ("/" if is_dir else "")
        # One search tells most paths that no pattern matches; only the others go pattern by pattern.
        if self._maybe_excluded.search(normalize_file(path)) and self._excludes.match_file(path):
            return True
        decision: bool | None = None
        for base, spec in specs:
            sub = path[len(base) + 1 :] if base else path
            result = spec.check_file(sub)
            if result.include is not None:
                decision = result.include
        return bool(decision)

    def contains(self, path: Path) -> bool:
        """True when ``path``, symlinks resolved, lies inside the workspace."""
        real = Path(os.path.realpath(path))
        return real == self.root or self.root in real.parents

    def exists(self, path: Path) -> bool:
        return self.overlay.exists(self.relative(path)) if self.overlay else path.exists()

    def is_dir(self, path: Path) -> bool:
        return self.overlay.is_dir(self.relative(path)) if self.overlay else path.is_dir()

    def children(self, path: Path) -> list[tuple[str, bool]]:
        """(name, is_dir) of a directory's entries that are not ignored, directories first."""
        if self.overlay is not None:
            entries = self.overlay.listdir(self.relative(path))
        else:
            entries = [(child.name, _is_dir(child)) for child in path.iterdir()]
        kept = [
            (name, is_dir)
            for name, is_dir in entries
            if not is_git_name(name) and not self.is_ignored(path / name) and self._safe(path / name)
        ]
        return sorted(kept, key=lambda entry: (not entry[1], entry[0].lower()))

    def read_bytes(self, path: Path) -> bytes:
        if self.overlay is None:
            self._check_size(path)
            return path.read_bytes()
        try:
            return self.overlay.read_bytes(self.relative(path))
        except FileTooLarge as exc:  # stat said so before a byte was read
            raise ToolError(str(exc)) from None

    def _check_size(self, path: Path) -> None:
        size = path.stat().st_size
        if size > self.settings.max_file_bytes:
            raise ToolError(
                f"{self.relative(path)} is {size} bytes, over the "
                f"{self.settings.max_file_bytes}-byte limit (workspace.max_file_bytes)"
            )

    def read_text(self, path: Path) -> str:
        """Text of a workspace file as the agent should see it (through the overlay when there is one)."""
        if self.overlay is not None:
            data = self.read_bytes(path)
            if is_binary(data):
                raise ToolError(f"{self.relative(path)} is a binary file")
            return self.overlay.read_text(self.relative(path))
        size = path.stat().st_size
        if size > self.settings.max_file_bytes:
            raise ToolError(
                f"{self.relative(path)} is {size} bytes, over the "
                f"{self.settings.max_file_bytes}-byte limit (workspace.max_file_bytes)"
            )
        data = path.read_bytes()
        if is_binary(data):
            raise ToolError(f"{self.relative(path)} is a binary file")
        return data.decode("utf-8", errors="replace")


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False for a link loop instead of an OSError."""
    try:
        return path.is_dir()
    except OSError:
        return False


def any_pattern(spec: GitIgnoreSpec) -> re.Pattern[str]:
    """A regex that finds something in every (normalized) path one of ``spec``'s patterns matches (and maybe
    in others): a path it does not find is matched by none, so ``spec`` would not match it either (a
    pattern decides only where its own regex finds the path). One search instead of one per pattern: the
    patterns' common ``^(?:.+/)?`` (at the start of any path component) becomes one ``(?:^|/)`` before
    their alternatives (a superset), and their directory-mark groups plain groups (one name twice is an
    error in one regex)."""
    anywhere, others = [], []
    for pattern in spec.patterns:
        if pattern.include is None or not isinstance(pattern.regex, re.Pattern):
            continue
        text = pattern.regex.pattern.replace("(?P<ps_d>", "(?:")
        if text.startswith(_ANY_FOLDER):
            anywhere.append(text[len(_ANY_FOLDER) :])
        else:
            others.append(text)
    if anywhere:
        others.insert(0, "(?:^|/)(?:" + "|".join(f"(?:{text})" for text in anywhere) + ")")
    return re.compile("|".join(f"(?:{text})" for text in others) if others else r"(?!)")


@lru_cache(maxsize=32)
def _spec(lines: tuple[str, ...]) -> GitIgnoreSpec:
    """The compiled gitignore ``lines``, shared by the workspaces of one process that have the same ones
    (a session builds several; compiling the default ones took ~4 ms each time). Only matched, never
    changed."""
    return GitIgnoreSpec.from_lines(lines)


@lru_cache(maxsize=32)
def _excludes(lines: tuple[str, ...]) -> tuple[GitIgnoreSpec, re.Pattern[str]]:
    spec = _spec(lines)
    return spec, any_pattern(spec)


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte in the first 8000 bytes."""
    return b"\x00" in data[:8000]


@lru_cache(maxsize=1024)
def _gitignore_cached(path: str, mtime_ns: int) -> GitIgnoreSpec:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return GitIgnoreSpec.from_lines(handle.read().splitlines())


def _gitignore_spec(directory: Path) -> GitIgnoreSpec | None:
    path = directory / ".gitignore"
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return _gitignore_cached(str(path), mtime)
