"""Git for the workflows: the one way they run git (the history source, and the grounding check of a
commit snippet), and the git history source itself."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ide.gitsafe import run_git
from ide.workflows.ranking import bm25_scores
from ide.workflows.snippets import PER_SOURCE, Snippet

PICKAXE_TERMS = 3
"""Identifiers of the queries looked for in the diffs of the logged commits (``git log -G``)."""
LOGGED_COMMITS = 300
"""The most recent commits the history source searches."""

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*)(?:\.[A-Za-z_]\w*)*")
"""snake_case or camelCase (optionally dotted): a name worth looking for in diffs."""


def git_output(root: Path, *args: str, timeout: float = 20) -> str | None:
    """The output of ``git ARGS`` in ``root``, or None when git fails, times out or cannot start."""
    try:
        # Through ide.gitsafe; a log (-G searches diffs) never runs a textconv or external diff driver.
        if args[:1] == ("log",):
            args = ("log", "--no-textconv", "--no-ext-diff", *args[1:])
        proc = run_git(root, *args, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


class GitHistory:
    """The ``git_history`` source: commit messages of ``root``'s recent history ranked for the queries,
    with a bonus for commits whose diff adds or removes a queried identifier."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def search(self, queries: list[str]) -> list[Snippet]:
        if not (self.root / ".git").exists() and git_output(self.root, "rev-parse", "--git-dir") is None:
            raise RuntimeError("not a git repository")
        log = git_output(self.root, "log", "-n", str(LOGGED_COMMITS), "--format=%h%x1f%s%x1f%b%x1e")
        if log is None:
            raise RuntimeError("git log failed")
        commits = _commits(log)
        # Commits whose diff adds or removes a queried identifier, though their message never names it:
        # identifiers only (plain words would match most commits), one -G pass over the commits above,
        # bounded in time so a big history cannot stall the stage.
        idents = [q for q in queries if len(q) >= 4 and _IDENTIFIER.fullmatch(q)][:PICKAXE_TERMS]
        pickaxe: set[str] = set()
        if idents and commits:
            pattern = "|".join(re.escape(term) for term in idents)
            shas = [h for h, _s, _t in commits]
            found = git_output(
                self.root, "log", "--no-walk=unsorted", f"-G{pattern}", "--format=%h", *shas, timeout=3
            )
            pickaxe = set((found or "").split())
        if not commits:
            return []
        scores = bm25_scores(" ".join(queries), [text for _h, _s, text in commits])
        totals = [
            score + (2.0 if h in pickaxe else 0.0) for score, (h, _s, _t) in zip(scores, commits, strict=True)
        ]
        ranked = sorted(zip(totals, commits, strict=True), key=lambda pair: -pair[0])
        return [
            Snippet("git_history", f"git:{h}", 0, 0, text, subject, score)
            for score, (h, subject, text) in ranked
            if score > 0
        ][:PER_SOURCE]


def _commits(log: str) -> list[tuple[str, str, str]]:
    """(short sha, subject, subject and body) of ``git log --format=%h%x1f%s%x1f%b%x1e`` output."""
    commits = []
    for record in log.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) == 3 and parts[0]:
            commits.append((parts[0], parts[1], f"{parts[1]}\n{parts[2]}".strip()))
    return commits
