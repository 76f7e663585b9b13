"""The Chat panel: the conversation as blocks, a prompt box, Send and Stop.

The panel renders a :class:`~ide.app.chat.conversation.Conversation`; :meth:`ChatPanel.apply_update` is the
only way content gets in, for live turns and ``session/load`` replays alike. Streaming chunks only mark
blocks dirty; a short single-shot timer re-renders them, so a fast stream costs one Markdown render per
tick rather than one per chunk.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ide.app.acp_client import BackendState
from ide.app.chat.blocks import (
    AssistantMessageView,
    BlockView,
    NoticeView,
    PlanView,
    ThoughtView,
    ToolCallView,
    UserMessageView,
)
from ide.app.chat.conversation import Block, Conversation, NoticeBlock, PlanBlock, ToolBlock, TurnNotice
from ide.app.chat.links import LinkDialog, web_link
from ide.app.chat.options import OptionsBar
from ide.app.widgets.controls import edge_to_edge

if TYPE_CHECKING:
    from ide.client.events import PromptSent, SessionEvent

__all__ = [
    "AssistantMessageView",
    "BlockView",
    "ChatPanel",
    "NoticeView",
    "PlanView",
    "PromptEdit",
    "ThoughtView",
    "ToolCallView",
    "UserMessageView",
    "resolve_location",
]

RENDER_DELAY_MS = 50
"""Coalescing window for re-rendering streamed text (about 20 renders a second at most)."""
ANSWER_TOP_MARGIN = 6
"""Pixels above a tall answer's first line when a turn's end scrolls to it."""
MESSAGE_MS = 10_000
"""How long a message about a link stays in the status bar."""


class PromptEdit(QPlainTextEdit):
    """The prompt box: Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("promptEdit")
        self.setPlaceholderText("Ask about this workspace…  (Enter sends, Shift+Enter for a new line)")
        self.setTabChangesFocus(True)
        lines = 3
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 18)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class ChatPanel(QWidget):
    """Dock content: the conversation and the prompt box.

    Interface: :meth:`apply_update`, :meth:`prompt_sent`, :meth:`turn_ended`, :meth:`turn_failed`,
    :meth:`clear`, :meth:`replay`, :meth:`set_backend_state`, :meth:`open_link`; signals
    :attr:`promptSubmitted`, :attr:`stopRequested`, :attr:`locationActivated`.
    """

    promptSubmitted = Signal(str)
    stopRequested = Signal()
    locationActivated = Signal(str, int)
    """A file location in a tool call was clicked: path (as the agent sent it) and 1-based line (0: none)."""
    rendered = Signal()
    """Pending re-renders were flushed to the screen."""
    modeChosen = Signal(str)
    """The user picked another agent architecture (ACP session mode id) in the mode box."""
    workflowChosen = Signal(str)
    """The user picked a workflow (or ``auto``) in the workflow box."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatPanel")
        self.conversation = Conversation()
        self.updates: list[SessionEvent | TurnNotice] = []
        """The events the conversation was built from (what :meth:`replay` rebuilds it from)."""
        self.workspace: Path | None = None
        """Tool-call locations inside it are shown relative to it."""
        self._views: dict[Block, BlockView] = {}
        self._dirty: list[BlockView] = []
        self._state = BackendState.STOPPED
        self.link_dialog: LinkDialog | None = None
        """Asks before a link in an answer opens (made at the first click on one)."""
        self.turn_running = False
        """A prompt was sent and its turn has not ended (set by :meth:`prompt_sent`)."""
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(RENDER_DELAY_MS)
        self._render_timer.timeout.connect(self.flush)

        self._column = QWidget()
        self._column.setObjectName("chatColumn")
        self._blocks = QVBoxLayout(self._column)
        self._blocks.setContentsMargins(10, 10, 10, 10)
        self._blocks.setSpacing(8)
        self._empty = QLabel("No messages yet.\nAsk a question about the workspace to start.")
        self._empty.setObjectName("mutedLabel")
        self._empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._blocks.addWidget(self._empty)
        self._blocks.addStretch(1)
        self.scroll = QScrollArea()
        self.scroll.setObjectName("chatScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self._column)
        self._answer_pending = False
        """A turn ended and the user has not scrolled since: the answer is kept in view as layout settles."""
        self.scroll.verticalScrollBar().rangeChanged.connect(self._on_scroll_range)
        self.scroll.verticalScrollBar().actionTriggered.connect(self._user_scrolled)

        self.prompt = PromptEdit()
        self.prompt.submitted.connect(self.submit)
        self.prompt.textChanged.connect(self._update_buttons)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.submit)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setToolTip("Ask the agent to stop this turn")
        self.stop_button.clicked.connect(self.stopRequested)
        self._hint = QLabel()
        self._hint.setObjectName("mutedLabel")
        self._hint.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # gives way first
        self.mode_box = QComboBox()
        self.mode_box.setObjectName("modeBox")
        self.mode_box.setToolTip("Agent architecture for the next prompt")
        # Sized to its longest mode whenever the modes change (Qt's default sizes it once, at first show,
        # and a list that grew later read "LATS tre"); it never shrinks below that.
        self.mode_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.mode_box.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.mode_box.setEnabled(False)
        self.mode_box.activated.connect(self._on_mode_activated)

        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.mode_box)
        self.workflow_box = QComboBox()
        self.workflow_box.setObjectName("workflowBox")
        self.workflow_box.setToolTip("Workflow of the workflow mode")
        self.workflow_box.setVisible(False)
        self.workflow_box.activated.connect(self._on_workflow_activated)
        buttons.addWidget(self.workflow_box)
        self.options = OptionsBar()
        """The agent's own config options (``configOptions``) as selectors, on a row of their own: beside
        the mode and workflow boxes they squeezed both down to a few letters."""
        buttons.addWidget(self._hint, 1)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.send_button)
        bottom = QVBoxLayout()
        bottom.setContentsMargins(8, 6, 8, 8)
        bottom.setSpacing(6)
        bottom.addWidget(self.prompt)
        bottom.addWidget(self.options)
        bottom.addLayout(buttons)
        layout = edge_to_edge(self)
        layout.addWidget(self.scroll, 1)
        separator = QFrame()
        separator.setFrameShape(QFrame.Shape.HLine)
        separator.setObjectName("separator")
        layout.addWidget(separator)
        layout.addLayout(bottom)
        self._update_buttons()

    def set_modes(self, modes: list[tuple[str, str, str]], current: str | None) -> None:
        """Offer the agent's session modes (id, name, description) with ``current`` selected."""
        self.mode_box.blockSignals(True)
        self.mode_box.clear()
        for mode_id, name, description in modes:
            self.mode_box.addItem(name, mode_id)
            self.mode_box.setItemData(self.mode_box.count() - 1, description, Qt.ItemDataRole.ToolTipRole)
        index = self.mode_box.findData(current)
        if index >= 0:
            self.mode_box.setCurrentIndex(index)
        self.mode_box.blockSignals(False)
        self._update_buttons()

    def set_workflows(self, listing: Any) -> None:
        """Offer the session's workflows (a ``WorkflowList``) with its pick selected; the tooltip says
        which reranker context fusion uses and which workflow files could not be loaded."""
        self.workflow_box.blockSignals(True)
        self.workflow_box.clear()
        self.workflow_box.addItem("Workflow: auto", "auto")
        self.workflow_box.setItemData(
            0, "The orchestrator model picks the workflow", Qt.ItemDataRole.ToolTipRole
        )
        for workflow in listing.workflows:
            self.workflow_box.addItem(f"Workflow: {workflow.name}", workflow.name)
            stages = " → ".join(s.name + ("" if s.required else "?") for s in workflow.stages)
            tip = f"{workflow.description}\n{stages}\n{workflow.path}"
            self.workflow_box.setItemData(self.workflow_box.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        index = self.workflow_box.findData(listing.selected)
        self.workflow_box.setCurrentIndex(max(index, 0))
        self.workflow_box.blockSignals(False)
        tip = f"Workflow of the workflow mode (/workflow NAME)\nContext ranking: {listing.reranker}"
        if listing.notices:
            tip += "\n" + "\n".join(listing.notices)
        if listing.problems:
            tip += "\nNot loaded:\n" + "\n".join(listing.problems)
        self.workflow_box.setToolTip(tip)
        self.workflow_box.setVisible(True)
        self.workflow_box.setEnabled(self.mode_box.isEnabled())

    def _on_workflow_activated(self, index: int) -> None:
        name = self.workflow_box.itemData(index)
        if isinstance(name, str):
            self.workflowChosen.emit(name)

    def current_mode(self) -> str | None:
        data = self.mode_box.currentData()
        return data if isinstance(data, str) else None

    def _on_mode_activated(self, index: int) -> None:
        mode = self.mode_box.itemData(index)
        if isinstance(mode, str):
            self.modeChosen.emit(mode)

    def set_backend_state(self, state: str) -> None:
        """Enable Send only when the backend is ready and Stop only while a turn runs."""
        self._state = BackendState(state)
        self._update_buttons()

    def submit(self) -> None:
        """Send the prompt box's text (when the backend is ready and the text is not blank)."""
        text = self.prompt.toPlainText().strip()
        if not text or self._state != BackendState.READY:
            return
        self.prompt.clear()
        self.promptSubmitted.emit(text)

    def prompt_sent(self, event: PromptSent) -> None:
        """A prompt went to the agent (a turn starts): shown as the user's message, as its replay shows it
        (ACP agents do not echo it)."""
        self.turn_running = True
        self._answer_pending = False
        self.apply_update(event)

    def turn_ended(self, stop_reason: str) -> None:
        """The turn's answer came: a "Stopped" line if it was cancelled; scroll to the answer."""
        self.turn_running = False
        if stop_reason == "cancelled":
            self.apply_update(
                TurnNotice("stopped", "Stopped — the turn was cancelled; what it did so far stays")
            )
        self._show_answer_soon()

    def turn_failed(self, message: str, fix: str | None = None) -> None:
        """The turn failed: say why (and the fix) in the conversation, and scroll to it."""
        self.turn_running = False
        self.apply_update(TurnNotice("error", f"The turn failed: {message}", fix or ""))
        self._show_answer_soon()

    def _show_answer_soon(self) -> None:
        # The answer's height settles over a few layout passes, which on a busy machine come later: follow
        # them until the user scrolls (or sends the next prompt), not for a fixed time. A 400 ms window
        # left a tall answer's start 678 px above the view when the passes came after it.
        self.flush()
        self._answer_pending = True
        QTimer.singleShot(0, self.scroll_to_answer)

    def _user_scrolled(self, _action: int) -> None:
        # Wheel, keys, a drag or a click on the bar: where the user goes wins over the answer.
        self._answer_pending = False

    def _on_scroll_range(self, *_: int) -> None:
        if self._answer_pending:
            self.scroll_to_answer()

    def scroll_to_answer(self) -> None:
        """Show the end of the last turn: the start of its last block if taller than the view, else the
        bottom of the conversation."""
        self._blocks.activate()
        bar = self.scroll.verticalScrollBar()
        views = self.views()
        last = views[-1] if views else None
        if last is not None and last.height() > self.scroll.viewport().height():
            bar.setValue(min(max(last.y() - ANSWER_TOP_MARGIN, 0), bar.maximum()))
        else:
            bar.setValue(bar.maximum())

    def apply_update(self, update: SessionEvent | TurnNotice) -> None:
        """Take one event of the session (or a line the window adds) into the conversation and schedule
        the re-render."""
        self.updates.append(update)
        changed = self.conversation.apply(update)
        if changed is None:
            return
        block, created = changed
        view = self._add_view(block) if created else self._views.get(block)
        if view is not None and view not in self._dirty:
            self._dirty.append(view)
        if not self._render_timer.isActive():
            self._render_timer.start()

    def clear(self) -> list[SessionEvent | TurnNotice]:
        """Forget every block; returns the events that built them (to :meth:`replay` them later)."""
        updates = self.updates
        self._render_timer.stop()
        self._answer_pending = False
        self._dirty.clear()
        for view in self._views.values():
            self._blocks.removeWidget(view)
            view.deleteLater()
        self._views.clear()
        self.conversation = Conversation()
        self.updates = []
        self._empty.setVisible(True)
        return updates

    def replay(self, updates: list[SessionEvent | TurnNotice]) -> None:
        """Rebuild the conversation from the events ``updates`` (after :meth:`clear`)."""
        for update in updates:
            self.apply_update(update)
        self.flush()

    def views(self) -> list[BlockView]:
        """Block widgets in display order (for tests and the screenshot script)."""
        return [self._views[block] for block in self.conversation.blocks if block in self._views]

    def transcript(self) -> str:
        """The rendered conversation as plain text, one block per paragraph."""
        return "\n\n".join(view.plain_text() for view in self.views())

    def flush(self) -> None:
        """Re-render dirty blocks now (the timer calls this; tests and replays may too)."""
        self._render_timer.stop()
        bar = self.scroll.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 8
        dirty, self._dirty = self._dirty, []
        for view in dirty:
            view.refresh()
        if follow and dirty:
            # The column's new height is known only after layout; scroll on the next turn of the loop.
            QTimer.singleShot(0, lambda: bar.setValue(bar.maximum()))
        self.rendered.emit()

    def _add_view(self, block: Block) -> BlockView:
        view: BlockView
        if isinstance(block, ToolBlock):
            view = ToolCallView(block, self.workspace)
            view.locationActivated.connect(self.locationActivated)
        elif isinstance(block, PlanBlock):
            view = PlanView(block)
        elif isinstance(block, NoticeBlock):
            view = NoticeView(block)
        elif block.kind == "user":
            view = UserMessageView(block)
        elif block.kind == "thought":
            view = ThoughtView(block)
        else:
            view = AssistantMessageView(block)
            view.anchorClicked.connect(self.open_link)
        self._views[block] = view
        self._empty.setVisible(False)
        self._blocks.insertWidget(self._blocks.count() - 1, view)
        return view

    def open_link(self, url: QUrl) -> None:
        """A link in an answer was clicked: an http(s) one opens once the user confirms its address in
        :class:`LinkDialog`; any other never opens, and the status bar says why."""
        link = web_link(url)
        if isinstance(link, str):
            self.say(link)
            return
        if self.link_dialog is None:
            self.link_dialog = LinkDialog(self)
            self.link_dialog.said.connect(self.say)
        self.link_dialog.ask(link)

    def say(self, text: str) -> None:
        """A transient message in the window's status bar (nowhere when the panel has no main window)."""
        window = self.window()
        if isinstance(window, QMainWindow):
            window.statusBar().showMessage(text, MESSAGE_MS)

    def _update_buttons(self) -> None:
        ready = self._state == BackendState.READY
        self.send_button.setEnabled(ready and bool(self.prompt.toPlainText().strip()))
        self.stop_button.setEnabled(self._state == BackendState.BUSY)
        self.stop_button.setVisible(self._state == BackendState.BUSY)
        # The mode changes between turns only, and only when the agent offers more than one.
        self.mode_box.setEnabled(ready and self.mode_box.count() > 1)
        self.workflow_box.setEnabled(ready and self.workflow_box.count() > 0)
        self.mode_box.setVisible(self.mode_box.count() > 0)
        self.options.setEnabled(ready)
        hints = {
            BackendState.STARTING: "Starting the backend…",
            BackendState.BUSY: "The agent is working…",
            BackendState.STOPPED: "The backend is not running.",
        }
        self._hint.setText(hints.get(self._state, ""))


def resolve_location(workspace: Path, path: str) -> Path:
    """A tool-call location as an absolute path (agents send absolute paths; tolerate relative ones)."""
    candidate = Path(path)
    return candidate if candidate.is_absolute() else workspace / candidate
