"""The Review pane: the session's proposed changes as a file list and one file's diff, decided hunk by hunk.

Narrow interface: the window feeds it change sets, apply/rollback results and history, and standard ACP
``session/update`` payloads; the pane asks for things through signals carrying ``ide.protocol.review``
models. Decisions show at once (optimistic overrides) and every ChangeSetView from the backend replaces
them. Only the selected file is rendered, into one text document, so a change set's size costs little.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRectF,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QKeyEvent,
    QPainter,
    QPaintEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ide.app.diffs import (
    FileState,
    Row,
    StandardDiffs,
    code_of,
    feedback_prompt,
    file_state,
    header_text,
    side_by_side_rows,
    unified_rows,
)
from ide.app.highlight import Span, format_for, lex_lines
from ide.app.viewer import CodeEditor
from ide.protocol.review import (
    ApplyParams,
    ApplyResult,
    ChangeSetView,
    ConflictView,
    DecideParams,
    Decision,
    FileChangeView,
    HistoryParams,
    HistoryResult,
    HunkView,
    RollbackParams,
    RollbackResult,
)

LEX_MAX_CHARS = 60_000
"""A file's diff longer than this is shown without syntax colours: lexing it would hold the UI thread."""
STANDARD_DIFF_DELAY_MS = 50
"""Coalescing window for rebuilding the read-only review from streamed ACP diffs."""
STANDARD_NOTE = (
    "This agent does not support Arbor review: its proposed edits are shown read-only. Accept or reject "
    "them in the agent itself; comments can still go back to it with Send feedback."
)

ROW_COLOURS: dict[str, QColor] = {
    "hunk": QColor("#eef2fb"),
    "del": QColor("#fdecec"),
    "add": QColor("#e9f7ee"),
    "pad": QColor("#f3f4f6"),
    "note": QColor("#fafafa"),
}
HEADER_COLOURS: dict[str, QColor] = {
    "pending": QColor("#eef2fb"),
    "accepted": QColor("#d9f2e1"),
    "rejected": QColor("#ececec"),
}
REJECTED_ROW = QColor("#f5f5f5")
INTRALINE_COLOURS = {"del": QColor("#f6bdbd"), "add": QColor("#a9e4bd")}
CURRENT_HUNK_BAR = QColor("#3b6fd4")
STATE_COLOURS: dict[FileState, QColor] = {
    "pending": QColor("#6b7280"),
    "partly": QColor("#b7791f"),
    "accepted": QColor("#2f855a"),
    "rejected": QColor("#9b2c2c"),
    "conflict": QColor("#c53030"),
}
STATUS_LETTERS = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}
META_COLOUR = QColor("#b7791f")
META_MARK = "⚠ "
"""Before the name of a file that needs its own accept (Arbor's settings, git attributes, CI, hooks)."""


class ReviewFileModel(QAbstractTableModel):
    """The change set's files as rows: path, status, +/− counts and review state."""

    COLUMNS = ("File", "", "+/−", "State")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.files: list[FileChangeView] = []
        self.states: list[FileState] = []

    def set_files(self, files: list[FileChangeView], states: list[FileState]) -> None:
        self.beginResetModel()
        self.files = files
        self.states = states
        self.endResetModel()

    def set_state(self, row: int, state: FileState) -> None:
        if self.states[row] != state:
            self.states[row] = state
            index = self.index(row, 3)
            self.dataChanged.emit(index, index)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.files)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        file = self.files[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                name = f"{file.old_path} → {file.path}" if file.old_path else file.path
                return META_MARK + name if file.meta else name
            if column == 1:
                return STATUS_LETTERS.get(file.status, "?")
            if column == 2:
                return "binary" if file.binary else f"+{file.additions} −{file.deletions}"
            return self.states[index.row()]
        if role == Qt.ItemDataRole.ForegroundRole and column == 3:
            return STATE_COLOURS[self.states[index.row()]]
        if role == Qt.ItemDataRole.ForegroundRole and column == 0 and file.meta:
            return META_COLOUR
        if role == Qt.ItemDataRole.ToolTipRole:
            if file.conflict:
                return file.conflict
            return f"{file.path}\nNeeds its own accept: {file.meta}" if file.meta else file.path
        return None


class DiffHighlighter(QSyntaxHighlighter):
    """Colours one diff document: syntax spans per row, changed words on paired lines, bold headers."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.rows: list[Row] = []
        self.spans: list[list[Span]] = []
        self.shift = 0
        self._header = QTextCharFormat()
        self._header.setForeground(QColor("#3c4a6b"))
        self._header.setFontWeight(QFont.Weight.DemiBold)

    def highlightBlock(self, text: str) -> None:
        number = self.currentBlock().blockNumber()
        if number >= len(self.rows):
            return
        row = self.rows[number]
        if row.kind == "hunk":
            self.setFormat(0, len(text), self._header)
            return
        if number < len(self.spans):
            for start, length, token in self.spans[number]:
                self.setFormat(start + self.shift, length, format_for(token))
        colour = INTRALINE_COLOURS.get(row.kind)
        if colour is None or not row.intraline:
            return
        for start, length in _utf16_spans(row.text, row.intraline):
            for position in range(start, start + length):
                fmt = self.format(position)
                fmt.setBackground(colour)
                self.setFormat(position, 1, fmt)


def _utf16_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if text.isascii():
        return spans

    def units(end: int) -> int:
        return len(text[:end].encode("utf-16-le")) // 2

    return [(units(start), units(start + length) - units(start)) for start, length in spans]


class DiffEditor(CodeEditor):
    """A read-only diff column: row backgrounds and line numbers painted for visible rows only."""

    def __init__(self, numbers: str = "both", parent: QWidget | None = None) -> None:
        self.rows: list[Row] = []
        self.decisions: list[Decision] = []
        self.current_hunk = -1
        self._numbers = numbers
        super().__init__(parent)
        self.setUndoRedoEnabled(False)
        self.highlighter = DiffHighlighter(self.document())

    def set_rows(self, rows: list[Row], spans: list[list[Span]] | None, shift: int) -> None:
        """Show ``rows`` (the highlighter paints each block as the document takes the text)."""
        self.rows = rows
        self.highlighter.rows = rows
        self.highlighter.spans = spans or []
        self.highlighter.shift = shift
        self.setPlainText("\n".join(row.text for row in rows))
        self._update_margins()

    def first_block_of(self, hunk: int) -> int:
        for number, row in enumerate(self.rows):
            if row.hunk == hunk:
                return number
        return 0

    def line_number_width(self) -> int:
        digits = max(3, len(str(max((row.new_no or row.old_no or 0 for row in self.rows), default=0))))
        columns = 2 if self._numbers == "both" else 1
        return 10 + columns * (self.fontMetrics().horizontalAdvance("9") * digits + 6)

    def paint_line_numbers(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.alternateBase())
        painter.setPen(palette.placeholderText().color())
        width = self._gutter.width() - 6
        half = width // 2
        height = self.fontMetrics().height()
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            number = block.blockNumber()
            if number < len(self.rows) and bottom >= event.rect().top():
                row = self.rows[number]
                right = Qt.AlignmentFlag.AlignRight
                if self._numbers == "both":
                    if row.old_no is not None:
                        painter.drawText(0, top, half, height, right, str(row.old_no))
                    if row.new_no is not None:
                        painter.drawText(half, top, width - half, height, right, str(row.new_no))
                else:
                    line = row.old_no if self._numbers == "old" else row.new_no
                    if line is not None:
                        painter.drawText(0, top, width, height, right, str(line))
            block = block.next()
            top = bottom
        painter.end()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        offset = self.contentOffset()
        width = self.viewport().width()
        block = self.firstVisibleBlock()
        while block.isValid():
            geometry = self.blockBoundingGeometry(block).translated(offset)
            if geometry.top() > event.rect().bottom():
                break
            number = block.blockNumber()
            if number < len(self.rows):
                row = self.rows[number]
                decision = self.decisions[row.hunk] if 0 <= row.hunk < len(self.decisions) else "pending"
                colour = self._colour(row, decision)
                if colour is not None:
                    painter.fillRect(QRectF(0, geometry.top(), width, geometry.height()), colour)
                if row.hunk == self.current_hunk:
                    painter.fillRect(QRectF(0, geometry.top(), 3, geometry.height()), CURRENT_HUNK_BAR)
            block = block.next()
        painter.end()
        super().paintEvent(event)

    @staticmethod
    def _colour(row: Row, decision: Decision) -> QColor | None:
        if row.kind == "hunk":
            return HEADER_COLOURS[decision]
        if decision == "rejected" and row.kind in ("del", "add"):
            return REJECTED_ROW
        return ROW_COLOURS.get(row.kind)

    def scroll_to_block(self, number: int) -> None:
        block = self.document().findBlockByNumber(number)
        self.setTextCursor(QTextCursor(block))
        # Without wrapping, the scroll bar counts blocks: keep two rows of context above the header.
        self.verticalScrollBar().setValue(max(0, number - 2))


class ReviewPane(QWidget):
    """Files on the left, the selected file's diff on the right, hunk actions above it; History tab.

    Inputs: :meth:`set_session`, :meth:`set_interactive`, :meth:`set_changeset`,
    :meth:`show_apply_result`, :meth:`show_rollback_result`, :meth:`set_history`, :meth:`apply_update`,
    :meth:`revert`, :meth:`clear`. Outputs: the ``*Requested`` signals.
    """

    decideRequested = Signal(object)
    """A :class:`DecideParams` to send to the backend."""
    applyRequested = Signal(object)
    """An :class:`ApplyParams`."""
    rollbackRequested = Signal(object)
    """A :class:`RollbackParams`."""
    historyRequested = Signal(object)
    """A :class:`HistoryParams`."""
    feedbackRequested = Signal(str)
    """A refinement prompt built from the hunk comments, for the chat to send as a new turn."""
    changesShown = Signal(int)
    """A change set with this many files is on screen (the window raises the dock when it is not 0)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewPane")
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.interactive = False
        self.changeset: ChangeSetView | None = None
        self.conflicts: list[ConflictView] = []
        self.batches: HistoryResult = HistoryResult()
        self.current_file = -1
        self.current_hunk = -1
        self.side_by_side = False
        self._decisions: dict[str, Decision] = {}
        self._comments: dict[str, str] = {}
        self.branch: ChangeSetView | None = None
        """A search branch's changes shown read-only instead of the pending review (None: the review)."""
        self._pending: ChangeSetView | None = None
        self._pending_interactive = False
        self._standard = StandardDiffs()
        self._standard_timer = QTimer(self)
        self._standard_timer.setSingleShot(True)
        self._standard_timer.setInterval(STANDARD_DIFF_DELAY_MS)
        self._standard_timer.timeout.connect(self._show_standard_diffs)
        self._build()
        self._update_actions()

    def _build(self) -> None:
        self.note = QLabel(STANDARD_NOTE)
        self.note.setObjectName("mutedLabel")
        self.note.setWordWrap(True)
        self.branch_label = QLabel("")
        self.branch_label.setObjectName("branchHeader")
        self.branch_label.setWordWrap(True)
        self.back_button = QPushButton("Back to the review")
        self.back_button.setToolTip("Show the session's pending changes again")
        self.back_button.clicked.connect(self.show_pending)
        branch_bar = QHBoxLayout()
        branch_bar.setContentsMargins(6, 4, 6, 0)
        branch_bar.addWidget(self.branch_label, 1)
        branch_bar.addWidget(self.back_button)
        self.branch_bar = QWidget()
        self.branch_bar.setLayout(branch_bar)
        self.branch_bar.hide()
        self.summary = QLabel("No changes to review.")
        self.summary.setObjectName("mutedLabel")
        self.view_toggle = QPushButton("Side by side")
        self.view_toggle.setCheckable(True)
        self.view_toggle.toggled.connect(self.set_side_by_side)
        self.accept_all_button = QPushButton("Accept all")
        self.accept_all_button.clicked.connect(lambda: self.decide_all("accepted"))
        self.reject_all_button = QPushButton("Reject all")
        self.reject_all_button.clicked.connect(lambda: self.decide_all("rejected"))
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("sendButton")
        self.apply_button.clicked.connect(self.apply)
        self.feedback_button = QPushButton("Send feedback")
        self.feedback_button.clicked.connect(self.send_feedback)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 0)
        top.addWidget(self.summary, 1)
        for button in (
            self.view_toggle,
            self.accept_all_button,
            self.reject_all_button,
            self.feedback_button,
            self.apply_button,
        ):
            top.addWidget(button)

        self.files_model = ReviewFileModel(self)
        self.file_list = QTreeView()
        self.file_list.setObjectName("reviewFiles")
        self.file_list.setModel(self.files_model)
        self.file_list.setRootIsDecorated(False)
        self.file_list.setUniformRowHeights(True)
        self.file_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.file_list.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.file_list.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self.file_list.selectionModel().currentRowChanged.connect(self._on_file_row)

        self.meta_label = QLabel("")
        self.meta_label.setObjectName("reviewMetaNote")
        self.meta_label.setWordWrap(True)
        self.meta_label.hide()
        self.hunk_label = QLabel("")
        self.accept_button = QPushButton("Accept")
        self.accept_button.setToolTip("Accept this hunk (a)")
        self.accept_button.clicked.connect(lambda: self.decide_hunk("accepted"))
        self.reject_button = QPushButton("Reject")
        self.reject_button.setToolTip("Reject this hunk (r)")
        self.reject_button.clicked.connect(lambda: self.decide_hunk("rejected"))
        self.accept_file_button = QPushButton("Accept file")
        self.accept_file_button.setToolTip("Accept every hunk of this file (Shift+A)")
        self.accept_file_button.clicked.connect(lambda: self.decide_file("accepted"))
        self.reject_file_button = QPushButton("Reject file")
        self.reject_file_button.setToolTip("Reject every hunk of this file (Shift+R)")
        self.reject_file_button.clicked.connect(lambda: self.decide_file("rejected"))
        self.comment_edit = QLineEdit()
        self.comment_edit.setPlaceholderText("Comment on this hunk for the agent…")
        self.comment_edit.returnPressed.connect(self.comment_on_hunk)
        self.comment_button = QPushButton("Comment")
        self.comment_button.clicked.connect(self.comment_on_hunk)
        hunk_bar = QHBoxLayout()
        hunk_bar.setContentsMargins(6, 2, 6, 2)
        hunk_bar.addWidget(self.hunk_label)
        for button in (
            self.accept_button,
            self.reject_button,
            self.accept_file_button,
            self.reject_file_button,
        ):
            hunk_bar.addWidget(button)
        hunk_bar.addWidget(self.comment_edit, 1)
        hunk_bar.addWidget(self.comment_button)

        self.unified = DiffEditor("both")
        self.left = DiffEditor("old")
        self.right = DiffEditor("new")
        self.left.verticalScrollBar().valueChanged.connect(self.right.verticalScrollBar().setValue)
        self.right.verticalScrollBar().valueChanged.connect(self.left.verticalScrollBar().setValue)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left)
        split.addWidget(self.right)
        self.message = QLabel("Select a file to see its changes.")
        self.message.setObjectName("viewerMessage")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.merged_view = CodeEditor()
        self.diff_pages = QStackedWidget()
        for page in (self.unified, split, self.message, self.merged_view):
            self.diff_pages.addWidget(page)
        self._split_page = split
        self.diff_pages.setCurrentWidget(self.message)

        self.conflict_list = QListWidget()
        self.conflict_list.setObjectName("reviewConflicts")
        self.conflict_list.setMaximumHeight(90)
        self.conflict_list.currentRowChanged.connect(self.show_conflict)
        self.conflict_list.hide()
        self.result_label = QLabel("")
        self.result_label.setWordWrap(True)
        self.result_label.hide()

        diff_side = QWidget()
        diff_layout = QVBoxLayout(diff_side)
        diff_layout.setContentsMargins(0, 0, 0, 0)
        diff_layout.setSpacing(0)
        diff_layout.addWidget(self.meta_label)
        diff_layout.addLayout(hunk_bar)
        diff_layout.addWidget(self.diff_pages, 1)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.file_list)
        body.addWidget(diff_side)
        body.setStretchFactor(1, 3)
        body.setSizes([300, 900])

        changes = QWidget()
        layout = QVBoxLayout(changes)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.note)
        layout.addWidget(self.branch_bar)
        layout.addLayout(top)
        layout.addWidget(self.result_label)
        layout.addWidget(self.conflict_list)
        layout.addWidget(body, 1)

        self.history_tree = QTreeWidget()
        self.history_tree.setHeaderLabels(["Applied", "Message", "Files", "Commit", "State"])
        self.history_tree.setRootIsDecorated(False)
        self.history_tree.currentItemChanged.connect(lambda *_: self._update_actions())
        self.rollback_button = QPushButton("Roll back")
        self.rollback_button.clicked.connect(self.roll_back_selected)
        self.refresh_history_button = QPushButton("Refresh")
        self.refresh_history_button.clicked.connect(self.request_history)
        self.history_label = QLabel("")
        self.history_label.setWordWrap(True)
        history_bar = QHBoxLayout()
        history_bar.addWidget(self.history_label, 1)
        history_bar.addWidget(self.refresh_history_button)
        history_bar.addWidget(self.rollback_button)
        history = QWidget()
        history_layout = QVBoxLayout(history)
        history_layout.setContentsMargins(0, 4, 0, 0)
        history_layout.addLayout(history_bar)
        history_layout.addWidget(self.history_tree, 1)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(changes, "Changes")
        self.tabs.addTab(history, "History")
        self.tabs.currentChanged.connect(self._on_tab)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.tabs)

        for widget in (self.file_list, self.unified, self.left, self.right, self):
            widget.installEventFilter(self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def set_session(self, session_id: str, cwd: str) -> None:
        """A new session: forget what the pane showed for the previous one."""
        if session_id != self.session_id:
            self.clear()
        self.session_id = session_id
        self.cwd = cwd

    def set_interactive(self, interactive: bool) -> None:
        """True when the backend serves ``_arbor/review/*``; False shows standard ACP diffs read-only."""
        if self.branch is not None:
            self._pending_interactive = interactive  # for when the review comes back
            return
        self.interactive = interactive
        self.note.setVisible(not interactive)
        self._update_actions()

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a search branch's changes read-only under ``header`` (no decisions, apply or feedback),
        until :meth:`show_pending` brings back the session's pending review."""
        if self.branch is None:
            self._pending = self.changeset
            self._pending_interactive = self.interactive
        self.branch = changeset
        self.interactive = False
        self.note.hide()
        self.branch_label.setText(header)
        self.branch_bar.show()
        self.result_label.hide()
        self.conflict_list.hide()
        self._show_changeset(changeset)

    def show_pending(self) -> None:
        """Leave a branch shown by :meth:`show_branch`: the pending review, as it is now."""
        if self.branch is None:
            return
        self.branch = None
        self.branch_bar.hide()
        self.interactive = self._pending_interactive
        self.note.setVisible(not self.interactive)
        pending, self._pending = self._pending, None
        if pending is not None:
            self._show_changeset(pending)
        else:
            self.changeset = None
            self.files_model.set_files([], [])
            self.current_file = self.current_hunk = -1
            self._show_message("Select a file to see its changes.")
            self._update_actions()

    def clear(self) -> None:
        """Show nothing (a new session, or a replay about to rebuild the view)."""
        if self.branch is not None:
            self._pending = None
            self.show_pending()
        self._standard = StandardDiffs()
        self._standard_timer.stop()
        self.changeset = None
        self.conflicts = []
        self._decisions.clear()
        self._comments.clear()
        self.files_model.set_files([], [])
        self.current_file = self.current_hunk = -1
        self.conflict_list.clear()
        self.conflict_list.hide()
        self.result_label.hide()
        self._show_message("Select a file to see its changes.")
        self._update_actions()

    def set_changeset(self, changeset: ChangeSetView) -> None:
        """Show ``changeset`` as the truth, keeping the selected file and hunk where they still exist.

        While a branch is shown, it is kept for when the review comes back."""
        if self.branch is not None:
            self._pending = changeset
            return
        self._show_changeset(changeset)

    def _show_changeset(self, changeset: ChangeSetView) -> None:
        previous_path = self._current_file_view().path if self._current_file_view() else None
        previous_hunk = self.current_hunk
        self.changeset = changeset
        self._decisions.clear()
        if self.interactive:
            self._comments.clear()
        files = changeset.files
        self.files_model.set_files(files, [file_state(file, self.decision_of) for file in files])
        row = next((i for i, file in enumerate(files) if file.path == previous_path), 0 if files else -1)
        self.current_file = -1
        if row >= 0:
            keep = previous_hunk if files[row].path == previous_path else 0
            self.select_file(row, hunk=min(keep, len(files[row].hunks) - 1))
        else:
            self.current_hunk = -1
            self._show_message("No changes to review.")
        self._update_actions()
        self.changesShown.emit(len(files))

    def revert(self) -> None:
        """Drop decisions the backend did not confirm (its request failed) and show its last truth."""
        if self._decisions and self.changeset is not None:
            self._decisions.clear()
            self._refresh_states()
            self._render_current()
            self._update_actions()

    def show_apply_result(self, result: ApplyResult) -> None:
        """What Apply did: the remaining change set, the batch written and any conflicts."""
        self.set_changeset(result.changeset)
        self.conflicts = list(result.conflicts)
        parts = []
        if result.batch is not None:
            commit = f", commit {result.batch.commit[:10]}" if result.batch.commit else ""
            parts.append(f"Applied {len(result.batch.paths)} file(s) as batch {result.batch.id}{commit}.")
        else:
            parts.append("Nothing was written.")
        if self.conflicts:
            parts.append(
                f"{len(self.conflicts)} file(s) changed on disk meanwhile and were not written; "
                "select one below to see the merge with conflict markers."
            )
        self.result_label.setText(" ".join(parts))
        self.result_label.show()
        self.conflict_list.clear()
        for conflict in self.conflicts:
            self.conflict_list.addItem(f"{conflict.path} — {conflict.message}")
        self.conflict_list.setVisible(bool(self.conflicts))
        self.request_history()

    def show_conflict(self, index: int) -> None:
        """Show the merged-with-markers text of conflict ``index`` in place of the diff."""
        if not 0 <= index < len(self.conflicts):
            return
        conflict = self.conflicts[index]
        if conflict.merged is None:
            self._show_message(f"{conflict.path}: {conflict.message}")
            return
        self.merged_view.setPlainText(conflict.merged)
        self.diff_pages.setCurrentWidget(self.merged_view)

    def set_history(self, history: HistoryResult) -> None:
        """List applied batches, newest first as the backend sends them."""
        self.batches = history
        self.history_tree.clear()
        for batch in history.batches:
            item = QTreeWidgetItem(
                [
                    batch.created_at,
                    batch.message.splitlines()[0] if batch.message else "",
                    str(len(batch.paths)),
                    (batch.commit or "")[:10],
                    "rolled back" if batch.rolled_back else "applied",
                ]
            )
            item.setToolTip(2, "\n".join(batch.paths))
            self.history_tree.addTopLevelItem(item)
        if history.batches:
            self.history_tree.setCurrentItem(self.history_tree.topLevelItem(0))
        self._update_actions()

    def show_rollback_result(self, result: RollbackResult) -> None:
        text = f"Rolled back batch {result.batch.id}: restored {len(result.restored)} file(s)."
        if result.refused:
            text += " Not restored: " + "; ".join(f"{c.path} — {c.message}" for c in result.refused)
        self.history_label.setText(text)
        self.request_history()

    def apply_update(self, update: Any) -> None:
        """Collect standard ACP ``diff`` content of tool calls (only when the agent is not Arbor)."""
        if self.interactive:
            return
        if getattr(update, "session_update", None) not in ("tool_call", "tool_call_update"):
            return
        found = False
        for item in getattr(update, "content", None) or []:
            if getattr(item, "type", None) == "diff":
                self._standard.add(self._relative(item.path), item.old_text, item.new_text)
                found = True
        if found and not self._standard_timer.isActive():
            self._standard_timer.start()

    def _relative(self, path: str) -> str:
        if self.cwd:
            try:
                return Path(path).relative_to(self.cwd).as_posix()
            except ValueError:
                pass
        return path

    def _show_standard_diffs(self) -> None:
        self.set_changeset(self._standard.changeset(self.session_id or "", self.cwd or ""))

    def decision_of(self, hunk: HunkView) -> Decision:
        return self._decisions.get(hunk.id, hunk.decision)

    def comment_of(self, hunk: HunkView) -> str | None:
        return self._comments.get(hunk.id, hunk.comment)

    def _current_file_view(self) -> FileChangeView | None:
        if self.changeset is None or not 0 <= self.current_file < len(self.changeset.files):
            return None
        return self.changeset.files[self.current_file]

    def current_hunk_view(self) -> HunkView | None:
        file = self._current_file_view()
        if file is None or not 0 <= self.current_hunk < len(file.hunks):
            return None
        return file.hunks[self.current_hunk]

    def select_file(self, row: int, hunk: int = 0) -> None:
        """Show file ``row`` of the list with hunk ``hunk`` current (-1: its last hunk)."""
        if self.changeset is None or not 0 <= row < len(self.changeset.files):
            return
        file = self.changeset.files[row]
        self.current_hunk = (len(file.hunks) - 1 if hunk < 0 else hunk) if file.hunks else -1
        if row != self.current_file:
            self.current_file = row
            self.file_list.selectionModel().blockSignals(True)
            self.file_list.setCurrentIndex(self.files_model.index(row, 0))
            self.file_list.selectionModel().blockSignals(False)
            self.file_list.scrollTo(self.files_model.index(row, 0))
        self._render_current()
        self._update_actions()

    def _on_file_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and current.row() != self.current_file:
            self.select_file(current.row())

    def set_side_by_side(self, on: bool) -> None:
        self.side_by_side = on
        if self.view_toggle.isChecked() != on:
            self.view_toggle.setChecked(on)
        self._render_current()

    def _header(self, hunk: HunkView) -> str:
        return header_text(hunk, self.decision_of(hunk), self.comment_of(hunk))

    def _render_current(self) -> None:
        """Render the selected file into the unified or the side-by-side view (only that file)."""
        file = self._current_file_view()
        self.meta_label.setVisible(file is not None and file.meta is not None)
        if file is None:
            return
        if file.meta:
            self.meta_label.setText(
                f"{META_MARK}{file.path} needs its own accept — {file.meta}. "
                "Accept all leaves it pending; Accept file (Shift+A) or each hunk accepts it."
            )
        if not file.hunks:
            if file.binary:
                self._show_message(f"{file.path} is a binary file ({file.status}).")
            elif file.old_path:
                self._show_message(f"Renamed from {file.old_path}, content unchanged.")
            else:
                self._show_message(f"{file.path}: {file.status}, no text changes.")
            return
        rows = unified_rows(file, self._header)
        decisions = [self.decision_of(hunk) for hunk in file.hunks]
        name = Path(file.path).name
        if self.side_by_side:
            left, right = side_by_side_rows(rows)
            keep = self.left.verticalScrollBar().value() if self.left.rows else 0
            for editor, column in ((self.left, left), (self.right, right)):
                editor.decisions = decisions
                editor.current_hunk = self.current_hunk
                editor.set_rows(column, _lex(name, column, prefixed=False), 0)
            self.diff_pages.setCurrentWidget(self._split_page)
            self._scroll_to_hunk(self.left, keep)
        else:
            keep = self.unified.verticalScrollBar().value()
            self.unified.decisions = decisions
            self.unified.current_hunk = self.current_hunk
            self.unified.set_rows(rows, _lex(name, rows, prefixed=True), 1)
            self.diff_pages.setCurrentWidget(self.unified)
            self._scroll_to_hunk(self.unified, keep)

    def _scroll_to_hunk(self, editor: DiffEditor, keep: int) -> None:
        first = editor.first_block_of(self.current_hunk)
        bar = editor.verticalScrollBar()
        last = first + sum(1 for row in editor.rows if row.hunk == self.current_hunk)
        visible = max(1, editor.viewport().height() // max(1, editor.fontMetrics().height()))
        # Keep the scroll position across re-renders unless the current hunk would be off screen.
        if keep <= first and last <= keep + visible:
            bar.setValue(keep)
        else:
            editor.scroll_to_block(first)

    def _mark_current(self) -> None:
        for editor in (self.unified, self.left, self.right):
            editor.current_hunk = self.current_hunk
            editor.viewport().update()
        editor = self.left if self.side_by_side else self.unified
        self._scroll_to_hunk(editor, editor.verticalScrollBar().value())
        self._update_actions()

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.diff_pages.setCurrentWidget(self.message)

    def next_hunk(self) -> None:
        """Move to the next hunk, on to the next file's first hunk after the last one (j)."""
        file = self._current_file_view()
        if file is None:
            return
        if self.current_hunk + 1 < len(file.hunks):
            self.current_hunk += 1
            self._mark_current()
        elif self.changeset is not None and self.current_file + 1 < len(self.changeset.files):
            self.select_file(self.current_file + 1, 0)

    def previous_hunk(self) -> None:
        """Move to the previous hunk, back to the previous file's last hunk before the first one (k)."""
        if self._current_file_view() is None:
            return
        if self.current_hunk > 0:
            self.current_hunk -= 1
            self._mark_current()
        elif self.current_file > 0:
            self.select_file(self.current_file - 1, -1)

    def _decide(self, params: DecideParams, hunks: list[HunkView]) -> None:
        for hunk in hunks:
            self._decisions[hunk.id] = params.decision
        self._refresh_states()
        self._render_current()
        self._update_actions()
        self.decideRequested.emit(params)

    def decide_hunk(self, decision: Decision) -> None:
        """Decide the current hunk, then move to the next one (a / r)."""
        hunk = self.current_hunk_view()
        if not self.interactive or hunk is None or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, hunk_ids=[hunk.id])
        self._decide(params, [hunk])
        self.next_hunk()

    def decide_file(self, decision: Decision) -> None:
        """Decide every hunk of the selected file, then move to the next file (Shift+A / Shift+R)."""
        file = self._current_file_view()
        if not self.interactive or file is None or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, paths=[file.path])
        self._decide(params, file.hunks)
        if self.current_file + 1 < len(self.changeset.files):
            self.select_file(self.current_file + 1, 0)

    def decide_all(self, decision: Decision) -> None:
        """Decide every hunk of the change set (Accept all / Reject all)."""
        if not self.interactive or self.changeset is None:
            return
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, all=True)
        # As the backend does: meta files are never decided wholesale.
        self._decide(params, [hunk for file in self.changeset.files if not file.meta for hunk in file.hunks])

    def comment_on_hunk(self) -> None:
        """Attach the comment box's text to the current hunk (and record it with the backend)."""
        hunk = self.current_hunk_view()
        text = self.comment_edit.text().strip()
        if hunk is None or self.changeset is None or not text or self.branch is not None:
            return
        self._comments[hunk.id] = text
        self.comment_edit.clear()
        if self.interactive:
            self.decideRequested.emit(
                DecideParams(
                    session_id=self.changeset.session_id,
                    decision=self.decision_of(hunk),
                    hunk_ids=[hunk.id],
                    comment=text,
                )
            )
        self._render_current()
        self._update_actions()

    def feedback_text(self) -> str | None:
        """The refinement prompt Send feedback would send (None without comments)."""
        if self.changeset is None:
            return None
        return feedback_prompt(self.changeset, self.comment_of)

    def send_feedback(self) -> None:
        text = self.feedback_text()
        if text is not None and self.branch is None:
            self.feedbackRequested.emit(text)

    def apply(self) -> None:
        if self.interactive and self.changeset is not None:
            self.applyRequested.emit(ApplyParams(session_id=self.changeset.session_id))

    def request_history(self) -> None:
        if self.interactive and self.cwd:
            self.historyRequested.emit(HistoryParams(cwd=self.cwd))

    def roll_back_selected(self) -> None:
        """Roll back the batch selected in the History tab."""
        row = self.history_tree.indexOfTopLevelItem(self.history_tree.currentItem())
        if not self.interactive or not 0 <= row < len(self.batches.batches):
            return
        batch = self.batches.batches[row]
        if not batch.rolled_back:
            self.rollbackRequested.emit(RollbackParams(cwd=batch.cwd, batch_id=batch.id))

    def _on_tab(self, index: int) -> None:
        if self.tabs.widget(index) is not None and self.tabs.tabText(index) == "History":
            self.request_history()

    def _refresh_states(self) -> None:
        if self.changeset is None:
            return
        for row, file in enumerate(self.changeset.files):
            self.files_model.set_state(row, file_state(file, self.decision_of))

    def _update_actions(self) -> None:
        hunk = self.current_hunk_view()
        file = self._current_file_view()
        has_changes = self.changeset is not None and bool(self.changeset.files)
        for button in (self.accept_button, self.reject_button):
            button.setEnabled(self.interactive and hunk is not None)
        for button in (self.accept_file_button, self.reject_file_button):
            button.setEnabled(self.interactive and file is not None)
        for button in (self.accept_all_button, self.reject_all_button, self.apply_button):
            button.setEnabled(self.interactive and has_changes)
        commentable = hunk is not None and self.branch is None
        self.comment_edit.setEnabled(commentable)
        self.comment_button.setEnabled(commentable)
        self.feedback_button.setEnabled(self.branch is None and self.feedback_text() is not None)
        row = self.history_tree.indexOfTopLevelItem(self.history_tree.currentItem())
        can_roll_back = 0 <= row < len(self.batches.batches) and not self.batches.batches[row].rolled_back
        self.rollback_button.setEnabled(self.interactive and can_roll_back)
        self.refresh_history_button.setEnabled(self.interactive)
        if file is not None and hunk is not None:
            self.hunk_label.setText(
                f"Hunk {self.current_hunk + 1}/{len(file.hunks)} · {self.decision_of(hunk)}"
            )
        else:
            self.hunk_label.setText("")
        self.summary.setText(self._summary())

    def _summary(self) -> str:
        if self.branch is not None:
            files = self.branch.files
            hunks = sum(len(file.hunks) for file in files)
            return (
                f"{len(files)} files · {hunks} hunks · read-only" if files else "This branch changed nothing."
            )
        if self.changeset is None or not self.changeset.files:
            return "No changes to review."
        counts = {"pending": 0, "accepted": 0, "rejected": 0}
        for file in self.changeset.files:
            for hunk in file.hunks:
                counts[self.decision_of(hunk)] += 1
        total = sum(counts.values())
        meta = sum(
            1
            for file in self.changeset.files
            if file.meta and any(self.decision_of(hunk) == "pending" for hunk in file.hunks)
        )
        own = f" · {meta} need their own accept" if meta else ""
        return (
            f"{len(self.changeset.files)} files · {total} hunks · {counts['accepted']} accepted · "
            f"{counts['rejected']} rejected · {counts['pending']} pending{own}"
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            action = self._key_action(event)
            if action is not None:
                action()
                return True
        return super().eventFilter(watched, event)

    def _key_action(self, event: QKeyEvent) -> Callable[[], None] | None:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        shift = modifiers == Qt.KeyboardModifier.ShiftModifier
        if modifiers not in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
            return None
        key = event.key()
        if key == Qt.Key.Key_J and not shift:
            return self.next_hunk
        if key == Qt.Key.Key_K and not shift:
            return self.previous_hunk
        if key == Qt.Key.Key_A:
            return (lambda: self.decide_file("accepted")) if shift else (lambda: self.decide_hunk("accepted"))
        if key == Qt.Key.Key_R:
            return (lambda: self.decide_file("rejected")) if shift else (lambda: self.decide_hunk("rejected"))
        return None


def _lex(filename: str, rows: list[Row], *, prefixed: bool) -> list[list[Span]] | None:
    code = code_of(rows, prefixed)
    if len(code) > LEX_MAX_CHARS:
        return None
    return lex_lines(filename, code)
