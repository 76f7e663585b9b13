"""The Review pane's state without Qt: what is shown and current, optimistic decisions, where j and k go,
what the buttons send, a branch shown in place of the review, and plain ACP diffs folded into a review."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from ide.app.review.diffs import local_file_change
from ide.app.review.state import (
    ReviewState,
    apply_message,
    empty_file_message,
    file_notes,
    has_notes,
    pending_note,
    rollback_message,
)
from ide.client.events import MessageChunk, ToolCallStarted, ToolCallUpdated
from ide.protocol.review import (
    ApplyResult,
    BatchView,
    ChangeSetView,
    ConflictView,
    HistoryResult,
    RollbackResult,
)
from tests.support.review_agent import sample_file
from tests.support.review_changes import summarised

SESSION = "s1"


def changeset(files: int = 3) -> ChangeSetView:
    changes = [local_file_change(*sample_file(index)) for index in range(files)]
    return ChangeSetView(session_id=SESSION, cwd="/w", title="t", files=changes)


def shown(files: int = 3, *, interactive: bool = True) -> ReviewState:
    state = ReviewState()
    state.session_id, state.cwd = SESSION, "/w"
    state.set_interactive(interactive)
    selection = state.show(changeset(files))
    assert selection is not None
    state.select(*selection)
    return state


def batch(**update: object) -> BatchView:
    fields = {
        "id": "b1",
        "session_id": SESSION,
        "cwd": "/w",
        "created_at": "now",
        "message": "Fix it\n\nbody",
        "paths": ["a.py", "b.py"],
        "commit": "0123456789abcdef",
    }
    return BatchView.model_validate({**fields, **update})


def test_the_state_loads_no_qt() -> None:
    check = (
        "import ide.app.review.state, sys; print(sorted(m for m in sys.modules if m.startswith('PySide6')))"
    )
    loaded = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_a_change_set_shows_its_first_hunk_and_counts() -> None:
    state = shown()
    assert (state.current_file, state.current_hunk) == (0, 0)
    assert state.summary() == "3 files · 12 hunks · 0 accepted · 0 rejected · 12 pending"
    assert state.hunk_caption() == "Hunk 1/4 · pending"
    assert state.file_states() == ["pending"] * 3


def test_nothing_to_show() -> None:
    state = ReviewState()
    assert state.summary() == "No changes to review."
    assert state.hunk_caption() == "" and state.current_hunk_view() is None
    assert state.show(ChangeSetView(session_id=SESSION, cwd="/w")) is None
    assert state.current_hunk == -1 and state.next_position() is None
    assert state.decide_hunk("accepted") is None and state.apply_params() is None


def test_a_new_view_keeps_the_file_and_hunk_where_they_still_exist() -> None:
    state = shown()
    state.select(1, 2)
    assert state.show(changeset()) == (1, 2)
    fewer = changeset().model_copy(update={"files": changeset().files[2:]})
    assert state.show(fewer) == (0, 0)  # the file is gone: the first file's first hunk


def test_decisions_are_optimistic_until_the_backend_answers() -> None:
    state = shown()
    hunk = state.current_hunk_view()
    assert hunk is not None
    params = state.decide_hunk("accepted")
    assert params is not None and (params.hunk_ids, params.decision) == ([hunk.id], "accepted")
    assert state.file_states()[0] == "partly" and state.hunk_caption() == "Hunk 1/4 · accepted"
    assert state.revert() and state.file_states()[0] == "pending"
    assert not state.revert()  # nothing left to drop
    state.decide_file("rejected")
    assert state.file_states()[0] == "rejected"
    state.show(changeset())  # the backend's view replaces the guesses
    assert state.file_states()[0] == "pending"


def test_decide_all_leaves_meta_files_and_hidden_characters_to_their_own_accept() -> None:
    plain = local_file_change("a.py", "a\n", "b\n")
    meta = local_file_change(".gitattributes", None, "* diff=x\n").model_copy(
        update={"meta": "git attributes"}
    )
    hidden = local_file_change("p.py", "a\n", "b\u202e\n")
    state = ReviewState()
    state.set_interactive(True)
    state.show(ChangeSetView(session_id=SESSION, cwd="/w", files=[plain, meta, hidden]))
    params = state.decide_all("accepted")
    assert params is not None and params.all
    assert state.file_states() == ["accepted", "pending", "pending"]
    assert state.summary().endswith("· 2 pending · 1 need their own accept")
    assert has_notes(meta) and has_notes(hidden) and not has_notes(plain)
    assert file_notes(meta)[0].startswith("⚠ .gitattributes needs its own accept — git attributes.")
    assert "bidirectional control characters" in file_notes(hidden)[0]


def test_j_and_k_cross_files() -> None:
    state = shown()
    assert state.next_position() == (0, 1)
    state.select(0, 3)
    assert state.next_position() == (1, 0)  # past the last hunk: the next file's first
    assert state.previous_position() == (0, 2)
    state.select(1, 0)
    assert state.previous_position() == (0, -1)  # before the first hunk: the previous file's last
    state.select(0, -1)
    assert state.current_hunk == 3
    state.select(2, 3)
    assert state.next_position() is None and state.next_file() is None


def test_read_only_decides_nothing_but_navigates() -> None:
    state = shown(interactive=False)
    assert state.decide_hunk("accepted") is None and state.decide_all("accepted") is None
    assert state.next_position() == (0, 1)
    actions = state.actions(-1)
    assert not (actions.hunk or actions.file or actions.whole or actions.refresh)
    assert actions.comment  # comments still go back with Send feedback


def test_a_comment_is_recorded_and_becomes_feedback() -> None:
    state = shown()
    assert state.feedback() is None and not state.actions(-1).feedback
    params = state.comment("keep the old signature")
    hunk = state.current_hunk_view()
    assert params is not None and hunk is not None
    assert (params.hunk_ids, params.comment, params.decision) == (
        [hunk.id],
        "keep the old signature",
        "pending",
    )
    assert "💬 keep the old signature" in state.header(hunk)
    assert (
        state.feedback()
        == "Feedback on your changes:\n- src/mod_000.py:@@ -1,5 +1,5 @@: keep the old signature"
    )
    assert state.comment("") is None


def test_what_the_buttons_send() -> None:
    state = shown()
    apply = state.apply_params()
    history = state.history_params()
    assert apply is not None and apply.session_id == SESSION
    assert history is not None and history.cwd == "/w"
    state.batches = HistoryResult(batches=[batch(), batch(id="b0", rolled_back=True)])
    assert state.actions(0).roll_back and not state.actions(1).roll_back and not state.actions(-1).roll_back
    target = state.rollback_target(0)
    assert target is not None and target.id == "b1"
    assert state.rollback_target(1) is None and state.rollback_target(5) is None


def test_apply_and_rollback_messages() -> None:
    state = shown()
    result = ApplyResult(
        batch=batch(paths=["a.py"]),
        conflicts=[ConflictView(path="c.py", message="changed on disk", merged="<<<<<<<")],
        uncommitted=["d.py"],
        changeset=changeset(1),
    )
    text = state.applied(result)
    assert text.startswith('Applied 1 file as batch b1, commit 0123456789 "Fix it". 1 file written but left')
    assert text.endswith(
        "1 file changed on disk meanwhile and was not written; select one below to see the "
        "merge with conflict markers. 4 hunks in 1 file still pending."
    )
    conflict = state.conflict(0)
    assert conflict is not None and conflict.path == "c.py" and state.conflict(1) is None
    nothing = ApplyResult(changeset=changeset(0))
    assert apply_message(nothing) == "Nothing was written."
    rolled = RollbackResult(
        batch=batch(commit=None), restored=["a.py"], refused=[ConflictView(path="b", message="x")]
    )
    assert rollback_message(rolled) == "Rolled back batch b1: restored 1 file. Not restored: b — x"


def test_a_branch_is_shown_read_only_and_the_review_comes_back() -> None:
    state = shown()
    review = state.changeset
    branch = changeset(1)
    state.enter_branch(branch)
    state.show(branch)
    assert state.branch is branch and not state.interactive
    assert state.summary() == "1 file · 4 hunks · read-only"
    assert not state.commentable and state.feedback() is None and state.apply_params() is None
    assert not state.set_interactive(True)  # kept for the review
    newer = changeset(2)
    assert not state.receive(newer)  # kept too
    assert state.leave_branch() is newer and state.interactive and state.branch is None
    assert review is not None and review is not newer
    state.enter_branch(branch)
    state.clear()
    assert state.branch is None and state.changeset is None and state.interactive


def test_leaving_a_branch_with_no_review_shows_nothing() -> None:
    state = ReviewState()
    state.enter_branch(changeset(1))
    state.show(changeset(1))
    assert state.leave_branch() is None
    assert state.changeset is None and state.current_file == -1 and not state.interactive


def test_plain_acp_diffs_become_a_read_only_review() -> None:
    state = ReviewState()
    state.session_id, state.cwd = SESSION, "/w"
    diff = SimpleNamespace(type="diff", path="/w/src/a.py", old_text="x\n", new_text="y\n")
    update = ToolCallStarted("c1", content=(diff,), changed=frozenset({"content"}))
    assert state.collect(update)
    assert not state.collect(MessageChunk("", diff))
    # The call's whole state still holds the diff; only a notification that sets content proposes it.
    assert not state.collect(
        ToolCallUpdated("c1", status="completed", content=(diff,), changed=frozenset({"status"}))
    )
    view = state.standard_changeset()
    assert [f.path for f in view.files] == ["src/a.py"] and view.session_id == SESSION
    state.clear()
    assert state.standard_changeset().files == []
    state.set_interactive(True)
    assert not state.collect(update)  # Arbor's own review: no plain diffs


def test_empty_file_messages() -> None:
    binary = local_file_change("img.png", "a\n", "b\n").model_copy(update={"binary": True, "hunks": []})
    renamed = binary.model_copy(update={"binary": False, "old_path": "old.png"})
    touched = renamed.model_copy(update={"old_path": None, "status": "added"})
    assert empty_file_message(binary) == "img.png is a binary file (modified)."
    assert empty_file_message(renamed) == "Renamed from old.png, content unchanged."
    assert empty_file_message(touched) == "img.png: added, no text changes."


def test_the_apply_button_says_what_it_writes_and_what_it_does_then() -> None:
    state = shown(3)  # 3 files of 4 hunks
    assert state.apply_label()[0] == "Apply"
    files = state.changeset.files  # type: ignore[union-attr]
    state.decisions.update({files[0].hunks[0].id: "accepted", files[0].hunks[1].id: "accepted"})
    state.decisions[files[2].hunks[3].id] = "accepted"
    assert state.apply_label()[0] == "Apply 3 hunks in 2 files and commit"
    state.commit_mode = "stage"
    assert state.apply_label() == (
        "Apply 3 hunks in 2 files and stage",
        "Apply writes them and stages them with git add; nothing is committed (review.commit = stage).",
    )
    state.commit_mode = "none"
    state.decisions = {files[1].hunks[0].id: "accepted"}
    assert state.apply_label()[0] == "Apply 1 hunk in 1 file"
    assert pending_note(changeset(1)) == "4 hunks in 1 file still pending."
    assert pending_note(changeset(0)) == ""


def test_the_empty_history_is_what_an_empty_history_result_is() -> None:
    # Constructed without its validator (the first frame does not wait for it), it is the same value.
    empty = ReviewState().batches
    assert empty == HistoryResult() and empty.model_dump() == HistoryResult().model_dump()
    assert empty.model_fields_set == HistoryResult().model_fields_set and empty.batches == []


def test_a_summary_counts_steps_and_decides_as_the_full_change_set_and_loads_a_files_hunks() -> None:
    full = changeset(3)
    state = ReviewState()
    state.set_interactive(True)
    state.select(*(state.show(summarised(full)) or (-1, 0)))
    reference = shown(3)
    assert state.summary() == reference.summary()
    assert state.current_loaded() and state.wanted() == []
    # Stepping past the first file's last hunk goes into the second file, which waits for its hunks.
    for _ in range(len(full.files[0].hunks)):
        state.select(*(state.next_position() or (-1, 0)))
        reference.select(*(reference.next_position() or (-1, 0)))
    assert (
        (state.current_file, state.current_hunk) == (reference.current_file, reference.current_hunk) == (1, 0)
    )
    assert not state.current_loaded() and state.wanted() == [full.files[1].path]
    assert state.decide_hunk("accepted") is None  # not seen yet
    assert not state.actions(-1).hunk and state.actions(-1).file
    params = state.decide_file("rejected")
    assert params is not None and params.paths == [full.files[1].path]
    assert [s for s in state.file_states()] == ["pending", "rejected", "pending"]
    # An answer about other hunks (an older change set) is dropped; the file's own hunks load.
    stale = full.files[1].model_copy(update={"hunks": full.files[2].hunks})
    assert not state.load([stale]) and not state.current_loaded()
    assert state.load([full.files[1]]) and state.current_loaded()
    assert state.current_file_view() == full.files[1]
    assert state.decide_hunk("accepted") is not None
    assert state.decide_all("accepted") is not None
    assert {state.decision_of(h) for f in state.changeset.files for h in f.hunks} == {"accepted"}  # type: ignore[union-attr]


def test_a_summary_keeps_the_hunks_loaded_before_with_its_decisions() -> None:
    full = changeset(3)
    state = ReviewState()
    state.set_interactive(True)
    state.select(*(state.show(summarised(full)) or (-1, 0)))
    state.select(2)
    assert state.load([full.files[2]])
    # The backend's answer to a decision: a summary again, file 2's second hunk accepted.
    answer = summarised(full)
    answer.files[2].decisions[1] = "accepted"  # type: ignore[index]
    assert state.show(answer) == (2, 0)
    state.select(2)
    assert state.current_loaded()
    kept = state.current_file_view()
    assert kept is not None and [h.lines for h in kept.hunks] == [h.lines for h in full.files[2].hunks]
    assert [h.decision for h in kept.hunks] == ["pending", "accepted"] + ["pending"] * (len(kept.hunks) - 2)
    assert not state.changeset.files[1].hunks[0].lines  # type: ignore[union-attr]  # still a stand-in
    # What an Apply left pending is counted from a summary not shown (a branch was on screen).
    assert pending_note(summarised(full)) == pending_note(full) != ""
