"""A change set sent as a summary (every file's counts, hunk ids and decisions; the first screen's, commented
and hiding hunks in full) and the hunks fetched later: the same hunks, ids and decisions as the full view,
and decisions on hunks fetched later apply exactly those hunks."""

from __future__ import annotations

import json
from pathlib import Path

from ide.changes import BatchStore, ChangeSet, Review
from ide.protocol.review import FIRST_SCREEN_HUNKS, ChangeSetView, DecideParams
from tests.support.git import git

FILES = 40
HUNKS = 3


def module(i: int) -> str:
    return "".join(f"value_{i}_{n} = {n}  # line {n}\n" for n in range(HUNKS * 12 + 12))


def edited(root: Path, store: BatchStore) -> Review:
    """``FILES`` files of ``HUNKS`` separate one-line edits each, committed in a git repository at ``root``;
    file 35's second edit adds a right-to-left override (a hunk that hides characters)."""
    for i in range(FILES):
        (root / "pkg" / f"mod{i:02d}.py").parent.mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"mod{i:02d}.py").write_text(module(i))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    changeset = ChangeSet(root)
    for i in range(FILES):
        for h in range(HUNKS):
            n = 6 + h * 12
            mark = "\u202e" if (i, h) == (35, 1) else ""
            changeset.edit(f"pkg/mod{i:02d}.py", f"value_{i}_{n} = {n}  #", f"value_{i}_{n} = {n}{mark}0  #")
    return Review(changeset, session_id="s1", title="t", store=store)


def check_against_full(summary: ChangeSetView, full: ChangeSetView) -> list[str]:
    """``summary`` says what ``full`` does, file by file; the paths it left the hunks out of."""
    left_out = []
    assert [f.path for f in summary.files] == [f.path for f in full.files]
    for short, whole in zip(summary.files, full.files, strict=True):
        if short.summarised:
            left_out.append(short.path)
            assert short.hunks == []
            assert short.hunk_ids == [h.id for h in whole.hunks]
            assert short.decisions == [h.decision for h in whole.hunks]
            assert (
                short.model_copy(update={"hunk_ids": None, "decisions": None, "hunks": whole.hunks}) == whole
            )
        else:
            assert short == whole
    return left_out


def test_a_summary_says_what_the_full_view_does_and_the_hunks_come_on_request(
    tmp_path: Path, store: BatchStore
) -> None:
    review = edited(tmp_path / "repo", store)
    paths = [f"pkg/mod{i:02d}.py" for i in range(FILES)]
    review.decide(DecideParams(session_id="s1", decision="accepted", paths=[paths[31]]))
    full = review.view()
    review.decide(
        DecideParams(
            session_id="s1", decision="rejected", hunk_ids=[full.files[30].hunks[2].id], comment="no"
        )
    )
    full = review.view()
    assert full.files[35].hunks[1].hidden and not full.files[35].hunks[0].hidden

    summary = review.view(summary=True)
    left_out = check_against_full(summary, full)
    first_screen = -(-FIRST_SCREEN_HUNKS // HUNKS)  # whole files until that many hunks
    # In full: the first screen, the file with a comment, the file whose hunk hides characters.
    assert left_out == [p for i, p in enumerate(paths) if i >= first_screen and i not in (30, 35)]
    assert summary.files[31].decisions == ["accepted"] * HUNKS
    # The wire carries the bodies of the files shown first only.
    wire = json.dumps(summary.model_dump(mode="json"))
    assert "value_0_6" in wire and "value_8_6" not in wire
    assert len(wire) < len(json.dumps(full.model_dump(mode="json"))) / 2

    # The hunks asked for: exactly the full view's files (same ids, decisions, lines); unknown paths left out.
    fetched = review.hunks([paths[20], "pkg/gone.py", paths[31], paths[0]])
    assert fetched == [full.files[0], full.files[20], full.files[31]]
    assert review.hunks(left_out) == [f for f in full.files if f.path in left_out]


def test_a_decision_answers_with_a_summary_and_applies_exactly_the_hunks_fetched_later(
    tmp_path: Path, store: BatchStore
) -> None:
    root = tmp_path / "repo"
    review = edited(root, store)
    summary = review.view(summary=True)
    far = summary.files[25]
    assert far.summarised
    [fetched] = review.hunks([far.path])
    assert [h.id for h in fetched.hunks] == far.hunk_ids

    answer = review.decide(
        DecideParams(session_id="s1", decision="accepted", hunk_ids=[fetched.hunks[1].id]), summary=True
    )
    # A decision does not send the hunks back: the decided file stays a summary with its new decision.
    assert answer.files[25].summarised and answer.files[25].decisions == ["pending", "accepted", "pending"]
    assert "value_25_" not in json.dumps(answer.model_dump(mode="json"))
    check_against_full(answer, review.view())
    answer = review.decide(DecideParams(session_id="s1", decision="rejected", paths=[far.path]), summary=True)
    assert answer.files[25].decisions == ["rejected"] * HUNKS
    review.decide(DecideParams(session_id="s1", decision="accepted", hunk_ids=[fetched.hunks[1].id]))

    result = review.apply(summary=True)
    assert result.batch is not None and result.batch.paths == [far.path]
    expected = module(25).replace("value_25_18 = 18  #", "value_25_18 = 180  #")
    assert (root / far.path).read_text() == expected
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == [far.path]
    # The remaining change set is a summary too, the applied file gone from it.
    assert far.path not in [f.path for f in result.changeset.files]
    check_against_full(result.changeset, review.view())
    assert any(f.summarised for f in result.changeset.files)
