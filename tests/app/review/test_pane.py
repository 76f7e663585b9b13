"""The Review pane on its own: a synthetic 50-file change set, keyboard review, views, feedback text."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QTreeView

from ide.app.review import widgets as review_widgets
from ide.app.review.diffs import local_file_change, side_by_side_rows, unified_rows
from ide.app.review.pane import LOADING, ReviewPane
from ide.app.review.state import ReviewState
from ide.app.review.widgets import ReviewFileModel
from ide.protocol.review import ChangeSetView, DecideParams, HunksParams, HunksResult
from tests.support.review_agent import sample_file
from tests.support.review_changes import summarised

pytestmark = pytest.mark.window

SESSION = "s1"


def synthetic_changeset(files: int = 50) -> ChangeSetView:
    changes = [local_file_change(*sample_file(index)) for index in range(files)]
    return ChangeSetView(session_id=SESSION, cwd="/w", title="t", files=changes)


@pytest.fixture
def review_changeset() -> ChangeSetView:
    """What the ``pane`` fixture (tests/app/conftest.py) shows."""
    return synthetic_changeset()


Keys = list[tuple[str, Qt.KeyboardModifier]]


def decisions(qtbot: Any, pane: ReviewPane, keys: Keys) -> list[DecideParams]:
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    for key, modifier in keys:
        qtbot.keyClick(pane.unified, key, modifier)
    return sent


def test_shows_fifty_files_with_counts_and_states(pane: ReviewPane):
    model = pane.files_model
    assert model.rowCount() == 50
    assert model.index(0, 0).data() == "src/mod_000.py"
    assert model.index(0, 2).data() == "+8 −8"
    assert {model.index(row, 3).data() for row in range(50)} == {"pending"}
    assert pane.summary.text() == "50 files · 200 hunks · 0 accepted · 0 rejected · 200 pending"
    assert pane.hunk_label.text() == "Hunk 1/4 · pending"
    assert pane.unified.toPlainText().startswith("@@ -1,5 +1,5 @@\n-def f0(x):\n")


def test_keyboard_review_sends_the_right_decisions(qtbot: Any, pane: ReviewPane):
    files = pane.state.changeset.files  # type: ignore[union-attr]
    none = Qt.KeyboardModifier.NoModifier
    shift = Qt.KeyboardModifier.ShiftModifier
    sent = decisions(
        qtbot,
        pane,
        [("a", none), ("r", none), ("j", none), ("k", none), ("a", none), ("j", none), ("A", shift)],
    )
    # a accepts hunk 1 and moves on; r rejects hunk 2 and moves on; j then k return to hunk 3, a accepts
    # it; j moves past the last hunk into the next file; Shift+A accepts that whole file.
    assert [(p.decision, p.hunk_ids, p.paths, p.all) for p in sent] == [
        ("accepted", [files[0].hunks[0].id], [], False),
        ("rejected", [files[0].hunks[1].id], [], False),
        ("accepted", [files[0].hunks[2].id], [], False),
        ("accepted", [], ["src/mod_001.py"], False),
    ]
    assert all(p.session_id == SESSION for p in sent)
    model = pane.files_model
    assert model.index(0, 3).data() == "partly"
    assert model.index(1, 3).data() == "accepted"
    assert pane.state.current_file == 2 and pane.state.current_hunk == 0  # Shift+A moves on to the next file

    sent += decisions(qtbot, pane, [("R", shift)])
    assert (sent[-1].decision, sent[-1].paths) == ("rejected", ["src/mod_002.py"])
    assert model.index(2, 3).data() == "rejected"


def test_backend_view_replaces_optimistic_decisions(qtbot: Any, pane: ReviewPane):
    decisions(qtbot, pane, [("a", Qt.KeyboardModifier.NoModifier)])
    assert pane.files_model.index(0, 3).data() == "partly"
    pane.set_changeset(synthetic_changeset())  # the backend did not record it
    assert pane.files_model.index(0, 3).data() == "pending"
    assert (
        pane.state.current_file == 0 and pane.state.current_hunk == 1
    )  # the selection survives the re-render


def test_revert_drops_unconfirmed_decisions(qtbot: Any, pane: ReviewPane):
    pane.accept_all_button.click()
    assert pane.summary.text().startswith("50 files · 200 hunks · 200 accepted")
    pane.revert()
    assert "0 accepted" in pane.summary.text()


def test_accept_all_and_reject_all_buttons(qtbot: Any, pane: ReviewPane):
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    qtbot.mouseClick(pane.accept_all_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(pane.reject_all_button, Qt.MouseButton.LeftButton)
    assert [(p.decision, p.all) for p in sent] == [("accepted", True), ("rejected", True)]


def test_side_by_side_aligns_old_and_new_with_intraline_marks(pane: ReviewPane):
    pane.view_toggle.click()
    assert pane.diff_pages.currentWidget() is pane.diff.split
    left, right = pane.left.toPlainText().split("\n"), pane.right.toPlainText().split("\n")
    assert len(left) == len(right)
    assert left[1:3] == ["def f0(x):", "    return x + 0"]
    assert right[1:3] == ["def f0(x, y=0):", "    return x + y + 0"]
    changed = pane.right.rows[1]
    assert [changed.text[s : s + n] for s, n in changed.intraline] == [", y=0"]


def test_intraline_spans_mark_only_the_changed_words():
    file = local_file_change("a.py", "total = price * qty\n", "total = price * quantity\n")
    rows = unified_rows(file)
    removed, added = rows[1], rows[2]
    assert [removed.text[s : s + n] for s, n in removed.intraline] == ["qty"]
    assert [added.text[s : s + n] for s, n in added.intraline] == ["quantity"]
    left, right = side_by_side_rows(rows)
    assert [row.kind for row in left] == ["hunk", "del"] and [row.kind for row in right] == ["hunk", "add"]


def test_comment_then_send_feedback_builds_a_refinement_prompt(qtbot: Any, pane: ReviewPane):
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    assert not pane.feedback_button.isEnabled()
    qtbot.keyClicks(pane.comment_edit, "keep the old signature")
    qtbot.keyClick(pane.comment_edit, Qt.Key.Key_Return)
    hunk = pane.state.changeset.files[0].hunks[0]  # type: ignore[union-attr]
    assert [(p.hunk_ids, p.comment, p.decision) for p in sent] == [
        ([hunk.id], "keep the old signature", "pending")
    ]
    assert "💬 keep the old signature" in pane.unified.toPlainText().splitlines()[0]
    with qtbot.waitSignal(pane.feedbackRequested) as feedback:
        qtbot.mouseClick(pane.feedback_button, Qt.MouseButton.LeftButton)
    assert feedback.args[0] == (
        "Feedback on your changes:\n- src/mod_000.py:@@ -1,5 +1,5 @@: keep the old signature"
    )


def test_typing_a_comment_does_not_decide_hunks(qtbot: Any, pane: ReviewPane):
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    qtbot.keyClicks(pane.comment_edit, "jar")
    assert sent == [] and pane.state.current_hunk == 0
    assert pane.comment_edit.text() == "jar"


def test_the_read_only_note_waits_for_the_agent_to_say_it_has_no_review(qtbot: Any):
    """Until the agent's session is ready the pane does not know: the first frame said "This agent does
    not support Arbor review" of Arbor's own backend while it was starting."""
    fresh = ReviewPane()
    qtbot.addWidget(fresh)
    fresh.show()
    assert not fresh.note.isVisible()
    fresh.set_interactive(True)
    assert not fresh.note.isVisible()
    fresh.set_interactive(False)
    assert fresh.note.isVisible()


def test_read_only_mode_ignores_decisions(qtbot: Any, pane: ReviewPane):
    pane.set_interactive(False)
    assert pane.note.isVisible()
    assert not pane.accept_button.isEnabled() and not pane.apply_button.isEnabled()
    none = Qt.KeyboardModifier.NoModifier
    sent = decisions(qtbot, pane, [("a", none), ("j", none)])
    assert sent == []
    assert pane.state.current_hunk == 1  # navigation still works


def test_apply_and_roll_back_messages_count_files_and_name_the_commit() -> None:
    from ide.app.review.state import commit_phrase, plural, rollback_question
    from ide.protocol.review import BatchView

    assert (plural(1, "file"), plural(3, "file"), plural(0, "file")) == ("1 file", "3 files", "0 files")
    paths = [f"src/m{n}.py" for n in range(10)]
    batch = BatchView(
        id="b7",
        session_id="s",
        cwd="/w",
        created_at="now",
        message="Fix the greeting\n\nbody",
        paths=paths,
        commit="0123456789abcdef",
    )
    assert commit_phrase(batch) == 'commit 0123456789 "Fix the greeting"'
    text, details = rollback_question(batch)
    assert text.startswith("Roll back batch b7? It restores 10 files as they were before Apply: src/m0.py")
    assert text.endswith("src/m7.py and 2 more.")
    assert 'commit 0123456789 "Fix the greeting" is reverted' in details
    single = batch.model_copy(update={"paths": ["a.py"], "commit": None})
    text, details = rollback_question(single)
    assert "It restores 1 file as they were before Apply: a.py." in text
    assert "made no commit" in details


def test_history_columns_fit_their_text_and_the_message_takes_the_rest(qtbot: Any, pane: ReviewPane) -> None:
    from ide.protocol.review import BatchView, HistoryResult

    pane.resize(1200, 500)
    pane.show()
    pane.tabs.setCurrentWidget(pane.history)
    qtbot.waitExposed(pane)
    batch = BatchView(
        id="b1", session_id="s", cwd="/w", created_at="2026-11-25T11:17:37+00:00",
        message="Fix the greeting", paths=["a.py", "b.py"], commit="0123456789abcdef",
    )  # fmt: skip
    pane.set_history(HistoryResult(batches=[batch]))
    tree = pane.history_tree
    header = tree.header()
    qtbot.waitUntil(lambda: header.sectionSize(1) > 0)
    for column in (0, 2, 3, 4):
        assert header.sectionSize(column) >= tree.sizeHintForColumn(column), column  # nothing cut
    width = sum(header.sectionSize(column) for column in range(tree.columnCount()))
    assert width == tree.viewport().width()  # and no empty space beside the columns


def wide_changeset(files: int) -> ChangeSetView:
    """``files`` sample files, then, far below the first screen, the widest texts each column can show: a
    big +/− count, a binary file, a rename of a meta file, and a conflict."""
    changes = [local_file_change(*sample_file(index)) for index in range(files)]
    changes[-4] = changes[-4].model_copy(update={"additions": 123456, "deletions": 98765})
    changes[-3] = changes[-3].model_copy(update={"binary": True, "hunks": []})
    changes[-2] = changes[-2].model_copy(
        update={"status": "renamed", "old_path": "src/old.py", "meta": "CI configuration"}
    )
    changes[-1] = changes[-1].model_copy(update={"conflict": "changed on disk"})
    return ChangeSetView(session_id=SESSION, cwd="/w", title="t", files=changes)


def assert_columns_fit_every_row(qtbot: Any, pane: ReviewPane) -> None:
    """Columns 1–3 are as wide as Qt's ResizeToContents over every row makes them, and no row's text is
    cut (QTreeView's own sizeHintForColumn asks every row; the pane's asks only the widest texts)."""
    files, header, model = pane.file_list, pane.file_list.header(), pane.files_model
    for column in (1, 2, 3):
        every_row = QTreeView.sizeHintForColumn(files, column)
        assert files.sizeHintForColumn(column) == every_row, column
        wanted = max(every_row, header.sectionSizeHint(column))
        qtbot.waitUntil(lambda column=column, wanted=wanted: header.sectionSize(column) == wanted)
        widest = max(
            files.sizeHintForIndex(model.index(row, column)).width() for row in range(model.rowCount())
        )
        assert header.sectionSize(column) >= widest, column


def shown_pane(qtbot: Any, width: int, height: int) -> ReviewPane:
    """A Review pane of ``width`` × ``height`` on screen, its session set, its buttons enabled."""
    pane = ReviewPane()
    qtbot.addWidget(pane)
    pane.resize(width, height)
    pane.show()
    qtbot.waitExposed(pane)
    pane.set_session(SESSION, "/w")
    pane.set_interactive(True)
    return pane


def test_file_list_columns_fit_the_widest_row_far_below_the_first_screen(qtbot: Any) -> None:
    pane = shown_pane(qtbot, 1100, 600)
    changeset = wide_changeset(300)
    pane.set_changeset(changeset)
    model = pane.files_model
    assert [model.text(299 - back, 2) for back in (3, 2)] == ["+123456 −98765", "binary"]
    assert model.text(298, 0) == "⚠ src/old.py → src/mod_298.py" and model.text(298, 1) == "R"
    assert model.text(299, 3) == "conflict"
    assert_columns_fit_every_row(qtbot, pane)

    pane.accept_all_button.click()  # "accepted" and "rejected" are wider than "pending"
    assert model.text(0, 3) == "accepted"
    assert_columns_fit_every_row(qtbot, pane)
    pane.select_file(1)
    pane.reject_file_button.click()
    assert model.text(1, 3) == "rejected"
    assert_columns_fit_every_row(qtbot, pane)

    pane.file_list.setFont(QFont(pane.file_list.font().family(), 24))  # a bigger font: wider columns
    assert_columns_fit_every_row(qtbot, pane)


def test_showing_300_files_asks_the_file_model_for_a_screenful_of_rows(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sizing the columns asked every row for some ten roles on every layout: 37,000 ``data()`` calls
    before the first paint of 300 files (0.25 s); now the rows on screen and the widest texts."""
    calls = [0]

    class CountingModel(ReviewFileModel):
        def data(self, index: Any, role: int = 0) -> Any:
            calls[0] += 1
            return super().data(index, role)

    # The pane's file list makes its model from the module's name (a method patched on the class itself
    # crashes PySide6 later, in another test, when a widget of this one asks it).
    monkeypatch.setattr(review_widgets, "ReviewFileModel", CountingModel)
    pane = shown_pane(qtbot, 1280, 700)
    assert isinstance(pane.files_model, CountingModel)
    calls[0] = 0
    pane.set_changeset(wide_changeset(300))
    pane.grab()  # lays out and paints the pane as its first frame on screen would
    assert pane.files_model.rowCount() == 300
    assert 0 < calls[0] < 3_000


def test_a_300_file_change_set_is_reviewed_hunk_by_hunk_far_down_the_list(qtbot: Any) -> None:
    pane = shown_pane(qtbot, 1100, 600)
    changeset = synthetic_changeset(300)
    pane.set_changeset(changeset)
    assert pane.summary.text() == "300 files · 1200 hunks · 0 accepted · 0 rejected · 1200 pending"
    pane.select_file(250, 2)
    assert pane.file_list.currentIndex().row() == 250
    assert pane.unified.toPlainText() == "\n".join(row.text for row in unified_rows(changeset.files[250]))
    none, shift = Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier
    sent = decisions(qtbot, pane, [("a", none), ("j", none), ("R", shift)])
    assert [(p.decision, p.hunk_ids, p.paths) for p in sent] == [
        ("accepted", [changeset.files[250].hunks[2].id], []),
        ("rejected", [], ["src/mod_251.py"]),
    ]
    model = pane.files_model
    assert [model.text(row, 3) for row in (249, 250, 251, 252)] == [
        "pending",
        "partly",
        "rejected",
        "pending",
    ]
    assert pane.summary.text() == "300 files · 1200 hunks · 1 accepted · 4 rejected · 1195 pending"
    assert pane.state.current_file == 252 and pane.file_list.currentIndex().row() == 252


def test_showing_a_change_set_renders_its_actions_once(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary and the Apply label each count every hunk: showing a change set renders them once (the
    file's selection does), and they read right."""
    pane = ReviewPane()
    qtbot.addWidget(pane)
    pane.set_session(SESSION, "/w")
    pane.set_interactive(True)
    summaries = [0]
    real = ReviewState.summary

    def counted(state: ReviewState) -> str:
        summaries[0] += 1
        return real(state)

    monkeypatch.setattr(ReviewState, "summary", counted)
    shown: list[int] = []
    pane.changesShown.connect(shown.append)
    pane.set_changeset(synthetic_changeset(3))
    assert summaries[0] == 1 and shown == [3]
    assert pane.summary.text() == "3 files · 12 hunks · 0 accepted · 0 rejected · 12 pending"
    assert pane.hunk_label.text() == "Hunk 1/4 · pending" and pane.accept_button.isEnabled()
    assert pane.accept_all_button.isEnabled() and pane.apply_button.text() == "Apply"
    pane.set_changeset(ChangeSetView(session_id=SESSION, cwd="/w", files=[]))
    assert summaries[0] == 2 and shown == [3, 0]
    assert pane.summary.text() == "No changes to review." and not pane.accept_all_button.isEnabled()
    assert pane.hunk_label.text() == "" and not pane.accept_button.isEnabled()


def test_a_summarised_file_loads_its_hunks_and_an_answer_about_an_older_change_set_is_asked_again(
    qtbot: Any, pane: ReviewPane
):
    full = synthetic_changeset(4)
    asked: list[HunksParams] = []
    pane.hunksRequested.connect(asked.append)
    pane.clear()  # else the summary keeps the same files' hunks the pane showed before
    pane.set_changeset(summarised(full))
    assert pane.summary.text() == "4 files · 16 hunks · 0 accepted · 0 rejected · 16 pending"
    assert asked == [] and pane.unified.toPlainText().startswith("@@ -1,5 +1,5 @@\n-def f0(x):\n")
    pane.select_file(2)
    assert pane.message.text() == LOADING and [a.paths for a in asked] == [[full.files[2].path]]
    # Meanwhile the agent changed file 2 (new hunk ids): the answer to the first question is stale.
    changed = synthetic_changeset(6).files[5].model_copy(update={"path": full.files[2].path})
    newer = full.model_copy(update={"files": [full.files[0], full.files[1], changed, full.files[3]]})
    pane.set_changeset(summarised(newer))
    assert len(asked) == 1  # still waiting for the first answer
    pane.set_hunks(HunksResult(files=[full.files[2]]))
    assert pane.message.text() == LOADING and len(asked) == 2  # asked again
    pane.set_hunks(HunksResult(files=[full.files[2]]))
    assert len(asked) == 2  # once per change set shown, not forever
    pane.set_hunks(HunksResult(files=[changed]))
    assert pane.diff_pages.currentWidget() is pane.unified
    assert pane.state.current_file_view() == changed and pane.accept_button.isEnabled()
