"""The Eval dock's colours per kind of mode, shared by the chart and the tables' swatches: Arbor's modes
in the accent blue, the retry baseline grey, other agents (``agent:NAME``) green — the colours of the
HTML chart ``arbor eval`` writes beside the report."""

from __future__ import annotations

from PySide6.QtGui import QColor

from ide.app.theme import ACCENT
from ide.protocol.eval import RETRY_MODE, is_agent_mode

BAR_COLOUR = QColor(ACCENT)
BASELINE_COLOUR = QColor("#8a929e")
AGENT_COLOUR = QColor("#3f9142")
MUTED_TEXT = QColor("#7a808a")


def mode_colour(mode: str) -> QColor:
    """The colour of ``mode``'s bars and swatches."""
    if mode == RETRY_MODE:
        return BASELINE_COLOUR
    return AGENT_COLOUR if is_agent_mode(mode) else BAR_COLOUR
