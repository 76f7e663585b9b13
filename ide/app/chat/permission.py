"""The dialog that answers an agent's permission request (a workflow's test run, a foreign agent's edit or
command): what the tool call would do — its diff, command and arguments — and one button per option the
agent offers. Closing it (Esc, the window) rejects; only a cancelled turn answers ``cancelled``.

It fits the window it asks for, however long what it shows: a long command wraps (anywhere, when it has
no spaces), the details scroll inside, the title is cut, and option buttons too many or too long for a
row stand in a column, a name too long for the dialog cut short with the whole of it in its tooltip."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ide.app.review.diffs import local_hunks
from ide.protocol.diff import TextFile, diff_text

DETAILS_MAX_HEIGHT = 320
TITLE_MAX_CHARS = 300
"""The most of the agent's title shown (a command given as the title can be thousands of characters; the
details show it whole)."""
BREAK_EVERY = 40
"""A run of this many characters without a space gets a place to wrap: a title never outgrows the dialog."""


def tool_call_details(tool_call: Any, root: Path | None = None) -> str:
    """What a permission request's tool call would do, as text: the command it runs, each ``diff`` of its
    content as a small unified diff (paths inside ``root`` shown relative to it), its text content, then
    its raw arguments."""
    parts: list[str] = []
    raw = getattr(tool_call, "raw_input", None)
    command = raw.get("command") if isinstance(raw, dict) else None
    if isinstance(command, list):
        command = shlex.join(str(part) for part in command)  # quoted as a shell reads it: bash -lc '…'
    if isinstance(command, str) and command:
        parts.append(f"$ {command}")
    for item in getattr(tool_call, "content", None) or []:
        kind = getattr(item, "type", None)
        if kind == "diff":
            old, new = getattr(item, "old_text", None), item.new_text
            path = _shown_path(item.path, root)
            hunks = local_hunks(path, old, new)
            status = "added" if old is None else "modified"
            parts.append(diff_text([TextFile(path, hunks, status=status)], "plain") or f"{path}: no change")
        elif kind == "content":
            text = getattr(item.content, "text", None)
            if text:
                parts.append(text)
        elif kind == "terminal":
            parts.append(f"(terminal {item.terminal_id})")
    if raw:
        parts.append("Arguments:\n" + json.dumps(raw, indent=2, ensure_ascii=False, default=str))
    return "\n\n".join(parts)


def wrappable(text: str, limit: int = TITLE_MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis ending it), with a zero-width space after every
    :data:`BREAK_EVERY` characters of a run without a space, where a label may wrap it."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return re.sub(rf"(\S{{{BREAK_EVERY}}})(?=\S)", "\\1\u200b", text)


def _shown_path(path: str, root: Path | None) -> str:
    """``path`` relative to the workspace when it lies inside it, else as given without a leading slash
    (a diff header reads ``a/PATH``)."""
    if root is not None:
        with contextlib.suppress(ValueError):
            return Path(path).relative_to(root).as_posix()
    return path.lstrip("/")


class PermissionDialog(QDialog):
    """Asks one question at a time; :meth:`ask` resolves to the chosen option id, the reject option when
    the dialog is closed, or None (``cancelled``) when the turn is cancelled or nothing can reject."""

    def __init__(
        self,
        parent: QWidget | None = None,
        root: Path | None = None,
        shadow: Callable[[], Path | None] = lambda: None,
    ) -> None:
        super().__init__(parent)
        self.root = root
        """The workspace: diffs show paths relative to it."""
        self.shadow = shadow
        """The shadow of the workspace the agent works in, if it does: what it asks runs there."""
        self.setObjectName("permissionDialog")
        self.setWindowTitle("The agent asks")
        self.setModal(False)
        layout = QVBoxLayout(self)
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # the agent's words: never markup that loads files
        self.title.setWordWrap(True)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        # A long command line wraps, at spaces or anywhere: the dialog is never wider than the window.
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.details.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setMaximumHeight(DETAILS_MAX_HEIGHT)
        self.buttons = QDialogButtonBox()
        self.where = QLabel()
        self.where.setObjectName("permissionWhere")
        self.where.setTextFormat(Qt.TextFormat.PlainText)
        self.where.setWordWrap(True)
        self.where.setStyleSheet("color: #24507f;")
        layout.addWidget(self.title)
        layout.addWidget(self.where)
        layout.addWidget(self.details)
        layout.addWidget(self.buttons)
        self._answer: asyncio.Future[str | None] | None = None
        self._reject: str | None = None
        self.rejected.connect(lambda: self._resolve(self._reject))

    def button_for(self, option_id: str) -> QPushButton | None:
        for button in self.buttons.buttons():
            if button.property("optionId") == option_id:
                return button  # type: ignore[return-value]
        return None

    async def ask(self, session_id: str, tool_call: Any, options: list[Any]) -> str | None:
        if self._answer is not None and not self._answer.done():
            return self._reject_of(options)  # one question at a time; a second one is refused
        self._answer = asyncio.get_running_loop().create_future()
        self._reject = self._reject_of(options)
        self.title.setText(wrappable(getattr(tool_call, "title", None) or "Allow this?"))
        shadow = self.shadow()
        self.where.setText(
            f"It runs in a shadow of the workspace ({shadow}): your files change only when you apply its "
            "changes in Review."
            if shadow is not None
            else ""
        )
        self.where.setVisible(shadow is not None)
        details = tool_call_details(tool_call, shadow or self.root)
        self.details.setPlainText(details)
        self.details.setVisible(bool(details))
        self.buttons.clear()
        for option in options:
            button = self.buttons.addButton(option.name, QDialogButtonBox.ButtonRole.ActionRole)
            button.setProperty("optionId", option.option_id)
            button.setProperty("optionName", option.name)
            button.clicked.connect(lambda _checked=False, oid=option.option_id: self._choose(oid))
        self._fit()
        self.show()
        self.raise_()
        try:
            return await self._answer
        finally:
            self.hide()

    def _fit(self) -> None:
        """At most as large as the window it asks for (the screen without one), over its middle; option
        buttons in a row when they fit in one, else in a column, a name too long for it cut short."""
        parent = self.parentWidget()
        screen = self.screen() or QGuiApplication.primaryScreen()
        area = parent.window().geometry() if parent is not None else screen.availableGeometry()
        self.setMaximumSize(area.size())
        margins = self.layout().contentsMargins()
        room = area.width() - margins.left() - margins.right()
        buttons: list[QAbstractButton] = self.buttons.buttons()
        for button in buttons:
            button.setText(button.property("optionName"))
            button.setToolTip("")
        self.buttons.setOrientation(Qt.Orientation.Horizontal)
        if self.buttons.sizeHint().width() > room:
            self.buttons.setOrientation(Qt.Orientation.Vertical)
        for button in buttons:
            name = button.text()
            if button.sizeHint().width() > room:
                padding = button.sizeHint().width() - button.fontMetrics().horizontalAdvance(name)
                cut = button.fontMetrics().elidedText(name, Qt.TextElideMode.ElideRight, room - padding)
                button.setText(cut)
                button.setToolTip(name)
        self.adjustSize()
        self.move(area.center() - self.rect().center())

    def cancel_turn(self) -> None:
        """The turn was cancelled: an open question is answered ``cancelled``, as ACP asks."""
        self._resolve(None)

    @staticmethod
    def _reject_of(options: list[Any]) -> str | None:
        kinds = [getattr(option, "kind", "") or "" for option in options]
        for wanted in ("reject_once", "reject_always"):
            if wanted in kinds:
                return options[kinds.index(wanted)].option_id
        return None

    def _choose(self, option_id: str) -> None:
        self._resolve(option_id)

    def _resolve(self, choice: str | None) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(choice)
