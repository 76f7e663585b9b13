"""Property: Apply commits only what the user accepted from Arbor, never the user's own edits.

Random files in git; the agent proposes edits; the user edits some files by hand (before the agent read
them, or while the review is open); a random subset of hunks is accepted. Then: the commit holds the base
plus the accepted hunks (replayed onto HEAD) and no line of the user's; the working tree holds the merge;
Roll back reverts exactly Arbor's commit and keeps every line of the user's on disk, uncommitted.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ide.changes import BatchStore, ChangeSet, Review, rollback_batch
from ide.changes.gitutil import merge3
from ide.changes.hunks import apply_hunks, text_hunks
from ide.protocol.review import DecideParams

NAMES = ["a.txt", "b.txt", "dir/c.txt"]
ORIGINAL = [f"line {i}\n".encode() for i in range(8)]


def edited(lines: list[bytes], edits: list[tuple[int, int]], tag: str) -> bytes:
    """``lines`` with each (position, kind) edit: 0 replaces the line, 1 inserts one before it."""
    out = list(lines)
    for n, (at, kind) in enumerate(edits):
        at = min(at, len(out) - 1)
        mark = f"{tag} {n}\n".encode()
        if kind == 0:
            out[at] = mark
        else:
            out.insert(at, mark)
    return b"".join(out)


EDITS = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1)), max_size=3)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    agent=st.fixed_dictionaries({n: EDITS for n in NAMES}),
    user=st.fixed_dictionaries({n: EDITS for n in NAMES}),
    user_first=st.booleans(),
    data=st.data(),
)
def test_apply_commits_only_accepted_hunks_and_rollback_keeps_the_users_edits(
    agent: dict[str, list[tuple[int, int]]],
    user: dict[str, list[tuple[int, int]]],
    user_first: bool,
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        for name in NAMES:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(b"".join(ORIGINAL))
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
            git(root, *args)
        start = git(root, "rev-parse", "HEAD").strip()

        def user_edits() -> None:
            for name, edits in user.items():
                current = (root / name).read_bytes().splitlines(keepends=True)
                (root / name).write_bytes(edited(current, edits, "user"))

        if user_first:  # uncommitted edits the agent reads as its base
            user_edits()
        cs = ChangeSet(root)
        bases = {name: (root / name).read_bytes() for name in NAMES}
        proposed = {
            name: edited(bases[name].splitlines(keepends=True), agent[name], "agent") for name in NAMES
        }
        for name in NAMES:
            cs.write_bytes(name, proposed[name])
        if not user_first:  # edits made by hand while the review is open
            user_edits()
        users = {name: (root / name).read_bytes() for name in NAMES}

        review = Review(cs, session_id="s", title="t", store=BatchStore(Path(tmp) / "data"))
        view = review.view()
        accepted = [h.id for f in view.files for h in f.hunks if data.draw(st.booleans())]
        review.decide(DecideParams(session_id="s", decision="accepted", hunk_ids=accepted))
        result = review.apply()
        conflicted = {c.path for c in result.conflicts}
        event(f"user_first={user_first} batch={result.batch is not None} conflicts={len(conflicted)}")

        for name in NAMES:
            committed = git(root, "show", f"HEAD:{name}").encode()
            assert b"user" not in committed  # never a line of the user's in Arbor's commit
            hunks = [h for h in text_hunks(name, bases[name], proposed[name]) if h.id in accepted]
            ours = apply_hunks(bases[name], hunks)
            if name in conflicted or not hunks:
                assert (root / name).read_bytes() == users[name]
                continue
            if not user_first:  # HEAD was the agent's base: the commit is base + accepted hunks
                assert committed == ours
            elif name not in result.uncommitted:
                assert committed == merge3(b"".join(ORIGINAL), bases[name], ours, ("c", "b", "a"))[0]
            else:
                assert committed == b"".join(ORIGINAL)
            assert (root / name).read_bytes() == merge3(users[name], bases[name], ours, ("y", "b", "a"))[0]

        if result.batch is None:
            return
        rolled = rollback_batch(root, review.store)
        assert rolled.refused == []
        for name in NAMES:
            assert (root / name).read_bytes() == users[name]  # the user's edits kept, on disk
        assert git(root, "diff", start, "HEAD") == ""  # Arbor's commit reverted exactly, nothing else
