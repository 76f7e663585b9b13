"""The accepted change replayed onto HEAD: what a batch commits, so that the commit holds exactly the
reviewed change and none of the user's uncommitted edits (Apply, and Roll back's reverse change)."""

from __future__ import annotations

from collections.abc import Sequence

from ide.changes.gitutil import IndexEntry, Repo, blob_id, merge3, tree_blobs
from ide.changes.hunks import is_binary
from ide.gitsafe import run_git

TREE_IDS_MAX = 1000
TREE_IDS_MAX_BYTES = 128 * 1024
"""Up to this many paths, of up to this many bytes in all, are looked up by one ``git ls-tree`` with the
paths on its command line (well under any system's argument limit); more are read whole by ``cat-file
--batch``."""


def tree_ids(repo: Repo, rev: str | None, rels: Sequence[str]) -> list[str | None] | None:
    """The blob id of each of ``rels`` in commit ``rev`` (None where there is no blob), from one ``git
    ls-tree`` that reads trees, not files; None when git fails or there are too many paths for one."""
    found = tree_entries(repo, rev, rels)
    return None if found is None else [entry[1] if entry else None for entry in found]


def tree_modes(repo: Repo, rev: str | None, rels: Sequence[str]) -> list[str | None] | None:
    """The mode git records for each of ``rels`` in commit ``rev`` (``100644``, ``100755``; None where
    there is no blob), as :func:`tree_ids` reads them."""
    found = tree_entries(repo, rev, rels)
    return None if found is None else [entry[0] if entry else None for entry in found]


def tree_entries(repo: Repo, rev: str | None, rels: Sequence[str]) -> list[tuple[str, str] | None] | None:
    """(mode, blob id) of each of ``rels`` in commit ``rev`` (None where there is no blob), from one ``git
    ls-tree``; None when git fails or there are too many paths for one."""
    if not rev:
        return [None for _ in rels]
    paths = [repo.path(rel) for rel in rels]
    if len(paths) > TREE_IDS_MAX or sum(len(path) for path in paths) > TREE_IDS_MAX_BYTES:
        return None
    try:
        literal = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is itself, never a pattern
        proc = run_git(repo.top, "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths, env_extra=literal)
    except (OSError, ValueError):  # no such argv (a NUL in a name, an argument limit): read them whole
        return None
    if proc.returncode != 0:
        return None
    blobs: dict[str, tuple[str, str]] = {}
    for record in proc.stdout.split(b"\0"):
        info, tab, path = record.partition(b"\t")
        fields = info.split(b" ")
        if tab and len(fields) == 3 and fields[1] == b"blob":
            blobs[path.decode("utf-8", "surrogateescape")] = (fields[0].decode(), fields[2].decode())
    return [blobs.get(path) for path in paths]


def _in_rev(
    repo: Repo, rev: str | None, entries: list[tuple[str, bytes | None, bytes | None, int | None]]
) -> list[bytes | None]:
    """Each entry's bytes in ``rev``, for :func:`replay_change`: where ``rev``'s blob is the entry's
    ``before`` (the usual case: the agent read the committed file) that is ``before`` itself, known by its
    id without reading the blob; the others are read."""
    rels = [rel for rel, *_ in entries]
    ids = tree_ids(repo, rev, rels)
    if ids is None:
        return tree_blobs(repo, rev, rels)
    same = [
        oid == (blob_id(before) if before is not None else None)
        for oid, (_rel, before, *_rest) in zip(ids, entries, strict=True)
    ]
    read = iter(tree_blobs(repo, rev, [rel for rel, kept in zip(rels, same, strict=True) if not kept]))
    return [
        before if kept else next(read) for (_rel, before, *_rest), kept in zip(entries, same, strict=True)
    ]


def replay_change(
    repo: Repo,
    rev: str | None,
    entries: list[tuple[str, bytes | None, bytes | None, int | None]],
    in_rev: list[bytes | None] | None = None,
) -> tuple[list[IndexEntry], list[str]]:
    """What to commit on top of ``rev`` so the commit holds exactly the change ``before → after`` of each
    ``(path, before, after, mode)``, and nothing else that differs on disk (edits the user never committed).

    The change is merged onto ``rev``'s version of the file; a file where that overlaps such edits is left
    out (second list): it is on disk, but committing it would commit the user's edits too. ``in_rev``, when
    the caller has read them already, are the files' bytes in ``rev`` (else they are read).
    """
    committed: list[IndexEntry] = []
    left_out: list[str] = []
    recorded_all = _in_rev(repo, rev, entries) if in_rev is None else in_rev
    for (rel, before, after, mode), recorded in zip(entries, recorded_all, strict=True):
        if recorded == before:
            if after is not None or recorded is not None:
                committed.append((rel, after, mode))
            continue
        if (
            recorded is None
            or before is None
            or after is None
            or any(map(is_binary, (recorded, before, after)))
        ):
            left_out.append(rel)
            continue
        merged, clean = merge3(recorded, before, after, ("committed", "before", "after"))
        if clean:
            committed.append((rel, merged, mode))
        else:
            left_out.append(rel)
    return committed, left_out
