"""What the agent reads is today's workspace with its pending edits on top: a file without a pending edit is
read from disk (again only when its stat stamp moved), and a pending edit's base follows the disk —
merged three-way, or kept with the overlap said (ide.changes.refresh; issue 46 items 1 and 2)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeSet, Review, rollback_batch
from ide.changes import overlay as overlay_module
from ide.changes.files import file_changes
from ide.changes.overlay import Entry
from ide.changes.refresh import OVERLAP, refresh_bases, refresh_review
from ide.changes.stamps import RACY_NS
from ide.protocol.review import DecideParams
from tests.support.git import git

TWENTY = "".join(f"line {i}\n" for i in range(1, 21))


def make_review(root: Path, store: BatchStore) -> Review:
    return Review(ChangeSet(root), session_id="s1", title="t", store=store)


def decide(review: Review, decision: str, **kw: object) -> None:
    review.decide(DecideParams(session_id="s1", decision=decision, **kw))  # type: ignore[arg-type]


def changed_lines(review: Review, path: str) -> list[tuple[str, list[str]]]:
    [file] = review.hunks([path])
    return [(h.decision, [line for line in h.lines if line[:1] in "+-"]) for h in file.hunks]


def aged() -> None:
    """Wait until what was just written is old enough for its stamp to vouch for its content."""
    time.sleep(RACY_NS / 1e9 + 0.02)


def test_a_file_is_read_again_only_when_its_stamp_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = overlay_module._disk

    def counted(path: Path | str, limit: int, rel: str) -> overlay_module.Base:
        reads.append(rel)
        return real(path, limit, rel)

    monkeypatch.setattr(overlay_module, "_disk", counted)
    path = tmp_path / "f.txt"
    path.write_text("v1\n")
    aged()
    cs = ChangeSet(tmp_path)
    assert [cs.read_text("f.txt") for _ in range(3)] == ["v1\n"] * 3
    assert cs.exists("f.txt") and reads == ["f.txt"]
    path.write_text("v2\n")  # the same size: the stamp's times and inode say it moved
    assert cs.read_text("f.txt") == "v2\n"
    assert reads == ["f.txt"] * 2
    # Written this instant, its stamp vouches for nothing: read every time until it has aged.
    assert cs.read_text("f.txt") == "v2\n" and reads == ["f.txt"] * 3
    aged()
    cs.read_text("f.txt")
    cs.read_text("f.txt")
    assert reads == ["f.txt"] * 4
    # A pending edit whose file did not move is not read at the turn's refresh.
    cs.edit("f.txt", "v2", "v3")
    assert refresh_bases(cs) == ([], {}) and reads == ["f.txt"] * 4


def test_a_search_branch_reads_todays_file_after_its_parent_read_the_old_one(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    parent = ChangeSet(tmp_path)
    assert parent.read_text("f.txt") == "old\n"
    (tmp_path / "f.txt").write_text("new, longer\n")
    branch = parent.child()
    assert branch.read_text("f.txt") == "new, longer\n"
    branch.edit("f.txt", "new", "newer")
    parent.adopt(branch)
    assert parent.base("f.txt").data == b"new, longer\n"
    assert [f.path for f in file_changes(parent)] == ["f.txt"]


def test_a_pending_edit_takes_a_user_edit_elsewhere_and_its_base_becomes_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text(TWENTY)
    cs = ChangeSet(tmp_path)
    cs.edit("f.txt", "line 2\n", "line two\n")
    mine = TWENTY.replace("line 18\n", "line 18 (mine)\n")
    path.write_text(mine)
    assert cs.read_text("f.txt") == TWENTY.replace("line 2\n", "line two\n")  # until the refresh
    assert refresh_bases(cs) == (["f.txt"], {})
    assert cs.read_text("f.txt") == mine.replace("line 2\n", "line two\n")
    assert cs.base("f.txt").data == mine.encode()
    [change] = file_changes(cs)
    assert [line for h in change.hunks for line in h.lines if line[:1] in b"+-"] == [
        b"-line 2\n",
        b"+line two\n",
    ]


def test_an_overlap_keeps_the_edit_and_its_base_and_is_said_until_it_merges(
    git_workspace: Path, store: BatchStore
) -> None:
    path = git_workspace / "pkg" / "greet.py"
    review = make_review(git_workspace, store)
    cs = review.changeset
    cs.edit("pkg/greet.py", "Hello", "Hi")
    base = cs.base("pkg/greet.py")
    path.write_text('def greet(name):\n    return f"Howdy, {name}!"\n')
    message = OVERLAP.format(path="pkg/greet.py")
    assert refresh_review(review) == {"pkg/greet.py": message}
    assert cs.base("pkg/greet.py") == base and "Hi," in cs.read_text("pkg/greet.py")
    assert cs.overlaps == {"pkg/greet.py": message}
    [file] = review.view().files
    assert file.conflict == message
    # The user puts the line back and adds one of their own far from it: now the two merge.
    path.write_text('"""Greetings."""\n\n\n\ndef greet(name):\n    return f"Hello, {name}!"\n')
    assert refresh_review(review) == {}
    assert cs.read_text("pkg/greet.py").startswith('"""Greetings."""') and "Hi," in cs.read_text(
        "pkg/greet.py"
    )
    [file] = review.view().files
    assert file.conflict is None and cs.overlaps == {}


def test_deletes_creates_and_modes_follow_the_disk_or_are_said(tmp_path: Path) -> None:
    for name in ("gone.txt", "both_gone.txt", "edited.txt", "chmod.txt"):
        (tmp_path / name).write_text(TWENTY)
    cs = ChangeSet(tmp_path)
    cs.delete("gone.txt")  # the user edits it: an overlap
    cs.delete("both_gone.txt")  # the user deletes it too: nothing left to propose
    cs.edit("edited.txt", "line 1\n", "line one\n")  # the user deletes it: an overlap
    cs.edit("chmod.txt", "line 1\n", "line one\n")  # the user makes it executable: the edit keeps that
    cs.create("new.txt", "agent\n")  # the user creates it too, otherwise: an overlap
    cs.create("same.txt", "same\n")  # the user creates the same: nothing left to propose
    (tmp_path / "gone.txt").write_text(TWENTY + "more\n")
    (tmp_path / "both_gone.txt").unlink()
    (tmp_path / "edited.txt").unlink()
    os.chmod(tmp_path / "chmod.txt", 0o755)
    (tmp_path / "new.txt").write_text("user\n")
    (tmp_path / "same.txt").write_text("same\n")
    changed, overlaps = refresh_bases(cs)
    assert sorted(changed) == ["both_gone.txt", "chmod.txt", "same.txt"]
    assert sorted(overlaps) == ["edited.txt", "gone.txt", "new.txt"]
    assert cs.changed_paths() == ["chmod.txt", "edited.txt", "gone.txt", "new.txt"]
    assert stat.S_IMODE(cs.mode("chmod.txt") or 0) == 0o755
    assert cs.read_text("chmod.txt") == TWENTY.replace("line 1\n", "line one\n")


def test_a_renamed_file_takes_the_users_edit_of_its_old_path(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text(TWENTY)
    cs = ChangeSet(tmp_path)
    cs.rename("old.txt", "new.txt")
    cs.edit("new.txt", "line 1\n", "line one\n")
    (tmp_path / "old.txt").write_text(TWENTY.replace("line 20\n", "line 20 (mine)\n"))
    assert refresh_bases(cs) == (["new.txt"], {})
    assert cs.read_text("new.txt") == TWENTY.replace("line 1\n", "line one\n").replace(
        "line 20\n", "line 20 (mine)\n"
    )
    [change] = file_changes(cs)
    assert (change.path, change.old_path, change.status) == ("new.txt", "old.txt", "renamed")


def test_rejected_hunks_leave_before_the_next_turn_and_decisions_follow_renumbered_hunks(
    tmp_path: Path, store: BatchStore
) -> None:
    path = tmp_path / "f.txt"
    path.write_text(TWENTY)
    review = make_review(tmp_path, store)
    cs = review.changeset
    cs.edit("f.txt", "line 2\n", "line two\n")
    cs.edit("f.txt", "line 10\n", "line ten\n")
    cs.edit("f.txt", "line 18\n", "line eighteen\n")
    two, ten, eighteen = (h.id for h in review.hunks(["f.txt"])[0].hunks)
    decide(review, "rejected", hunk_ids=[two])
    decide(review, "accepted", hunk_ids=[eighteen])
    path.write_text("header (mine)\n" + TWENTY)  # every line of the agent's moves down one
    assert refresh_review(review, settle=True) == {}
    assert cs.read_text("f.txt") == "header (mine)\n" + TWENTY.replace("line 10\n", "line ten\n").replace(
        "line 18\n", "line eighteen\n"
    )
    assert changed_lines(review, "f.txt") == [
        ("pending", ["-line 10", "+line ten"]),
        ("accepted", ["-line 18", "+line eighteen"]),
    ]
    assert ten not in {h.id for h in review.hunks(["f.txt"])[0].hunks}  # renumbered, decision carried
    assert review.decisions().get(two) is None


def test_a_rejected_rename_mode_or_new_file_goes_back_before_the_next_turn(
    tmp_path: Path, store: BatchStore
) -> None:
    (tmp_path / "a.txt").write_text(TWENTY)
    (tmp_path / "b.txt").write_text(TWENTY)
    review = make_review(tmp_path, store)
    cs = review.changeset
    cs.rename("a.txt", "moved.txt")
    cs.edit("moved.txt", "line 1\n", "line one\n")
    cs.base("b.txt")
    cs.set_entry("b.txt", Entry(TWENTY.encode(), 0o755))  # made executable, as a shell's chmod would
    cs.create("c.txt", "new\n")
    hunks = {(f.path, h.kind): h.id for f in review.view().files for h in f.hunks}
    decide(review, "rejected", hunk_ids=[hunks[("moved.txt", "rename")], hunks[("b.txt", "mode")]])
    decide(review, "rejected", paths=["c.txt"])
    refresh_review(review, settle=True)
    assert cs.changed_paths() == ["a.txt"]
    assert cs.read_text("a.txt") == TWENTY.replace("line 1\n", "line one\n")
    assert not cs.exists("moved.txt") and not cs.exists("c.txt")
    assert review.decisions() == {}


def test_after_apply_and_roll_back_the_same_create_and_edit_work_and_are_reviewed(
    git_workspace: Path, store: BatchStore
) -> None:
    review = make_review(git_workspace, store)
    cs = review.changeset
    cs.create("made.py", "x = 1\n")
    cs.edit("pkg/greet.py", "Hello", "Hi")
    decide(review, "accepted", all=True)
    result = review.apply()
    assert result.batch is not None and result.changeset.files == []
    rollback_batch(git_workspace, store)
    assert git(git_workspace, "status", "--porcelain") == ""
    assert not cs.exists("made.py") and "Hello" in cs.read_text("pkg/greet.py")
    cs.create("made.py", "x = 1\n")
    cs.edit("pkg/greet.py", "Hello", "Hi")
    assert [(f.path, f.status) for f in review.view().files] == [
        ("made.py", "added"),
        ("pkg/greet.py", "modified"),
    ]
    cs.forget_bases()  # what the backend does after a Roll back: the pending edits keep theirs
    assert [(f.path, f.status) for f in review.view().files] == [
        ("made.py", "added"),
        ("pkg/greet.py", "modified"),
    ]
