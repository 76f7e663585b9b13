"""Status bar content: which model answers and whether it can, what the backend is doing, what the last
turn cost."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from ide.app.acp_client import BackendState

if TYPE_CHECKING:
    from ide.protocol import AgentMeta, TurnMeta
    from ide.protocol.model import ModelHealth

STATE_COLOURS = {
    BackendState.STARTING: "#b7791f",
    BackendState.READY: "#2f855a",
    BackendState.BUSY: "#3b6fd4",
    BackendState.STOPPED: "#c53030",
}

HEALTH_COLOURS = {"ok": "#2f855a", "warning": "#b7791f", "error": "#c53030"}
HEALTH_UNKNOWN = "#7a808a"
HEALTH_TEXT_WIDTH = 620
"""The widest the model's problem and its fix get in the status bar (elided; the tooltip has it all)."""


def health_summary(health: ModelHealth | None) -> str:
    """What the status bar says of the model: nothing when it is ready or unknown (the dot says it), else
    the problem and its fix on one line."""
    if health is None or health.level == "ok":
        return ""
    # The error's own words in brackets ("(All connection attempts failed)") are for the tooltip.
    reason = re.sub(r"\s*\([^()]*\)$", "", health.reason)
    text = " ".join(f"{reason} — {health.fix}".split()) if health.fix else reason
    return text or ("a turn would fail" if health.level == "error" else "a turn may go badly")


def describe_usage(meta: TurnMeta) -> str:
    """``3 calls · 1.2k in / 340 out · 2.4 s`` summed over the turn's roles ('' when there was no call)."""
    roles = list(meta.usage.values())
    calls = sum(role.calls for role in roles)
    if not calls:
        return ""
    tokens_in = sum(role.input_tokens for role in roles)
    tokens_out = sum(role.output_tokens for role in roles)
    seconds = sum(role.latency_ms for role in roles) / 1000
    noun = "call" if calls == 1 else "calls"
    recovered = sum(role.recovered_calls for role in roles)
    text = (
        f"last turn: {calls} {noun} · {_tokens(tokens_in)} in / {_tokens(tokens_out)} out · {seconds:.1f} s"
    )
    return text + (f" · {recovered} tool call(s) recovered from text" if recovered else "")


def describe_context(tokens: int, window: int) -> str:
    """``ctx 6.1k / 16k``: the latest request against the model's window (windows are powers of two)."""
    size = f"{window // 1024}k" if window >= 1024 and window % 1024 == 0 else _tokens(window)
    return f"ctx {_tokens(tokens)} / {size}"


def short_model(spec: str) -> str:
    """A model spec for a narrow label: ``scripted:/long/path/demo.jsonl`` becomes ``scripted:demo.jsonl``."""
    provider, _, model = spec.partition(":")
    if "/" in model and provider == "scripted":
        return f"{provider}:{PurePath(model).name}"
    return spec


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


class BackendStatus(QWidget):
    """Labels for the status bar. Interface: :meth:`set_state`, :meth:`set_agent`, :meth:`set_turn`,
    :meth:`set_model_health`; :attr:`healthClicked` when the model's element is clicked."""

    healthClicked = Signal()
    """The model's element was clicked: show where the model is chosen and tested (the start page)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("backendStatus")
        self.health = QToolButton()
        self.health.setObjectName("statusHealth")
        self.health.setAutoRaise(True)
        self.health.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.health.clicked.connect(self.healthClicked)
        self.model = QLabel("model: –")
        self.model.setObjectName("statusModel")
        self.usage = QLabel()
        self.usage.setObjectName("statusUsage")
        self.context = QLabel()
        self.context.setObjectName("statusContext")
        self.context.setToolTip(
            "The latest model request of this turn against the model's context window; Arbor keeps every "
            "request inside it (older tool results are elided, then summarised)"
        )
        self.state = QLabel()
        self.state.setObjectName("statusState")
        # The model's name and figures come from the backend (or a foreign agent): shown as plain text.
        for label in (self.model, self.usage, self.context):
            label.setTextFormat(Qt.TextFormat.PlainText)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.health)
        layout.addWidget(self.model)
        layout.addWidget(self.usage)
        layout.addWidget(self.context)
        layout.addStretch(1)
        layout.addWidget(self.state)
        self.set_state(BackendState.STOPPED)
        self.set_model_health(None)

    def set_state(self, state: str, doing: str | None = None) -> None:
        """Show the backend's :class:`BackendState`, in words: ``doing`` (``waiting for sign-in``) or its
        name."""
        colour = STATE_COLOURS.get(BackendState(state), "#7a808a")
        self.state.setText(f"<span style='color:{colour}'>●</span> backend {doing or state}")
        self.state.setProperty("state", state)

    def set_agent(self, meta: AgentMeta | None, name: str | None = None, mode: str | None = None) -> None:
        if meta is not None:
            text = f"model: {short_model(meta.model)}"
            self.model.setToolTip(
                f"{meta.model}\nArbor {meta.version} · architectures: {', '.join(meta.architectures)}"
            )
        else:
            text = f"agent: {name or 'unknown'}"
            self.model.setToolTip("This ACP agent does not report Arbor's model metadata.")
        self.model.setText(f"{text} · {mode}" if mode else text)

    def set_model_health(self, health: ModelHealth | None, note: str = "") -> None:
        """The model's dot: green ready, amber usable with a problem, red a turn would fail, grey not
        checked (``note`` says why); beside it, the problem and its fix; the tooltip gives the reason and
        every check, and a click opens the start page's model card."""
        colour = HEALTH_COLOURS[health.level] if health is not None else HEALTH_UNKNOWN
        summary = self.health.fontMetrics().elidedText(
            health_summary(health), Qt.TextElideMode.ElideRight, HEALTH_TEXT_WIDTH
        )
        # A tool button's text is plain (an '&' would be a mnemonic): the backend's words cannot be markup.
        self.health.setText(f"● {summary.replace('&', '&&')}" if summary else "●")
        self.health.setStyleSheet(f"QToolButton#statusHealth {{ color: {colour}; }}")
        self.health.setProperty("level", health.level if health is not None else "unknown")
        tip = health.describe() if health is not None else note or "The model has not been checked yet."
        self.health.setToolTip(f"{tip}\nClick to choose or test the model.")

    def set_context(self, tokens: int, window: int) -> None:
        self.context.setText(describe_context(tokens, window))

    def set_turn(self, meta: TurnMeta | None) -> None:
        self.usage.setText(describe_usage(meta) if meta is not None else "")
