"""The Review pane shows a mode change as a row of its own, decided like a hunk (issue 46, item 3).

On main a foreign agent's ``chmod +x`` showed as "pkg/greet.py: modified, no text changes.", and Accept
file + Apply said "Nothing was written.". Here the pane is backed by the backend's own review in process:
its requests are answered as the bridge answers them, from a change set fed as a shadow capture feeds it.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.pane import ReviewPane
from ide.changes import BatchStore, ChangeSet, Review
from ide.changes.overlay import Base, Entry
from ide.protocol.review import ApplyParams, DecideParams
from tests.support.git import git

pytestmark = pytest.mark.window

SESSION = "s1"
GREET = "pkg/greet.py"


def chmod_captured(root: Path, store: BatchStore) -> Review:
    """The review of a shadow capture holding ``chmod +x pkg/greet.py`` and nothing else."""
    changes = ChangeSet(root)
    data = (root / GREET).read_bytes()
    changes.rebase(GREET, Base(data, 0o644))
    changes.set_entry(GREET, Entry(data, 0o755))
    return Review(changes, session_id=SESSION, title="Make greet runnable", store=store)


@pytest.fixture
def served_pane(qtbot: Any, git_workspace: Path, tmp_path: Path) -> tuple[ReviewPane, Review]:
    """A shown, interactive pane whose decide and apply requests the review answers, as the bridge does."""
    review = chmod_captured(git_workspace, BatchStore(tmp_path / "data"))
    pane = ReviewPane()
    qtbot.addWidget(pane)
    pane.resize(1100, 600)
    pane.show()
    pane.set_session(SESSION, str(git_workspace))
    pane.set_interactive(True)

    def decide(params: DecideParams) -> None:
        pane.set_changeset(review.decide(params, summary=True))

    def apply(params: ApplyParams) -> None:
        pane.show_apply_result(review.apply(params.message, summary=True))

    pane.decideRequested.connect(decide)
    pane.applyRequested.connect(apply)
    with qtbot.waitSignal(pane.changesShown) as shown:
        pane.set_changeset(review.view(summary=True))
    assert shown.args == [1]
    return pane, review


def test_the_mode_row_is_shown_and_its_accept_applies_the_mode(
    qtbot: Any, served_pane: tuple[ReviewPane, Review], git_workspace: Path
) -> None:
    pane, review = served_pane
    before = (git_workspace / GREET).read_bytes()
    assert pane.files_model.index(0, 0).data() == GREET
    assert pane.unified.toPlainText() == "old mode 100644 → new mode 100755 (made executable)"
    assert pane.hunk_label.text() == "Hunk 1/1 · pending"
    [item] = review.view().files[0].hunks

    with qtbot.waitSignal(pane.decideRequested) as decided:
        qtbot.keyClick(pane.unified, "a")
    assert decided.args[0].hunk_ids == [item.id] and decided.args[0].decision == "accepted"
    assert pane.files_model.index(0, 3).data() == "accepted"
    assert pane.unified.toPlainText().startswith("old mode 100644 → new mode 100755 (made executable)  ✓")

    with qtbot.waitSignal(pane.applyRequested):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert pane.result_label.text().startswith("Applied 1 file as batch")
    assert pane.files_model.rowCount() == 0
    assert stat.S_IMODE((git_workspace / GREET).stat().st_mode) == 0o755
    assert (git_workspace / GREET).read_bytes() == before
    assert git(git_workspace, "ls-tree", "HEAD", "--", GREET).startswith("100755 blob ")


def test_rejecting_the_mode_row_leaves_the_file_as_it_was(
    qtbot: Any, served_pane: tuple[ReviewPane, Review], git_workspace: Path
) -> None:
    pane, _review = served_pane
    with qtbot.waitSignal(pane.decideRequested):
        qtbot.keyClick(pane.unified, "r")
    assert pane.files_model.index(0, 3).data() == "rejected"
    with qtbot.waitSignal(pane.applyRequested):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert pane.files_model.rowCount() == 0
    assert stat.S_IMODE((git_workspace / GREET).stat().st_mode) == 0o644
