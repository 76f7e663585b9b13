"""The dialog an agent's "authentication required" opens: each of the methods it listed in ``initialize``,
with what the user does for it.

- An **env-var** method: a field per variable (a password field for a secret), and *Save and retry* —
  the values go into that agent's ``[agents.NAME].env`` in the user's config.toml and the agent starts
  again with them and is asked to ``authenticate`` with the method — or *Use for this run only*. An
  agent that is not an ``[agents]`` entry (a command line) has only the latter, and the dialog says why.
- An **agent** method: *Sign in* asks the agent (``authenticate``), then for the session again.
- A **terminal** method: the command to run in a terminal (copyable), then *Retry*, which starts the agent
  again (ACP v1: a client reconnects after a terminal login).

What went wrong (a refusal, the agent still asking) is said in the dialog; Cancel leaves the agent
stopped. The dialog only asks: the ``sessions/part_auth.py`` part does the work (:mod:`ide.client.auth`).
"""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QFontDatabase, QFontMetrics, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ide.client.auth import AgentMethod, AuthNeeded, EnvVarMethod, TerminalMethod, terminal_command

ERROR_STYLE = "color: #c53030"


def _label(text: str, *, name: str = "", selectable: bool = False) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)  # what the agent says is shown, never interpreted
    label.setWordWrap(True)
    if name:
        label.setObjectName(name)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class AuthDialog(QDialog):
    """The agent's auth methods, one box each (see the module)."""

    saveRequested = Signal(str, object)
    """Store these values (a dict, variable → value) of the env-var method (id) and start the agent again."""
    useRequested = Signal(str, object)
    """Start the agent again with these values in its environment, storing nothing."""
    signInRequested = Signal(str)
    """Call ``authenticate`` with this method id."""
    retryRequested = Signal()
    """Start the agent again and ask for the session (after a terminal login)."""

    def __init__(
        self, needed: AuthNeeded, *, storable: bool, config: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("authDialog")
        self.setWindowTitle(f"Sign in to {needed.agent}")
        self.needed = needed
        self.fields: dict[str, dict[str, QLineEdit]] = {}
        """Each env-var method's fields by variable name."""
        self.buttons: dict[str, QPushButton] = {}
        """The action buttons, by ``save:ID``, ``use:ID``, ``sign-in:ID``, ``copy:ID``, ``retry:ID``."""
        self.commands: dict[str, QPlainTextEdit] = {}
        """Each terminal method's command line."""

        intro = _label(f"{needed.agent} asks you to sign in before it opens a session.", name="authIntro")
        intro.setStyleSheet("font-weight: bold")
        said = _label(f"It said: {needed.message}", name="authMessage", selectable=True)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(said)

        boxes = QWidget()
        column = QVBoxLayout(boxes)
        column.setContentsMargins(0, 0, 0, 0)
        for method in needed.methods:
            column.addWidget(self._box(method, storable, config))
        if not needed.methods:
            column.addWidget(
                _label(
                    "It lists no way to sign in (no authMethods in its initialize answer): see its own "
                    "documentation, then start it again.",
                    name="authNoMethods",
                )
            )
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(boxes)
        layout.addWidget(scroll, 1)

        self.status = _label("", name="authStatus", selectable=True)
        self.status.hide()
        layout.addWidget(self.status)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        box.rejected.connect(self.reject)
        self.cancel_button = box.button(QDialogButtonBox.StandardButton.Cancel)
        layout.addWidget(box)
        # As tall as the methods need (a scroll bar past that), never taller than most of the screen.
        scroll.setMinimumHeight(min(boxes.sizeHint().height() + 4, 520))
        self.resize(680, self.sizeHint().height())

    def _box(
        self, method: EnvVarMethod | TerminalMethod | AgentMethod, storable: bool, config: str
    ) -> QGroupBox:
        box = QGroupBox(method.name)
        box.setObjectName(f"authMethod_{method.id}")
        inner = QVBoxLayout(box)
        if method.description:
            inner.addWidget(_label(method.description))
        row = QHBoxLayout()
        row.addStretch(1)
        if isinstance(method, EnvVarMethod):
            form = QFormLayout()
            fields: dict[str, QLineEdit] = {}
            for var in method.vars:
                edit = QLineEdit()
                edit.setObjectName(f"authVar_{var.name}")
                if var.secret:
                    edit.setEchoMode(QLineEdit.EchoMode.Password)
                edit.setPlaceholderText("optional" if var.optional else "")
                label = var.name if var.label == var.name else f"{var.label} ({var.name})"
                form.addRow(_label(label), edit)
                fields[var.name] = edit
            self.fields[method.id] = fields
            inner.addLayout(form)
            if method.link:
                inner.addWidget(_label(f"Get it at: {method.link}", selectable=True))
            where = (
                f"Save and retry stores the values in [agents.{self.needed.agent}] env of {config} (private "
                "to you) and starts the agent again with them."
                if storable
                else f"{self.needed.agent} is not an [agents] entry of your settings (it was given as a "
                "command), so the value can only be stored for a named agent: use it for this run only, "
                "or add the agent to [agents] in your config.toml."
            )
            inner.addWidget(_label(where, name=f"authWhere_{method.id}"))
            use = self._button(f"use:{method.id}", "Use for this &run only")
            use.clicked.connect(lambda _=False, m=method.id: self._values(m, self.useRequested))
            row.addWidget(use)
            if storable:
                save = self._button(f"save:{method.id}", "&Save and retry")
                save.setDefault(True)
                save.clicked.connect(lambda _=False, m=method.id: self._values(m, self.saveRequested))
                row.addWidget(save)
        elif isinstance(method, TerminalMethod):
            inner.addWidget(_label("Run this in a terminal, then Retry:"))
            line = QPlainTextEdit(terminal_command(self.needed.command, method))
            line.setObjectName(f"authCommand_{method.id}")
            line.setReadOnly(True)
            line.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
            line.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            rows = QFontMetrics(line.font()).lineSpacing() * 3
            line.setFixedHeight(rows + 2 * line.frameWidth() + int(line.document().documentMargin() * 2))
            self.commands[method.id] = line
            inner.addWidget(line)
            copy = self._button(f"copy:{method.id}", "&Copy")
            copy.clicked.connect(lambda _=False, m=method.id: self.copy_command(m))
            retry = self._button(f"retry:{method.id}", "R&etry")
            retry.clicked.connect(lambda: self._act(f"Starting {self.needed.agent} again…"))
            retry.clicked.connect(self.retryRequested)
            row.addWidget(copy)
            row.addWidget(retry)
        else:
            sign_in = self._button(f"sign-in:{method.id}", "Sign &in")
            sign_in.clicked.connect(lambda _=False, m=method.id: self._sign_in(m))
            row.addWidget(sign_in)
        inner.addLayout(row)
        return box

    def _button(self, key: str, text: str) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(f"authButton_{key.replace(':', '_')}")
        button.setAutoDefault(False)
        self.buttons[key] = button
        return button

    def _values(self, method_id: str, signal: SignalInstance) -> None:
        method = next(m for m in self.needed.methods if m.id == method_id)
        assert isinstance(method, EnvVarMethod)
        fields = self.fields[method_id]
        values = {var.name: fields[var.name].text().strip() for var in method.vars}
        missing = method.missing(values)
        if missing:
            self.fail(f"Fill in {', '.join(missing)} first.")
            fields[missing[0]].setFocus()
            return
        self._act(f"Starting {self.needed.agent} again with {', '.join(v for v in values if values[v])}…")
        signal.emit(method_id, {name: value for name, value in values.items() if value})

    def _sign_in(self, method_id: str) -> None:
        self._act(f"Waiting for {self.needed.agent} to sign in…")
        self.signInRequested.emit(method_id)

    def copy_command(self, method_id: str) -> None:
        """Put the terminal method's command on the clipboard."""
        QGuiApplication.clipboard().setText(self.commands[method_id].toPlainText())
        self.say("The command is on the clipboard: run it in a terminal, then Retry.")

    def _act(self, text: str) -> None:
        self.busy = True
        for button in self.buttons.values():
            button.setEnabled(False)
        self.say(text)

    busy = False
    """An action was asked for and its outcome has not come yet."""

    def say(self, text: str) -> None:
        """Show ``text`` under the methods, as news (not an error)."""
        self.status.setStyleSheet("")
        self.status.setText(text)
        self.status.show()

    def fail(self, text: str) -> None:
        """Show what went wrong, and let the user act again."""
        self.busy = False
        for button in self.buttons.values():
            button.setEnabled(True)
        self.status.setStyleSheet(ERROR_STYLE)
        self.status.setText(text)
        self.status.show()

    def values(self, method_id: str) -> Mapping[str, str]:
        """What the fields of the env-var method ``method_id`` hold now."""
        return {name: edit.text() for name, edit in self.fields.get(method_id, {}).items()}

    def forget(self) -> None:
        """Clear every field (the dialog is done; no secret stays in it)."""
        for fields in self.fields.values():
            for edit in fields.values():
                edit.clear()
