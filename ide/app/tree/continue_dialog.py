"""Continue from here…: the small dialog that asks for the continuation's hint (optional) and the mode it
runs in, the run's own architecture chosen unless the user picks another of the session's modes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from ide.app.widgets.controls import plain_label

HINT_PLACEHOLDER = (
    "Optional guidance, in your words: “the bug is in mean(), not in the tests”, “try a smaller edit”. "
    "Empty: the agent goes on as it would have."
)


class ContinueDialog(QDialog):
    """Asks for the hint and the mode; :meth:`ask` fills it for a node, ``accepted`` says the user chose
    Continue (:meth:`hint`, :meth:`mode`). Ctrl+Enter continues from the hint box."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("continueDialog")
        self.setWindowTitle("Continue from here")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(480)
        self.node_label = plain_label("continueNode")
        self.intro = plain_label("mutedLabel")
        self.hint_box = QPlainTextEdit()
        self.hint_box.setObjectName("continueHint")
        self.hint_box.setPlaceholderText(HINT_PLACEHOLDER)
        self.hint_box.setTabChangesFocus(True)
        self.hint_box.setFixedHeight(self.hint_box.fontMetrics().lineSpacing() * 5 + 12)
        self.mode_box = QComboBox()
        self.mode_box.setObjectName("continueMode")
        self.note = plain_label("mutedLabel")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.continue_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.continue_button.setText("Continue")
        self.continue_button.setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=self.accept)
        form = QFormLayout()
        form.addRow("Hint", self.hint_box)
        form.addRow("Mode", self.mode_box)
        layout = QVBoxLayout(self)
        layout.addWidget(self.node_label)
        layout.addWidget(self.intro)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.buttons)

    def ask(
        self,
        node: str,
        modes: list[tuple[str, str, str]],
        default: str | None,
        note: str = "",
    ) -> None:
        """Show the dialog for ``node`` (what it says of the node and its run), the session's ``modes``
        (id, name, description) to pick from with ``default`` (the run's architecture) chosen, and a
        ``note`` on what the continuation will have; the hint box empty and focused."""
        self.node_label.setText(node)
        self.intro.setText(
            "A new turn starts from this node's state: its path (thoughts, tool calls and what they "
            "returned) and its branch's changes, with your hint as the user's guidance."
        )
        self.mode_box.clear()
        for mode_id, name, description in modes:
            own = " — as the run" if mode_id == default else ""
            self.mode_box.addItem(f"{name}{own}", mode_id)
            self.mode_box.setItemData(self.mode_box.count() - 1, description, Qt.ItemDataRole.ToolTipRole)
        if self.mode_box.findData(default) < 0:
            self.mode_box.insertItem(0, f"{default or 'the run’s own'} — as the run", default)
        self.mode_box.setCurrentIndex(max(self.mode_box.findData(default), 0))
        self.note.setText(note)
        self.note.setVisible(bool(note))
        self.hint_box.clear()
        self.open()
        self.hint_box.setFocus()

    def hint(self) -> str:
        return self.hint_box.toPlainText().strip()

    def mode(self) -> str | None:
        """The mode chosen (a mode id; None: the run's own, which the session does not list)."""
        return self.mode_box.currentData()
