"""Which files make up the workspace, and what the viewer may show of one; blocking, run off the UI thread."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ide.fswalk import walk_files
from ide.gitsafe import run_git

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    from ide.settings import WorkspaceSettings

BINARY_SNIFF_BYTES = 8000
"""Git's heuristic: a NUL byte in the first 8000 bytes makes a file binary."""

GIT_TIMEOUT_S = 30.0


def list_workspace_files(root: Path, settings: WorkspaceSettings) -> list[str]:
    """Workspace-relative POSIX paths of the files a user cares about, sorted.

    Inside a git work tree git decides (tracked plus untracked-but-not-ignored, so .gitignore, nested
    .gitignore files and .git/info/exclude all count); elsewhere a walk honours ``settings.exclude``.
    The exclude patterns apply in both cases, so ``node_modules/`` stays out even when committed.
    """
    from pathspec import GitIgnoreSpec  # on first listing, in a worker: not before the first frame

    excludes = GitIgnoreSpec.from_lines([".git/", *settings.exclude])
    listed = _git_files(root)
    if listed is None:
        return _walk_files(root, excludes)
    return sorted(path for path in listed if not excludes.match_file(path))


def _git_files(root: Path) -> list[str] | None:
    """Files git sees in ``root``, or None when ``root`` is not in a work tree (or git is missing)."""
    try:
        result = run_git(root, "ls-files", "-co", "--exclude-standard", "-z", timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    names = result.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    # ls-files lists a deleted-but-tracked file until the deletion is staged; the tree shows the disk.
    return [name for name in dict.fromkeys(names) if name and (root / name).is_file()]


def _walk_files(root: Path, excludes: GitIgnoreSpec) -> list[str]:
    # Pruning in the walk keeps it from descending into node_modules and friends at all.
    keep = lambda rel: not excludes.match_file(rel + "/")  # noqa: E731
    return sorted(rel for rel in walk_files(root, keep) if not excludes.match_file(rel))


@dataclass(frozen=True)
class FileContent:
    """What the viewer shows for one file: its text, or a message saying why there is none."""

    path: Path
    text: str | None
    message: str | None = None


def read_for_viewer(path: Path, max_bytes: int) -> FileContent:
    """Text of ``path`` for display, or a plain message for missing, oversized and binary files."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return FileContent(path, None, f"Cannot open {path.name}: {exc.strerror or exc}")
    if size > max_bytes:
        return FileContent(
            path,
            None,
            f"{path.name} is {_human_size(size)}, over the {_human_size(max_bytes)} viewer limit "
            "(workspace.max_file_bytes).",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileContent(path, None, f"Cannot read {path.name}: {exc.strerror or exc}")
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return FileContent(path, None, f"{path.name} is a binary file ({_human_size(size)}).")
    text = data.decode("utf-8", errors="replace")
    # One line separator, so the viewer's blocks and the highlighter's line spans agree.
    return FileContent(path, text.replace("\r\n", "\n").replace("\r", "\n"))


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
