"""A file's mode as git records it (100644 or 100755) is a review item of its own (issue 46, item 3).

On main a shell's ``chmod +x`` in a foreign agent's shadow showed as "modified, no text changes", Accept
file + Apply wrote nothing and left it pending, and ``arbor run`` printed an empty ``diff --git`` header. Here
the change set is fed as the shadow feeds it (``rebase`` to the baseline, ``set_entry`` of what the shadow
holds), and the mode item is accepted, rejected, left pending and rolled back like a hunk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeSet, Review, rollback_batch
from ide.changes.overlay import Base, Entry
from ide.protocol.review import ChangeSetView, DecideParams, FileChangeView, unified_diff
from tests.support.git import git

GREET = "pkg/greet.py"


def captured(root: Path, rel: str, data: bytes | None = None, mode: int = 0o755) -> ChangeSet:
    """A change set holding what a shadow capture of ``rel`` gives: the workspace's file as the base, the
    shadow's bytes (unchanged unless ``data``) with ``mode`` as the entry."""
    changes = ChangeSet(root)
    path = root / rel
    base = Base(path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    changes.rebase(rel, base)
    changes.set_entry(rel, Entry(base.data if data is None else data, mode))
    return changes


def review_of(changes: ChangeSet, store: BatchStore) -> Review:
    return Review(changes, session_id="s", title="Make it runnable", store=store)


def decide(review: Review, decision: str, hunk_ids: list[str]) -> ChangeSetView:
    return review.decide(DecideParams(session_id="s", decision=decision, hunk_ids=hunk_ids))  # type: ignore[arg-type]


def only_file(view: ChangeSetView) -> FileChangeView:
    assert len(view.files) == 1, view.files
    return view.files[0]


def mode_on_disk(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def committed_mode(root: Path, rel: str, rev: str = "HEAD") -> str:
    return git(root, "ls-tree", rev, "--", rel).split(" ", 1)[0]


def test_a_mode_change_alone_is_a_mode_item_that_applies_commits_and_rolls_back(
    git_workspace: Path, store: BatchStore
) -> None:
    root = git_workspace
    before = (root / GREET).read_bytes()
    review = review_of(captured(root, GREET), store)
    file = only_file(review.view())
    assert (file.status, file.old_mode, file.new_mode, file.additions, file.deletions) == (
        "modified",
        "100644",
        "100755",
        0,
        0,
    )
    [item] = file.hunks
    assert item.kind == "mode" and item.lines == []
    assert item.header.startswith("old mode 100644 → new mode 100755")
    # The window's summaries and the hunks it asks for carry it too.
    assert [hunk.kind for hunk in only_file(review.view(summary=True)).hunks] == ["mode"]
    assert [hunk.id for f in review.hunks([GREET]) for hunk in f.hunks] == [item.id]

    decide(review, "accepted", [item.id])
    result = review.apply()
    assert result.batch is not None and result.batch.paths == [GREET] and result.batch.commit
    assert result.changeset.files == []
    assert (root / GREET).read_bytes() == before and mode_on_disk(root / GREET) == 0o755
    assert committed_mode(root, GREET) == "100755"
    assert git(root, "diff", "HEAD^", "HEAD", "--", GREET) == (
        "diff --git a/pkg/greet.py b/pkg/greet.py\nold mode 100644\nnew mode 100755\n"
    )
    assert git(root, "status", "--porcelain") == ""

    rolled = rollback_batch(root, store)
    assert rolled.restored == [GREET] and not rolled.refused
    assert (root / GREET).read_bytes() == before and mode_on_disk(root / GREET) == 0o644
    assert committed_mode(root, GREET) == "100644"
    assert git(root, "status", "--porcelain") == ""


def test_a_rejected_mode_change_writes_nothing_and_leaves_the_review(
    git_workspace: Path, store: BatchStore
) -> None:
    root = git_workspace
    head = git(root, "rev-parse", "HEAD")
    review = review_of(captured(root, GREET), store)
    [item] = only_file(review.view()).hunks
    decide(review, "rejected", [item.id])
    result = review.apply()
    assert result.batch is None and result.changeset.files == []
    assert mode_on_disk(root / GREET) == 0o644 and git(root, "rev-parse", "HEAD") == head


NEW_TEXT = b'def greet(name):\n    return f"Hi, {name}!"\n'


@pytest.mark.parametrize(
    ("text", "mode", "disk_mode", "left"),
    [
        ("accepted", "accepted", 0o755, []),
        ("accepted", "rejected", 0o644, []),
        ("accepted", "pending", 0o644, ["mode"]),
        ("pending", "accepted", 0o755, ["text"]),
        ("rejected", "pending", 0o644, ["mode"]),
    ],
)
def test_content_and_mode_are_decided_apart(
    git_workspace: Path, store: BatchStore, text: str, mode: str, disk_mode: int, left: list[str]
) -> None:
    root = git_workspace
    before = (root / GREET).read_bytes()
    review = review_of(captured(root, GREET, NEW_TEXT), store)
    file = only_file(review.view())
    kinds = {hunk.kind: hunk.id for hunk in file.hunks}
    assert [hunk.kind for hunk in file.hunks] == ["mode", "text"]
    for kind, decision in (("text", text), ("mode", mode)):
        if decision != "pending":
            decide(review, decision, [kinds[kind]])
    result = review.apply()
    batches = [result.batch.id] if result.batch is not None else []
    written = NEW_TEXT if text == "accepted" else before
    assert (root / GREET).read_bytes() == written and mode_on_disk(root / GREET) == disk_mode
    if result.batch is not None:
        assert committed_mode(root, GREET) == ("100755" if disk_mode == 0o755 else "100644")
        assert git(root, "show", f"HEAD:{GREET}").encode() == written
    remaining = [hunk.kind for f in result.changeset.files for hunk in f.hunks]
    assert remaining == left
    if left:  # what stays pending applies later on its own
        [item] = only_file(result.changeset).hunks
        decide(review, "accepted", [item.id])
        again = review.apply()
        assert again.batch is not None and again.changeset.files == []
        batches.append(again.batch.id)
        assert (root / GREET).read_bytes() == (NEW_TEXT if "text" in left else written)
        assert mode_on_disk(root / GREET) == (0o755 if "mode" in left or mode == "accepted" else 0o644)
        assert git(root, "status", "--porcelain") == ""
    for batch in reversed(batches):  # Roll back puts bytes and mode back, on disk and in git
        assert not rollback_batch(root, store, batch).refused
    assert (root / GREET).read_bytes() == before and mode_on_disk(root / GREET) == 0o644
    assert committed_mode(root, GREET) == "100644" and git(root, "status", "--porcelain") == ""


def test_a_rollback_after_the_user_edited_the_file_still_restores_its_mode(
    git_workspace: Path, store: BatchStore
) -> None:
    root = git_workspace
    review = review_of(captured(root, GREET), store)
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    assert review.apply().batch is not None
    with (root / GREET).open("a") as handle:
        handle.write("# the user's line\n")
    rolled = rollback_batch(root, store)
    assert rolled.restored == [GREET] and not rolled.refused
    assert (root / GREET).read_text().endswith("# the user's line\n")
    assert mode_on_disk(root / GREET) == 0o644 and committed_mode(root, GREET) == "100644"


def test_the_printed_diff_says_the_modes_as_git_does(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    alone = unified_diff(review_of(captured(root, GREET), store).view())
    assert alone == "diff --git a/pkg/greet.py b/pkg/greet.py\nold mode 100644\nnew mode 100755\n"
    with_text = unified_diff(review_of(captured(root, GREET, NEW_TEXT), store).view())
    assert with_text.startswith(
        "diff --git a/pkg/greet.py b/pkg/greet.py\nold mode 100644\nnew mode 100755\n"
        "--- a/pkg/greet.py\n+++ b/pkg/greet.py\n@@ "
    )
    assert "old mode 100644 →" not in with_text  # the item's header is the window's, not a diff line
    back = captured(root, GREET, mode=0o644)
    back.rebase(GREET, Base((root / GREET).read_bytes(), 0o755))
    assert "old mode 100755\nnew mode 100644\n" in unified_diff(review_of(back, store).view())


def test_permission_bits_git_does_not_record_are_no_change(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    assert captured(root, GREET, mode=0o664).changed_paths() == []
    assert captured(root, GREET, mode=0o744).changed_paths() == [GREET]


def test_arbor_s_own_edits_keep_the_file_s_mode(git_workspace: Path, store: BatchStore) -> None:
    root = git_workspace
    os.chmod(root / "README.md", 0o600)  # a private file stays private
    os.chmod(root / GREET, 0o755)
    git(root, "commit", "-qam", "modes")
    changes = ChangeSet(root)
    changes.edit(GREET, "Hello", "Hi")
    changes.edit("README.md", "demo", "demo app")
    review = review_of(changes, store)
    view = review.view()
    assert [hunk.kind for f in view.files for hunk in f.hunks] == ["text", "text"]
    assert all(f.old_mode is None and f.new_mode is None for f in view.files)
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    assert review.apply().batch is not None
    assert mode_on_disk(root / GREET) == 0o755 and mode_on_disk(root / "README.md") == 0o600
    assert committed_mode(root, GREET) == "100755" and committed_mode(root, "README.md") == "100644"
