"""The start page in the window's centre while the conversation is empty: the model (its health and fix,
Ollama's models to pick from, an OpenAI-compatible server to test), the recorded sample tree, the scripted
demo turn, an eval report, and the workspace's recent sessions.

A widget only: it shows what it is given and says what the user asked for through its signals; the start
part (:mod:`ide.app.start.part`) does the asking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ide.app.widgets.controls import plain_label

if TYPE_CHECKING:
    from ide.protocol.model import ModelHealth, ModelProbe

PAGE_WIDTH = 720
"""The widest the page's column gets: lines stay readable on a wide window."""
RECENT_SESSIONS = 6
SESSION_ROLE = Qt.ItemDataRole.UserRole
VERDICT_COLOURS = {"ok": "#2f855a", "warning": "#b7791f", "error": "#c53030", "unknown": "#5f6570"}
OPENAI_URL_HINT = "http://localhost:8080/v1"


def card(title: str) -> tuple[QFrame, QVBoxLayout]:
    """A titled, framed section of the page and the layout to fill it."""
    frame = QFrame()
    frame.setObjectName("startCard")
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(14, 10, 14, 12)
    layout.setSpacing(6)
    heading = QLabel(title)
    heading.setObjectName("startCardTitle")
    font = heading.font()
    font.setBold(True)
    font.setPointSizeF(font.pointSizeF() * 1.1)
    heading.setFont(font)
    layout.addWidget(heading)
    return frame, layout


def muted(text: str) -> QLabel:
    label = plain_label("mutedLabel")
    label.setText(text)
    return label


class StartPage(QScrollArea):
    """What a new conversation starts from. Interface: :meth:`set_model`, :meth:`set_health`,
    :meth:`set_probes`, :meth:`set_ollama_models`, :meth:`set_sessions`, :meth:`set_sample_available`;
    the signals below."""

    ollamaModelChosen = Signal(str)
    """A model Ollama lists, to use in this window (``ollama:NAME``)."""
    openaiTestRequested = Signal(str, str)
    """(base URL, model name) of an OpenAI-compatible server: use it in this window and probe it."""
    testRequested = Signal()
    """Probe the current model (Agent → Test Model)."""
    sampleRequested = Signal()
    demoRequested = Signal()
    reportRequested = Signal()
    sessionRequested = Signal(str)

    def __init__(self, workspace_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("startPage")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        column = QWidget()
        column.setObjectName("startColumn")
        column.setMaximumWidth(PAGE_WIDTH)
        outer = QWidget()
        centring = QHBoxLayout(outer)
        centring.addStretch(1)
        centring.addWidget(column, 100)
        centring.addStretch(1)
        layout = QVBoxLayout(column)
        layout.setContentsMargins(8, 16, 8, 16)
        layout.setSpacing(12)

        title = QLabel(f"Start with {workspace_name}")
        title.setObjectName("startTitle")
        title.setTextFormat(Qt.TextFormat.PlainText)
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        title.setFont(font)
        layout.addWidget(title)
        layout.addWidget(
            muted(
                "Nothing in this conversation yet. A file opened or a prompt sent puts the code here; "
                "View → Start Page brings this back."
            )
        )
        layout.addWidget(self._try_card())
        layout.addWidget(self._model_card())
        layout.addWidget(self._sessions_card())
        layout.addStretch(1)
        self.setWidget(outer)

    def _model_card(self) -> QFrame:
        frame, layout = card("Model")
        self.model_label = plain_label("startModel")
        self.verdict = plain_label("startVerdict")
        self.fix = plain_label("startFix")
        # Bold through the application stylesheet (QLabel#startFix, ide.app.theme).
        self.probe_label = plain_label("startProbe")
        self.test_button = QPushButton("Test Model")
        self.test_button.setToolTip("Send the model one real tool-call request and one structured request")
        self.test_button.clicked.connect(self.testRequested)
        top = QHBoxLayout()
        top.addWidget(self.model_label, 1)
        top.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        layout.addWidget(self.verdict)
        layout.addWidget(self.fix)
        layout.addWidget(self.probe_label)

        self.ollama_label = plain_label("startOllama")
        self.ollama_models = QComboBox()
        self.ollama_models.setObjectName("startOllamaModels")
        self.ollama_models.setMinimumContentsLength(16)
        self.use_button = QPushButton("Use")
        self.use_button.setToolTip("Restart this window's backend with this model")
        self.use_button.clicked.connect(self._use_ollama)
        self.openai_url = QLineEdit()
        self.openai_url.setObjectName("startOpenaiUrl")
        self.openai_url.setPlaceholderText(OPENAI_URL_HINT)
        self.openai_url.setToolTip("llama-server, vLLM, LM Studio or any server with /v1/chat/completions")
        self.openai_model = QLineEdit()
        self.openai_model.setObjectName("startOpenaiModel")
        self.openai_model.setPlaceholderText("model name")
        self.openai_model.setToolTip("The model's name as the server lists it (its /v1/models)")
        self.openai_test = QPushButton("Test")
        self.openai_test.setToolTip(
            "Restart this window's backend on this server and model, and send it one tool-call request and "
            "one structured request"
        )
        self.openai_test.clicked.connect(self._test_openai)
        self.openai_url.returnPressed.connect(self._test_openai)
        self.openai_model.returnPressed.connect(self._test_openai)
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.addWidget(QLabel("Ollama"), 0, 0)
        ollama = QHBoxLayout()
        ollama.addWidget(self.ollama_models, 2)
        ollama.addWidget(self.use_button)
        ollama.addWidget(self.ollama_label, 3)
        grid.addLayout(ollama, 0, 1)
        grid.addWidget(QLabel("OpenAI-compatible"), 1, 0)
        openai = QHBoxLayout()
        openai.addWidget(self.openai_url, 3)
        openai.addWidget(self.openai_model, 2)
        openai.addWidget(self.openai_test)
        grid.addLayout(openai, 1, 1)
        grid.setColumnStretch(1, 1)
        layout.addLayout(grid)
        self.model_note = muted("")
        layout.addWidget(self.model_note)
        self.set_ollama_models(None, "")
        self.set_health(None, "The backend is starting…")
        return frame

    def _try_card(self) -> QFrame:
        frame, layout = card("See Arbor work — no model needed")
        self.sample_button = QPushButton("Open the recorded sample tree")
        self.sample_button.setObjectName("startSample")
        self.sample_button.clicked.connect(self.sampleRequested)
        self.demo_button = QPushButton("Run the scripted demo turn")
        self.demo_button.setObjectName("startDemo")
        self.demo_button.clicked.connect(self.demoRequested)
        self.report_button = QPushButton("Open an eval report…")
        self.report_button.setObjectName("startReport")
        self.report_button.clicked.connect(self.reportRequested)
        self.sample_button.setToolTip("A LATS search that fixed a bug: every node, its score, the best path")
        self.demo_button.setToolTip(
            "The same task live in a window of its own, on a throwaway copy of the sample project, answered "
            "by a scripted model (allow its test command when asked)"
        )
        self.report_button.setToolTip("report.json, or the folder arbor eval --out wrote it to")
        buttons = QHBoxLayout()
        for button in (self.sample_button, self.demo_button, self.report_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addWidget(
            muted(
                "A recorded LATS search that fixed a bug; the same task run live in a second window by a "
                "scripted model; the results of arbor eval."
            )
        )
        self.sample_note = muted("")
        self.sample_note.hide()
        layout.addWidget(self.sample_note)
        return frame

    def _sessions_card(self) -> QFrame:
        frame, layout = card("Recent sessions")
        self.sessions = QListWidget()
        self.sessions.setObjectName("startSessions")
        self.sessions.setMaximumHeight(150)
        self.sessions.itemActivated.connect(lambda item: self.sessionRequested.emit(item.data(SESSION_ROLE)))
        self.sessions_note = muted("")
        layout.addWidget(self.sessions)
        layout.addWidget(self.sessions_note)
        self.set_sessions([])
        return frame

    def set_model(self, spec: str | None, agent: str | None = None) -> None:
        """The model the window's agent uses (``agent``: a foreign agent, which picks its own)."""
        if spec:
            self.model_label.setText(f"This window's model: {spec}")
        else:
            self.model_label.setText(f"The agent {agent or '?'} chooses its own model.")
        arbor = bool(spec)
        for widget in (self.ollama_models, self.use_button, self.openai_url, self.openai_model):
            widget.setEnabled(arbor)
        self.openai_test.setEnabled(arbor)
        self.test_button.setEnabled(arbor)

    def set_health(self, health: ModelHealth | None, note: str = "") -> None:
        """The health check's verdict and, when a turn would fail or go badly, the fix."""
        level = health.level if health is not None else "unknown"
        if health is None:
            text = note or "Not checked yet."
        elif level == "ok":
            text = "Ready: its server answers and has the model."
        else:
            text = ("A turn would fail: " if level == "error" else "A turn may go badly: ") + health.reason
        self.verdict.setText(f"● {text}")
        self.verdict.setProperty("level", level)
        self.verdict.setStyleSheet(f"color: {VERDICT_COLOURS[level]};")
        fix = health.fix if health is not None and level != "ok" else None
        self.fix.setText(f"Fix: {fix}" if fix else "")
        self.fix.setVisible(bool(fix))

    def set_probes(self, probes: list[ModelProbe]) -> None:
        """What Test Model found: one line per model."""
        self.probe_label.setText("\n".join(probe.describe() for probe in probes))
        self.probe_label.setVisible(bool(probes))

    def set_ollama_models(self, models: list[str] | None, where: str) -> None:
        """Ollama's models (None: not asked, or not reachable); ``where`` says what the check found."""
        current = self.ollama_models.currentText()
        self.ollama_models.clear()
        self.ollama_models.addItems(models or [])
        if current in (models or []):
            self.ollama_models.setCurrentText(current)
        for widget in (self.ollama_models, self.use_button):
            widget.setVisible(models is not None)
        if models is None:
            self.ollama_label.setText(where or "Asked when this window's model is an ollama: one.")
        elif not models:
            self.ollama_label.setText(f"{where}, with no model pulled: run ollama pull qwen3:8b")
        else:
            noun = "model" if len(models) == 1 else "models"
            self.ollama_label.setText(f"{where}, with {len(models)} {noun} pulled.")
        self.use_button.setEnabled(bool(models))

    def set_model_note(self, text: str) -> None:
        """A line under the model's controls: what a switch did, or how to keep it."""
        self.model_note.setText(text)

    def set_sample_available(self, available: bool, reason: str = "") -> None:
        """The sample and the demo need the source checkout's resources/samples."""
        self.sample_button.setEnabled(available)
        self.demo_button.setEnabled(available)
        self.sample_note.setText(reason)
        self.sample_note.setVisible(not available and bool(reason))

    def set_sessions(self, sessions: list[tuple[str, str]]) -> None:
        """(session id, "title · when") of earlier sessions, newest first."""
        self.sessions.clear()
        for session_id, text in sessions[:RECENT_SESSIONS]:
            item = QListWidgetItem(text)
            item.setData(SESSION_ROLE, session_id)
            item.setToolTip(f"{text}\nDouble-click to reopen its chat, trees and review")
            self.sessions.addItem(item)
        self.sessions.setVisible(bool(sessions))
        self.sessions_note.setText(
            "Double-click one to reopen it." if sessions else "No earlier sessions in this workspace."
        )

    def _use_ollama(self) -> None:
        name = self.ollama_models.currentText()
        if name:
            self.ollamaModelChosen.emit(name)

    def _test_openai(self) -> None:
        url, model = self.openai_url.text().strip(), self.openai_model.text().strip()
        if not url.startswith(("http://", "https://")):
            self.set_model_note("Give the server's URL, e.g. http://localhost:8080/v1.")
            return
        if not model:
            self.set_model_note("Give the model's name as the server lists it (its /v1/models).")
            return
        self.openaiTestRequested.emit(url, model)
