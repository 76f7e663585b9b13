"""The dialog that answers an agent's permission request (e.g. a workflow's test run): one button per
option the agent offers, nothing chosen when the dialog is closed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class PermissionDialog(QDialog):
    """Asks one question at a time; :meth:`ask` resolves to the chosen option id or None."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("permissionDialog")
        self.setWindowTitle("The agent asks")
        self.setModal(False)
        layout = QVBoxLayout(self)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setMaximumHeight(120)
        self.buttons = QDialogButtonBox()
        layout.addWidget(self.title)
        layout.addWidget(self.details)
        layout.addWidget(self.buttons)
        self._answer: asyncio.Future[str | None] | None = None
        self.rejected.connect(lambda: self._resolve(None))

    def button_for(self, option_id: str) -> QPushButton | None:
        for button in self.buttons.buttons():
            if button.property("optionId") == option_id:
                return button  # type: ignore[return-value]
        return None

    async def ask(self, session_id: str, tool_call: Any, options: list[Any]) -> str | None:
        if self._answer is not None and not self._answer.done():
            return None  # one question at a time; a second one is refused, never answered blindly
        self._answer = asyncio.get_running_loop().create_future()
        self.title.setText(getattr(tool_call, "title", None) or "Allow this?")
        raw = getattr(tool_call, "raw_input", None)
        self.details.setPlainText(json.dumps(raw, indent=2) if raw else "")
        self.details.setVisible(bool(raw))
        self.buttons.clear()
        for option in options:
            button = self.buttons.addButton(option.name, QDialogButtonBox.ButtonRole.ActionRole)
            button.setProperty("optionId", option.option_id)
            button.clicked.connect(lambda _checked=False, oid=option.option_id: self._choose(oid))
        self.show()
        self.raise_()
        try:
            return await self._answer
        finally:
            self.hide()

    def _choose(self, option_id: str) -> None:
        self._resolve(option_id)

    def _resolve(self, choice: str | None) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(choice)
