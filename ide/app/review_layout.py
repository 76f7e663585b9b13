"""The Review pane's widgets and state, which every mode shares: the file list model and the layout.

:class:`ReviewLayout` builds the pane; its subclasses supply the slots the buttons connect to.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QColor,
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
    QVBoxLayout,
    QWidget,
)

from ide.app.diff_editor import DiffEditor
from ide.app.diffs import FileState
from ide.app.viewer import CodeEditor
from ide.protocol.review import ChangeSetView, ConflictView, Decision, FileChangeView, HistoryResult

STANDARD_NOTE = (
    "This agent does not support Arbor review: its proposed edits are shown read-only. Accept or reject "
    "them in the agent itself; comments can still go back to it with Send feedback."
)


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


class ReviewLayout(QWidget):
    """Files on the left, the selected file's diff on the right, hunk actions above it; History tab."""

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
        self._build()

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
        # These show paths, an agent's branch notes and the backend's messages: text, never markup.
        for label in (
            self.meta_label,
            self.branch_label,
            self.message,
            self.result_label,
            self.history_label,
        ):
            label.setTextFormat(Qt.TextFormat.PlainText)
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
