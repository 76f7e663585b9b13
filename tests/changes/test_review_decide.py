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
