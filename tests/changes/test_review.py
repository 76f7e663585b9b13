"""Review and apply: decisions, checkpoints, merges with the user's edits, commit modes, rollback."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review, rollback_batch
from ide.changes.review import commit_subject
from ide.protocol.review import DecideParams
from tests.support.git import git

TEN = "".join(f"line {i}\n" for i in range(1, 21))


def decide(review: Review, decision: str, **kw: object) -> None:
    review.decide(DecideParams(session_id="s1", decision=decision, **kw))  # type: ignore[arg-type]


def make_review(root: Path, store: BatchStore, mode: str = "commit") -> Review:
    return Review(ChangeSet(root), session_id="s1", title="Tidy greetings", store=store, commit_mode=mode)


def test_view_lists_files_sorted_with_statuses_and_counts(git_workspace: Path, store: BatchStore) -> None:
    review = make_review(git_workspace, store)
    cs = review.changeset
    cs.edit("pkg/greet.py", "Hello", "Hi")
    cs.create("docs/new.md", "a\nb\n")
    cs.delete("README.md")
    cs.rename("pkg/__init__.py", "pkg/init.py")
    view = review.view()
    assert [(f.path, f.status) for f in view.files] == [
        ("README.md", "deleted"),
        ("docs/new.md", "added"),
        ("pkg/greet.py", "modified"),
        ("pkg/init.py", "renamed"),
    ]
    greet = view.files[2]
    assert (greet.additions, greet.deletions) == (1, 1)
    assert '+    return f"Hi, {name}!"' in greet.hunks[0].lines
    assert view.files[3].old_path == "pkg/__init__.py"
    with pytest.raises(ChangeError, match="no hunk"):
        decide(review, "accepted", hunk_ids=["nope"])
    with pytest.raises(ChangeError, match="not part of the change set"):
        decide(review, "accepted", paths=["nope.py"])


def test_commit_holds_only_accepted_paths(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    (root / "pkg" / "greet.py").write_text(TEN)
    (root / "README.md").write_text("# demo\n")
    git(root, "commit", "-qam", "more")
    # The user's own work in progress: one staged, one unstaged change, one untracked file.
    (root / "README.md").write_text("# demo, staged by the user\n")
    git(root, "add", "README.md")
    (root / ".gitignore").write_text("*.log\n*.tmp\n")
    (root / "scratch.txt").write_text("mine\n")

    review = make_review(root, store)
    cs = review.changeset
    cs.edit("pkg/greet.py", "line 2\n", "line two\n")
    cs.edit("pkg/greet.py", "line 19\n", "line nineteen\n")
    cs.create("pkg/added.py", "x = 1\n")
    cs.write("pkg/__init__.py", "rejected = True\n")
    view = review.view()
    greet = next(f for f in view.files if f.path == "pkg/greet.py")
    assert len(greet.hunks) == 2
    decide(review, "accepted", hunk_ids=[greet.hunks[1].id])
    decide(review, "accepted", paths=["pkg/added.py"])
    decide(review, "rejected", paths=["pkg/__init__.py"])
    result = review.apply()

    assert result.conflicts == []
    assert result.batch is not None and result.batch.paths == ["pkg/added.py", "pkg/greet.py"]
    assert (root / "pkg/greet.py").read_text() == TEN.replace("line 19\n", "line nineteen\n")
    assert (root / "pkg/__init__.py").read_text() == ""
    show = git(root, "show", "--name-only", "--format=%B", "HEAD")
    assert show.startswith("Tidy greetings\n\nArbor-Session: s1\nArbor-Batch: " + result.batch.id)
    assert show.strip().endswith("pkg/added.py\npkg/greet.py")
    assert result.batch.commit == git(root, "rev-parse", "HEAD").strip()
    status = git(root, "status", "--porcelain")
    assert sorted(status.splitlines()) == [" M .gitignore", "?? scratch.txt", "M  README.md"]
    # The unaccepted hunk stays pending, against the new base; the rejected file left the review.
    [remaining] = result.changeset.files
    assert remaining.path == "pkg/greet.py" and [h.decision for h in remaining.hunks] == ["pending"]
    assert "+line two" in remaining.hunks[0].lines
    assert store.history(root)[0].id == result.batch.id


@pytest.mark.parametrize("mode", ["stage", "none"])
def test_stage_and_none_modes(git_workspace: Path, store: BatchStore, mode: str) -> None:
    head = git(git_workspace, "rev-parse", "HEAD")
    review = make_review(git_workspace, store, mode)
    review.changeset.edit("README.md", "hello", "hi")
    decide(review, "accepted", all=True)
    result = review.apply()
    assert result.batch is not None and result.batch.commit is None
    assert git(git_workspace, "rev-parse", "HEAD") == head
    expected = "M  README.md" if mode == "stage" else " M README.md"
    assert git(git_workspace, "status", "--porcelain").splitlines() == [expected]
    assert rollback_batch(git_workspace, store).restored == ["README.md"]
    assert git(git_workspace, "status", "--porcelain").splitlines() in ([], ["M  README.md"])
    assert (git_workspace / "README.md").read_text() == "# demo\n\nSays hello.\n"


def test_user_edit_elsewhere_in_the_file_is_merged(git_workspace: Path, store: BatchStore) -> None:
    path = git_workspace / "pkg" / "greet.py"
    path.write_text(TEN)
    review = make_review(git_workspace, store)
    review.changeset.edit("pkg/greet.py", "line 2\n", "line two\n")
    path.write_text(TEN.replace("line 18\n", "line 18 (mine)\n"))
    decide(review, "accepted", all=True)
    result = review.apply()
    assert result.conflicts == []
    assert path.read_text() == TEN.replace("line 2\n", "line two\n").replace("line 18\n", "line 18 (mine)\n")
    assert result.changeset.files == []


def test_overlapping_user_edit_is_a_conflict_and_nothing_is_lost(
    git_workspace: Path, store: BatchStore
) -> None:
    path = git_workspace / "pkg" / "greet.py"
    review = make_review(git_workspace, store)
    review.changeset.edit("pkg/greet.py", "Hello", "Hi")
    review.changeset.create("other.txt", "x\n")
    head = git(git_workspace, "rev-parse", "HEAD")
    mine = 'def greet(name):\n    return f"Howdy, {name}!"\n'
    path.write_text(mine)
    decide(review, "accepted", all=True)
    result = review.apply()
    [conflict] = result.conflicts
    assert conflict.path == "pkg/greet.py" and "changed on disk" in conflict.message
    assert "<<<<<<<" in (conflict.merged or "") and "Howdy" in conflict.merged and "Hi," in conflict.merged
    assert path.read_text() == mine
    # The agent's version waits in the review, pending and flagged; the other file went through.
    [waiting] = result.changeset.files
    assert waiting.conflict and [h.decision for h in waiting.hunks] == ["pending"]
    assert 'return f"Hi, {name}!"' in review.changeset.read_text("pkg/greet.py")
    assert result.batch is not None and result.batch.paths == ["other.txt"]
    assert git(git_workspace, "rev-parse", "HEAD^") == head


def test_renames_deletes_and_rollback_in_git(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    os.chmod(root / "pkg/greet.py", 0o755)
    git(root, "commit", "-qam", "exec")
    review = make_review(root, store)
    cs = review.changeset
    cs.rename("pkg/greet.py", "pkg/hello.py")
    cs.edit("pkg/hello.py", "Hello", "Hi")
    cs.delete("README.md")
    decide(review, "accepted", all=True)
    result = review.apply("Rename greet")
    assert not (root / "pkg/greet.py").exists() and not (root / "README.md").exists()
    assert stat.S_IMODE((root / "pkg/hello.py").stat().st_mode) == 0o755
    assert git(root, "status", "--porcelain") == ""
    assert result.batch is not None
    rolled = rollback_batch(root, store)
    assert rolled.refused == [] and rolled.batch.rolled_back
    assert rolled.restored == ["README.md", "pkg/greet.py", "pkg/hello.py"]
    assert stat.S_IMODE((root / "pkg/greet.py").stat().st_mode) == 0o755
    assert not (root / "pkg/hello.py").exists()
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "-1", "--format=%s").startswith("Revert Arbor batch")
    with pytest.raises(ChangeError, match="nothing to roll back"):
        rollback_batch(root, store)


def test_rollback_merges_or_refuses_later_user_edits(git_workspace: Path, store: BatchStore) -> None:
    path = git_workspace / "pkg" / "greet.py"
    path.write_text(TEN)
    git(git_workspace, "commit", "-qam", "ten")
    review = make_review(git_workspace, store)
    review.changeset.edit("pkg/greet.py", "line 2\n", "line two\n")
    decide(review, "accepted", all=True)
    first = review.apply().batch
    assert first is not None
    path.write_text(path.read_text().replace("line 19\n", "line 19 (mine)\n"))
    result = rollback_batch(git_workspace, store, first.id)
    assert result.restored == ["pkg/greet.py"]
    assert path.read_text() == TEN.replace("line 19\n", "line 19 (mine)\n")

    review = make_review(git_workspace, store)
    review.changeset.edit("pkg/greet.py", "line 5\n", "line five\n")
    decide(review, "accepted", all=True)
    second = review.apply().batch
    assert second is not None
    overlapping = path.read_text().replace("line five\n", "line 5 (mine)\n")
    path.write_text(overlapping)
    refused = rollback_batch(git_workspace, store)
    assert [c.path for c in refused.refused] == ["pkg/greet.py"] and not refused.batch.rolled_back
    assert path.read_text() == overlapping


def test_non_git_workspace_apply_and_rollback(plain_workspace: Path, store: BatchStore) -> None:
    root = plain_workspace
    before = {p: (root / p).read_bytes() for p in ("src/a.py", "notes.txt")}
    review = make_review(root, store)
    review.changeset.edit("notes.txt", "beta", "BETA")
    review.changeset.edit("src/a.py", "two", "2")
    review.changeset.create("src/b.py", "b\n")
    decide(review, "accepted", all=True)
    result = review.apply()
    assert result.batch is not None and result.batch.commit is None
    assert (root / "notes.txt").read_bytes() == b"alpha\r\nBETA\r\n"
    assert (root / "src/b.py").exists()
    assert any((store.blob_dir).rglob("*"))
    assert [b.id for b in store.history(root)] == [result.batch.id]
    rolled = rollback_batch(root, store)
    assert rolled.refused == []
    assert {p: (root / p).read_bytes() for p in before} == before
    assert not (root / "src/b.py").exists()
    assert store.get(result.batch.id).rolled_back  # type: ignore[union-attr]


def test_rename_and_content_are_decided_separately(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    review = make_review(root, store)
    review.changeset.rename("pkg/greet.py", "pkg/hello.py")
    review.changeset.edit("pkg/hello.py", "Hello", "Hi")
    [change] = review.view().files
    rename, content = change.hunks
    assert rename.header == "Rename" and content.header.startswith("@@")
    decide(review, "accepted", hunk_ids=[content.id], comment="good")
    result = review.apply()
    # The content went to the file where it is; the rename still waits.
    assert "Hi, {name}" in (root / "pkg/greet.py").read_text() and not (root / "pkg/hello.py").exists()
    [waiting] = result.changeset.files
    assert waiting.status == "renamed" and [h.header for h in waiting.hunks] == ["Rename"]
    decide(review, "accepted", all=True)
    result = review.apply()
    assert not (root / "pkg/greet.py").exists() and "Hi, {name}" in (root / "pkg/hello.py").read_text()
    assert result.changeset.files == [] and git(root, "status", "--porcelain") == ""


def test_comments_are_kept_and_rejected_files_leave_without_a_batch(
    git_workspace: Path, store: BatchStore
) -> None:
    review = make_review(git_workspace, store)
    review.changeset.edit("README.md", "hello", "hi")
    [hunk] = review.view().files[0].hunks
    view = review.decide(
        DecideParams(session_id="s1", decision="rejected", hunk_ids=[hunk.id], comment="keep it")
    )
    assert view.files[0].hunks[0].comment == "keep it" and view.files[0].hunks[0].decision == "rejected"
    result = review.apply()
    assert result.batch is None and result.changeset.files == []
    assert review.changeset.read_text("README.md") == "# demo\n\nSays hello.\n"
    assert store.history(git_workspace) == []


def test_binary_files_are_one_whole_file_hunk(git_workspace: Path, store: BatchStore) -> None:
    (git_workspace / "logo.bin").write_bytes(b"\x00\x01old")
    review = make_review(git_workspace, store, "none")
    review.changeset.write_bytes("logo.bin", b"\x00\x02new")
    [change] = review.view().files
    assert change.binary and len(change.hunks) == 1 and change.hunks[0].lines == []
    decide(review, "accepted", all=True)
    batch = review.apply().batch
    assert (git_workspace / "logo.bin").read_bytes() == b"\x00\x02new"
    assert batch is not None
    rollback_batch(git_workspace, store, batch.id)
    assert (git_workspace / "logo.bin").read_bytes() == b"\x00\x01old"


def test_workspace_in_a_subdirectory_of_the_repository(git_workspace: Path, store: BatchStore) -> None:
    sub = git_workspace / "pkg"
    review = make_review(sub, store)
    review.changeset.edit("greet.py", "Hello", "Hi")
    decide(review, "accepted", all=True)
    batch = review.apply().batch
    assert batch is not None and batch.paths == ["greet.py"]
    assert git(git_workspace, "show", "--name-only", "--format=", "HEAD").split() == ["pkg/greet.py"]
    assert git(git_workspace, "status", "--porcelain") == ""
    rollback_batch(sub, store)
    assert "Hello" in (sub / "greet.py").read_text()
    assert git(git_workspace, "status", "--porcelain") == ""


def test_deleting_the_only_file_keeps_the_workspace_root(tmp_path: Path, store: BatchStore) -> None:
    root = tmp_path / "solo"
    (root / "d").mkdir(parents=True)
    (root / "d" / "only.bin").write_bytes(b"\x00data")
    review = make_review(root, store)
    review.changeset.rename("d/only.bin", "moved.bin")
    decide(review, "accepted", all=True)
    review.apply()
    assert (root / "moved.bin").read_bytes() == b"\x00data" and not (root / "d").exists()
    review.changeset.delete("moved.bin")
    decide(review, "accepted", all=True)
    review.apply()
    assert root.is_dir() and list(root.iterdir()) == []
    rollback_batch(root, store)
    rollback_batch(root, store)
    assert (root / "d" / "only.bin").read_bytes() == b"\x00data" and not (root / "moved.bin").exists()


def test_commit_subject_of_a_long_prompt_ends_at_a_word_with_an_ellipsis(
    git_workspace: Path, store: BatchStore
) -> None:
    prompt = (
        "Add a --verbose flag to the greeting command that prints every greeting it makes, "
        "with timestamps, and document it"
    )
    review = Review(
        ChangeSet(git_workspace),
        session_id="s1",
        title=prompt,
        store=store,
        commit_mode="commit",
    )
    review.changeset.edit("pkg/greet.py", "Hello", "Hi")
    decide(review, "accepted", paths=["pkg/greet.py"])
    assert review.apply().batch is not None
    subject = git(git_workspace, "log", "-1", "--format=%s").strip()
    assert subject == "Add a --verbose flag to the greeting command that prints every…"
    assert len(subject) <= 72 and prompt.startswith(subject[:-1])


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("Fix the bug", "Fix the bug"),
        ("\n  Fix   the\tbug  \nand more lines", "Fix the bug"),
        ("", None),
        ("x" * 80, "x" * 71 + "…"),
        ("word " * 20, "word word word word word word word word word word word word word word…"),
    ],
)
def test_commit_subject_cuts_at_word_boundaries(text: str, subject: str | None) -> None:
    assert commit_subject(text) == subject
    assert subject is None or len(subject) <= 72
