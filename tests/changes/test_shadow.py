"""The shadow workspace of a foreign agent, on real git repositories: what it holds when made, what a
capture finds (edits, creations, deletions, binary files), rejected hunks reverted, the user's edits taken
in, the worktree removed — and a hostile repository's links and names neither followed nor lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeSet, Review
from ide.changes.overlay import Base
from ide.changes.shadow import Shadow
from ide.protocol.review import DecideParams
from tests.support.git import git

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


@pytest.fixture
def shadow(git_workspace: Path) -> Shadow:
    (git_workspace / "pkg" / "greet.py").write_text(GREET + "# the user's edit\n")
    (git_workspace / "notes.txt").write_text("not committed yet\n")
    made = Shadow.create(git_workspace)
    yield made
    made.close()


def test_the_shadow_holds_head_and_the_users_uncommitted_files_but_no_ignored_ones(
    git_workspace: Path, shadow: Shadow
) -> None:
    assert shadow.root != git_workspace and str(git_workspace) not in str(shadow.root)
    assert (shadow.root / "pkg" / "greet.py").read_text() == GREET + "# the user's edit\n"
    assert (shadow.root / "notes.txt").read_text() == "not committed yet\n"
    assert not (shadow.root / "debug.log").exists()  # ignored: never copied
    assert shadow.capture().changes == {}


def test_a_capture_finds_edits_creations_deletions_and_binary_files(
    git_workspace: Path, shadow: Shadow
) -> None:
    (shadow.root / "pkg" / "greet.py").write_text("changed\n")
    (shadow.root / "made.py").write_text("print(1)\n")
    (shadow.root / "README.md").unlink()
    (shadow.root / "logo.bin").write_bytes(b"\x00\x01\x02")
    (shadow.root / "trace.log").write_text("ignored\n")
    os.chmod(shadow.root / "notes.txt", 0o755)
    found = shadow.capture()
    assert set(found.changes) == {"pkg/greet.py", "made.py", "README.md", "logo.bin", "notes.txt"}
    assert found.changes["pkg/greet.py"] == (
        Base((GREET + "# the user's edit\n").encode(), 0o644),
        Base(b"changed\n", 0o644),
    )
    assert found.changes["README.md"][1] == Base(None, None)
    assert found.changes["made.py"][0] == Base(None, None)
    assert found.changes["notes.txt"][1].mode == 0o755
    # The workspace itself never moved.
    assert not (git_workspace / "made.py").exists() and (git_workspace / "README.md").exists()


def test_what_the_agent_commits_or_stages_in_the_shadow_is_still_captured(shadow: Shadow) -> None:
    (shadow.root / "committed.py").write_text("x = 1\n")
    git(shadow.root, "add", "-A")
    git(shadow.root, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "agent")
    assert "committed.py" in shadow.capture().changes


def test_a_capture_fills_a_change_set_that_review_applies_to_the_workspace(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    (shadow.root / "made.py").write_text("print(1)\n")
    changeset = ChangeSet(git_workspace)
    shadow.fill(changeset)
    review = Review(changeset, session_id="s", title="shadow", store=BatchStore(tmp_path / "data"))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    result = review.apply()
    assert result.batch is not None and result.batch.commit
    assert (git_workspace / "made.py").read_text() == "print(1)\n"
    assert git(git_workspace, "show", "HEAD:made.py") == "print(1)\n"


def test_a_rejected_hunk_is_reverted_in_the_shadow_and_applied_ones_become_the_baseline(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    lines = [f"line {n}\n" for n in range(40)]
    (git_workspace / "long.txt").write_text("".join(lines))
    git(git_workspace, "add", "long.txt")
    git(git_workspace, "commit", "-qm", "long")
    fresh = Shadow.create(git_workspace)
    try:
        edited = list(lines)
        edited[2], edited[35] = "first edit\n", "second edit\n"
        (fresh.root / "long.txt").write_text("".join(edited))
        changeset = ChangeSet(git_workspace)
        fresh.fill(changeset)
        review = Review(changeset, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
        first, second = review.view().files[0].hunks
        review.decide(DecideParams(session_id="s", decision="accepted", hunk_ids=[first.id]))
        review.decide(DecideParams(session_id="s", decision="rejected", hunk_ids=[second.id]))
        review.apply()
        assert fresh.settle(review) == ["long.txt"]
        expected = list(lines)
        expected[2] = "first edit\n"
        assert (fresh.root / "long.txt").read_text() == "".join(expected)  # the rejected hunk is gone
        assert (git_workspace / "long.txt").read_text() == "".join(expected)
        assert fresh.capture().changes == {}  # what was applied is the new baseline
    finally:
        fresh.close()


def test_the_users_edits_are_taken_in_and_merged_with_the_agents(git_workspace: Path, shadow: Shadow) -> None:
    readme = "# demo\n\nSays hello.\n"
    (shadow.root / "README.md").write_text(readme + "agent's line\n")
    (git_workspace / "README.md").write_text("# demo by the user\n\nSays hello.\n")
    (git_workspace / "later.txt").write_text("the user made this after\n")
    assert shadow.take_in() == []
    assert (shadow.root / "README.md").read_text() == "# demo by the user\n\nSays hello.\nagent's line\n"
    assert (shadow.root / "later.txt").read_text() == "the user made this after\n"
    found = shadow.capture().changes
    # Only the agent's change is left: the user's own edits are the baseline now.
    assert set(found) == {"README.md"}
    assert found["README.md"][0].data == b"# demo by the user\n\nSays hello.\n"


def test_an_overlapping_user_edit_is_reported_and_the_agents_version_kept(
    git_workspace: Path, shadow: Shadow
) -> None:
    (shadow.root / "README.md").write_text("agent\n")
    (git_workspace / "README.md").write_text("user\n")
    assert shadow.take_in() == ["README.md"]
    assert (shadow.root / "README.md").read_text() == "agent\n"


def test_close_removes_the_shadow(git_workspace: Path) -> None:
    made = Shadow.create(git_workspace)
    made.close()
    made.close()
    assert not made.tmp.exists()
    assert str(made.top) not in git(git_workspace, "worktree", "list")


def test_a_workspace_below_the_repository_top_gets_only_its_own_paths(git_workspace: Path) -> None:
    made = Shadow.create(git_workspace / "pkg")
    try:
        assert made.root.name == "pkg" and (made.root / "greet.py").exists()
        (made.root / "new.py").write_text("x\n")
        (made.top / "outside.py").write_text("x\n")
        assert set(made.capture().changes) == {"new.py"}
    finally:
        made.close()


def test_links_are_neither_followed_nor_captured_as_files(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("private\n")
    (shadow.root / "pkg").rename(shadow.root / "pkg-moved")
    (shadow.root / "pkg").symlink_to(outside)  # pkg/greet.py now "exists" outside the shadow
    (shadow.root / "link.txt").symlink_to(outside / "secret.txt")
    found = shadow.capture()
    assert "link.txt" in found.skipped and "link.txt" not in found.changes
    assert "pkg/greet.py" in found.skipped
    assert all(b"private" not in (now.data or b"") for _, now in found.changes.values())
    # A revert never writes through the link either.
    with pytest.raises(Exception, match="symbolic link"):
        shadow.put("pkg/greet.py", Base(b"x\n", 0o644))
    assert (outside / "secret.txt").read_text() == "private\n" and not (outside / "greet.py").exists()


def test_a_users_link_to_outside_is_not_copied_into_the_shadow(git_workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("private\n")
    (git_workspace / "leak.txt").symlink_to(tmp_path / "secret.txt")
    made = Shadow.create(git_workspace)
    try:
        assert not (made.root / "leak.txt").exists() and not (made.root / "leak.txt").is_symlink()
        assert any("leak.txt" in note for note in made.notes)
    finally:
        made.close()


@pytest.mark.parametrize("name", ["-rf", "a b.txt", "ünïcode.py", "new\nline.txt", "--help", "x;rm -rf ~"])
def test_hostile_file_names_are_captured_as_they_are(shadow: Shadow, name: str) -> None:
    (shadow.root / name).write_text("x\n")
    assert set(shadow.capture().changes) == {name}


def test_a_fifo_the_agent_makes_does_not_hang_the_capture(shadow: Shadow) -> None:
    os.mkfifo(shadow.root / "pipe")
    found = shadow.capture()  # opening the pipe to read it would block for good (it has no writer)
    assert "pipe" not in found.changes  # git lists no special files; a read of one would be refused


def test_a_file_that_became_a_directory_and_a_directory_that_became_a_file_are_both_seen(
    shadow: Shadow,
) -> None:
    (shadow.root / "README.md").unlink()
    (shadow.root / "README.md").mkdir()
    (shadow.root / "README.md" / "index.md").write_text("x\n")
    for child in (shadow.root / "pkg").iterdir():
        child.unlink()
    (shadow.root / "pkg").rmdir()
    (shadow.root / "pkg").write_text("now a file\n")
    found = shadow.capture().changes
    assert found["README.md"][1] == Base(None, None) and found["README.md/index.md"][0] == Base(None, None)
    assert found["pkg/greet.py"][1] == Base(None, None) and found["pkg"][1].data == b"now a file\n"


def test_workspace_changes_name_what_changed_in_the_workspace_itself(
    git_workspace: Path, shadow: Shadow
) -> None:
    assert shadow.workspace_changes() == []
    (git_workspace / "README.md").write_text("changed behind the shadow\n")
    (git_workspace / "notes.txt").unlink()  # the user's uncommitted file, gone
    (git_workspace / "new.py").write_text("x\n")
    (git_workspace / "ignored.log").write_text("x\n")
    assert shadow.workspace_changes() == ["README.md", "new.py", "notes.txt"]


def test_a_moved_file_is_captured_as_a_rename_and_a_rejected_rename_is_moved_back(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    (shadow.root / "README.md").rename(shadow.root / "GUIDE.md")  # moved as it is
    edited = (GREET + "# the user's edit\n").replace("Hello", "Hi")
    (shadow.root / "pkg" / "greet.py").unlink()  # moved and edited: still mostly the same lines
    (shadow.root / "pkg" / "greeting.py").write_text(edited)
    changeset = ChangeSet(git_workspace)
    shadow.fill(changeset)
    review = Review(changeset, session_id="s", title="shadow", store=BatchStore(tmp_path / "data"))
    files = {f.path: f for f in review.view().files}
    assert set(files) == {"GUIDE.md", "pkg/greeting.py"}
    assert (files["GUIDE.md"].status, files["GUIDE.md"].old_path) == ("renamed", "README.md")
    assert len(files["GUIDE.md"].hunks) == 1 and files["GUIDE.md"].additions == 0  # the move alone
    greeting = files["pkg/greeting.py"]
    assert (greeting.status, greeting.old_path) == ("renamed", "pkg/greet.py")
    assert len(greeting.hunks) == 2 and (greeting.additions, greeting.deletions) == (1, 1)

    # Reject the plain move, accept the other: the next turn finds README.md back, greeting.py kept.
    [guide_move] = files["GUIDE.md"].hunks
    review.decide(DecideParams(session_id="s", decision="rejected", hunk_ids=[guide_move.id]))
    review.decide(DecideParams(session_id="s", decision="accepted", paths=["pkg/greeting.py"]))
    shadow.settle(review)
    assert (shadow.root / "README.md").exists() and not (shadow.root / "GUIDE.md").exists()
    assert (shadow.root / "pkg" / "greeting.py").read_text() == edited
    assert not (shadow.root / "pkg" / "greet.py").exists()
    # Applied, the workspace gets the accepted rename and keeps README.md.
    result = review.apply()
    assert result.conflicts == [] and not (git_workspace / "pkg" / "greet.py").exists()
    assert (git_workspace / "pkg" / "greeting.py").read_text() == edited
    assert (git_workspace / "README.md").exists() and not (git_workspace / "GUIDE.md").exists()


def test_what_apply_wrote_is_not_taken_for_a_write_outside_review(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    (shadow.root / "made.py").write_text("print(1)\n")
    changeset = ChangeSet(git_workspace)
    shadow.fill(changeset)
    review = Review(changeset, session_id="s", title="shadow", store=BatchStore(tmp_path / "data"))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    assert review.apply().conflicts == []
    assert shadow.workspace_changes(changeset) == []  # Apply wrote it: the review's own write
    assert shadow.workspace_changes() == ["made.py"]  # without the change set, it is not known
    (git_workspace / "made.py").write_text("print(2)\n")  # the user's edit after that is
    assert shadow.workspace_changes(changeset) == ["made.py"]


def test_a_hunk_rejected_at_apply_stays_rejected_through_later_captures(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    (shadow.root / "made.py").write_text("print(1)\n")
    (shadow.root / "README.md").write_text("rewritten by the agent\n")
    changeset = ChangeSet(git_workspace)
    shadow.fill(changeset)
    review = Review(changeset, session_id="s", title="shadow", store=BatchStore(tmp_path / "data"))
    review.decide(DecideParams(session_id="s", decision="accepted", paths=["made.py"]))
    review.decide(DecideParams(session_id="s", decision="rejected", paths=["README.md"]))
    shadow.settle(review)  # what the backend does before and after an Apply of a shadow's review
    assert review.apply().conflicts == []
    shadow.settle(review)
    shadow.fill(changeset)  # a capture before the next turn finds nothing new
    assert [f.path for f in review.view().files] == []
    assert (shadow.root / "README.md").read_text() == (git_workspace / "README.md").read_text()


def test_a_rejected_mode_change_is_undone_in_the_shadow_and_not_captured_again(
    git_workspace: Path, shadow: Shadow, tmp_path: Path
) -> None:
    script = shadow.root / "pkg" / "greet.py"
    script.write_text(GREET + "# the user's edit\n# and the agent's\n")
    script.chmod(0o755)  # a shell chmod +x with an edit
    changeset = ChangeSet(git_workspace)
    shadow.fill(changeset)
    review = Review(changeset, session_id="s", title="shadow", store=BatchStore(tmp_path / "data"))
    [greet] = review.view().files
    kinds = {hunk.kind: hunk for hunk in greet.hunks}
    assert set(kinds) == {"mode", "text"}
    review.decide(DecideParams(session_id="s", decision="rejected", hunk_ids=[kinds["mode"].id]))
    review.decide(DecideParams(session_id="s", decision="accepted", hunk_ids=[kinds["text"].id]))
    shadow.settle(review)
    assert os.stat(script).st_mode & 0o777 == 0o644  # the mode goes back, the accepted edit stays
    assert script.read_text().endswith("# and the agent's\n")
    shadow.fill(changeset)
    [again] = review.view().files
    assert [hunk.kind for hunk in again.hunks] == ["text"]
