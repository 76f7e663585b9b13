"""Fixtures for window tests (defined in tests/support/window.py, where their use is explained), and the
shown Review pane the review tests share."""

from __future__ import annotations

from typing import Any

import pytest

from ide.app.review.pane import ReviewPane
from ide.protocol.review import ChangeSetView
from tests.support.window import make_window, qloop, qsettings_dir, session_qloop  # noqa: F401


@pytest.fixture
def pane(qtbot: Any, review_changeset: ChangeSetView) -> ReviewPane:
    """A shown, interactive Review pane (1100×600) with the test module's ``review_changeset`` on it."""
    widget = ReviewPane()
    qtbot.addWidget(widget)
    widget.resize(1100, 600)
    widget.show()
    widget.set_session(review_changeset.session_id, review_changeset.cwd)
    widget.set_interactive(True)
    widget.set_changeset(review_changeset)
    return widget
