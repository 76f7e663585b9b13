"""The Review dock shows hidden characters (issue 27, item 5): bidi controls and invisible characters as
visible ⟪U+…⟫ marks, a banner saying what the file's hunks hide, the hunk header marked, and Accept all
leaving those hunks to be accepted on their own."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.diffs import local_file_change
from ide.app.review.pane import ReviewPane
from ide.protocol.review import ChangeSetView, DecideParams

pytestmark = pytest.mark.window

RLO, ZWSP, CYRILLIC_A = "\u202e", "\u200b", "\u0430"
OLD = "def pay(amount):\n    return amount\n"
NEW = f'def pay(amount):\n    level = "user{RLO} # admin"\n    token{ZWSP} = p{CYRILLIC_A}y(amount)\n'


@pytest.fixture
def review_changeset() -> ChangeSetView:
    """What the ``pane`` fixture (tests/app/conftest.py) shows."""
    files = [local_file_change("pkg/pay.py", OLD, NEW), local_file_change("pkg/ok.py", "a\n", "b\n")]
    return ChangeSetView(session_id="s1", cwd="/w", title="t", files=files)


def test_hidden_characters_are_shown_and_the_file_carries_a_banner(pane: ReviewPane) -> None:
    pane.select_file(0, 0)
    text = pane.unified.toPlainText()
    assert RLO not in text and ZWSP not in text
    assert "⟪U+202E⟫" in text and "⟪U+200B⟫" in text
    assert "⚠ hides characters" in text.splitlines()[0]
    assert pane.meta_label.isVisible()
    banner = pane.meta_label.text()
    assert "bidirectional control characters" in banner and "invisible characters" in banner
    assert f"p{CYRILLIC_A}y" in banner and "Accept all leaves such hunks pending" in banner
    pane.select_file(1, 0)
    assert not pane.meta_label.isVisible()


def test_accept_all_leaves_them_pending(qtbot: Any, pane: ReviewPane) -> None:
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    qtbot.mouseClick(pane.accept_all_button, Qt.MouseButton.LeftButton)
    assert [(p.decision, p.all) for p in sent] == [("accepted", True)]
    decided = {f.path: [pane.state.decision_of(h) for h in f.hunks] for f in pane.state.changeset.files}
    assert decided == {"pkg/pay.py": ["pending"], "pkg/ok.py": ["accepted"]}
