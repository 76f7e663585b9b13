"""The chat's mode box keeps room for the mode's whole name while a turn runs (it read "LATS tre")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ide.app.acp_client import BackendState
from ide.app.chat.panel import ChatPanel
from ide.protocol.modes import MODE_TABLE

pytestmark = pytest.mark.window


@pytest.mark.parametrize("width", [360, 460, 700])
def test_the_mode_box_shows_the_whole_mode_name_during_a_run(
    qtbot: Any, qsettings_dir: Path, width: int
) -> None:
    panel = ChatPanel()
    qtbot.addWidget(panel)
    panel.resize(width, 500)
    panel.show()
    qtbot.waitExposed(panel)
    # Shown first with a short mode name (an agent's first answer, a session restored in ReAct), then
    # the full list: a box sized once, at its first show, kept the first width.
    panel.set_modes([("react", "ReAct", "")], "react")
    box = panel.mode_box
    qtbot.waitUntil(lambda: box.isVisible() and box.width() == box.sizeHint().width())  # laid out
    panel.set_modes([(m.id, m.name, m.description) for m in MODE_TABLE], "lats")
    for state in (BackendState.READY, BackendState.BUSY):
        panel.set_backend_state(state)
        busy = state == BackendState.BUSY
        qtbot.waitUntil(lambda busy=busy: panel.stop_button.isVisible() == busy)
        needed = box.fontMetrics().horizontalAdvance(box.currentText())
        assert box.currentText() == "LATS tree search"
        assert box.sizeHint().width() > needed
        qtbot.waitUntil(lambda: box.width() >= box.sizeHint().width())  # the layout catches up
