"""The workspace-trust dialog: what the repository's ``.arbor/config.toml`` wants that Arbor holds back —
the exact commands it would run and hosts it would reach — and the user's answer."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from ide.app.theme import mono_font

if TYPE_CHECKING:
    from ide.settings import ResolvedSettings


def trust_summary(resolved: ResolvedSettings) -> str:
    """The held-back settings as the dialog lists them: the commands first, then each setting and why."""
    commands = [line for item in resolved.trust_keys for line in item.commands()]
    lines = []
    if commands:
        lines.append("Commands it would run:")
        lines.extend(f"  $ {command}" for command in commands)
        lines.append("")
    lines.append("Settings applied:" if resolved.trusted else "Settings held back:")
    for item in resolved.trust_keys:
        line = item.source.rpartition(":")[2]
        at = f" (line {line})" if line.isdigit() else ""
        lines.append(f"  {item.key}{at}: {item.reason}")
        lines.append(f"      = {json.dumps(item.value, ensure_ascii=False)}")
    return "\n".join(lines)


class TrustDialog(QDialog):
    """Ask whether to trust a workspace; :attr:`decided` carries True (trust) or False (keep restricted)."""

    decided = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("trustDialog")
        self.setWindowTitle("Trust this workspace?")
        self.setModal(True)
        self.resize(720, 380)
        layout = QVBoxLayout(self)
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.intro.setTextFormat(Qt.TextFormat.PlainText)  # it names the workspace's path
        self.details = QPlainTextEdit()
        self.details.setObjectName("trustDetails")
        self.details.setReadOnly(True)
        self.details.setFont(mono_font())
        self.buttons = QDialogButtonBox()
        self.trust_button = self.buttons.addButton(
            "Trust this workspace", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.restrict_button = self.buttons.addButton(
            "Keep restricted", QDialogButtonBox.ButtonRole.RejectRole
        )
        self.trust_button.setAutoDefault(False)  # Enter must not trust by accident
        layout.addWidget(self.intro)
        layout.addWidget(self.details, 1)
        layout.addWidget(self.buttons)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.accepted.connect(lambda: self.decided.emit(True))
        self.rejected.connect(lambda: self.decided.emit(False))

    def ask(self, resolved: ResolvedSettings) -> None:
        """Show what ``resolved`` holds back (or, when already trusted, what trust applies) and ask."""
        where = resolved.workspace or "this workspace"
        if resolved.trusted:
            self.intro.setText(
                f"You trust {where}: Arbor applies these settings from its .arbor/config.toml. "
                "Keep restricted to hold them back again (the backend restarts)."
            )
        else:
            self.intro.setText(
                f"The repository at {where} asks, in its .arbor/config.toml, for settings that run "
                "commands, reach other hosts or widen what the agent reads. Arbor holds them back until "
                "you trust this workspace. Trust it only if you trust where the repository came from; "
                "a changed config asks again."
            )
        self.details.setPlainText(trust_summary(resolved))
        self.open()
        self.restrict_button.setDefault(True)  # after open(): the button box picks a default when shown
        self.restrict_button.setFocus()
