"""Deciding hunks answers with the view as the decisions leave it, built once: Accept all reads the
hunks it may decide off the same view it answers with, not a second scan for hidden characters."""

from __future__ import annotations

from pathlib import Path

import pytest

import ide.changes.review as review_module
from ide.changes import BatchStore, ChangeSet, Review
from ide.protocol.review import DecideParams


def test_decide_all_scans_each_hunk_once_and_answers_as_view_does(
    git_workspace: Path, store: BatchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    review = Review(ChangeSet(git_workspace), session_id="s1", title="t", store=store)
    review.changeset.edit("pkg/greet.py", "Hello", "Hi")
    review.changeset.create("docs/new.md", "a\nb\n")
    review.changeset.create(".gitattributes", "* diff=x\n")  # a meta file: left to its own accept
    hunks = sum(len(file.hunks) for file in review.view().files)
    scans = 0
    scan_hunk = review_module.scan_hunk

    def counted(*args: object) -> object:
        nonlocal scans
        scans += 1
        return scan_hunk(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(review_module, "scan_hunk", counted)
    answer = review.decide(DecideParams(session_id="s1", decision="accepted", all=True, comment="ok"))
    assert scans == hunks
    assert answer == review.view()
    decided = {file.path: [(h.decision, h.comment) for h in file.hunks] for file in answer.files}
    assert decided[".gitattributes"] == [("pending", None)]
    assert decided["pkg/greet.py"] == decided["docs/new.md"] == [("accepted", "ok")]


def big_workspace(root: Path, files: int = 300, hunks: int = 10) -> list[str]:
    """``files`` files of ``hunks`` × 12 unique lines (the benchmark's change set: bench/review.py)."""
    paths = []
    for i in range(files):
        path = f"pkg{i % 10}/mod{i}.py"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(
            "".join(f"value_{i}_{n} = {n}  # line {n}\n" for n in range(hunks * 12 + 12))
        )
        paths.append(path)
    return paths


def test_a_300_file_change_set_shows_every_hunk_and_decides_one_hunk_or_one_file(
    tmp_path: Path, store: BatchStore
) -> None:
    """The review's hunks and counts for 3,000 separated edits are what the line diff gave before its
    speed-up (each edit one hunk of 3 context lines either side), and single decisions land on their hunk."""
    root = tmp_path / "big"
    paths = big_workspace(root)
    changeset = ChangeSet(root)
    for i, path in enumerate(paths):
        for h in range(10):
            n = 6 + h * 12
            changeset.edit(
                path,
                f"value_{i}_{n} = {n}  #",
                f"value_{i}_{n} = {n * 100}  # changed\nextra_{i}_{n} = True  #",
            )
    review = Review(changeset, session_id="s1", title="t", store=store)
    view = review.view()
    assert len(view.files) == 300 and sum(len(file.hunks) for file in view.files) == 3000
    assert {(file.additions, file.deletions) for file in view.files} == {(20, 10)}
    first = next(file for file in view.files if file.path == "pkg0/mod0.py")
    assert [hunk.header for hunk in first.hunks] == [
        f"@@ -{4 + 12 * h},7 +{4 + 13 * h},8 @@" for h in range(10)
    ]
    assert first.hunks[0].lines == [
        " value_0_3 = 3  # line 3",
        " value_0_4 = 4  # line 4",
        " value_0_5 = 5  # line 5",
        "-value_0_6 = 6  # line 6",
        "+value_0_6 = 600  # changed",
        "+extra_0_6 = True  # line 6",
        " value_0_7 = 7  # line 7",
        " value_0_8 = 8  # line 8",
        " value_0_9 = 9  # line 9",
    ]
    middle = view.files[150]
    answer = review.decide(
        DecideParams(session_id="s1", decision="accepted", hunk_ids=[middle.hunks[4].id], comment="ok")
    )
    answer = review.decide(DecideParams(session_id="s1", decision="rejected", paths=[view.files[151].path]))
    decided = {
        (file.path, index, hunk.decision, hunk.comment)
        for file in answer.files
        for index, hunk in enumerate(file.hunks)
        if hunk.decision != "pending"
    }
    assert decided == {(middle.path, 4, "accepted", "ok")} | {
        (view.files[151].path, index, "rejected", None) for index in range(10)
    }
    assert [hunk.id for file in answer.files for hunk in file.hunks] == [
        hunk.id for file in view.files for hunk in file.hunks
    ]
