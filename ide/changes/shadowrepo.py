"""Making a shadow workspace's repository (``git init`` with the user's objects through alternates, a
parallel checkout of HEAD), what a shadow needs to know of the user's repository while that checkout runs
(HEAD's files, for the secret list), and how a capture's deletions and creations pair up as renames.
See ``ide/changes/shadow.py``."""

from __future__ import annotations

import difflib
import os
import re
import shutil
from pathlib import Path

from ide.changes.gitutil import Repo, git
from ide.changes.hunks import is_binary
from ide.changes.overlay import Base
from ide.changes.statindex import CHECKOUT_CONFIG, GITLINK_MODE
from ide.fswalk import MAX_WALK_DEPTH
from ide.gitsafe import run_git


def head_files(repo: Repo, head: str) -> list[str]:
    """The workspace-relative paths of the files (and links) of ``head`` a walk of its checkout finds:
    no submodule, nothing deeper than ``MAX_WALK_DEPTH`` folders."""
    out = git(repo.top, "ls-tree", "-r", "-z", "--full-tree", head)
    lead = os.fsencode(repo.prefix + "/") if repo.prefix else b""
    gitlink = b"%o " % GITLINK_MODE
    found: list[str] = []
    for line in out.split(b"\0"):
        if not line or line.startswith(gitlink):
            continue
        name = line.partition(b"\t")[2]
        if name.startswith(lead):
            rel = os.fsdecode(name[len(lead) :])
            if rel.count("/") < MAX_WALK_DEPTH:
                found.append(rel)
    return found


def umask() -> int | None:
    """This process's umask as Linux reports it (None where it does not): what git's checkout applied to
    the files it made, read without setting it (``os.umask`` would change it for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None


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


def own_repository(repo: Repo, top: Path, head: str) -> None:
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
    # Parallel checkout (one worker per core): the checkout is most of the shadow's cost. Its index is
    # read afterwards (ide.changes.statindex), so it is a plain version-2 one whatever the user's config.
    forced = [part for item in ("checkout.workers=0", *CHECKOUT_CONFIG) for part in ("-c", item)]
    git(top, *forced, "checkout", "--quiet", "--detach", head)
