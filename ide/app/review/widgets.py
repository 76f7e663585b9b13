"""The Review pane's pieces: the file list, the bar of change-set actions, the branch bar, the hunk bar
and the History tab. Each builds its own widgets and says what happened through its widgets' signals (or
its own); :class:`~ide.app.review.pane.ReviewPane` lays them out and wires them to its state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ide.app.review.diffs import FileState
from ide.app.review.state import META_MARK, ReviewActions
from ide.app.widgets.flow_layout import FlowLayout

if TYPE_CHECKING:
    from ide.protocol.review import FileChangeView, HistoryResult

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
TOOLBAR_SPACING = 2
"""As the pane's column lays out its rows (a layout of its own would take the style's wider default)."""
HUNK_BAR_SPACING = 0
"""As the diff's column lays out its rows: the buttons touch."""
COMMENT_MIN_WIDTH = 120
"""The comment box's narrowest: room for a few words, never a sliver."""
FITTED_COLUMNS = (1, 2, 3)
"""The file list's columns as wide as their widest text (status, +/−, state); the name takes the rest."""
WIDTH_SLACK = 4
"""Pixels by which a text layout's width may differ from font metrics' advance: the rows whose text comes
this close to the widest are asked for their exact size hint."""


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

    def text(self, row: int, column: int) -> str:
        """What row ``row`` shows in ``column``."""
        file = self.files[row]
        if column == 0:
            name = f"{file.old_path} → {file.path}" if file.old_path else file.path
            return META_MARK + name if file.meta else name
        if column == 1:
            return STATUS_LETTERS.get(file.status, "?")
        if column == 2:
            return "binary" if file.binary else f"+{file.additions} −{file.deletions}"
        return self.states[row]

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        file = self.files[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(index.row(), column)
        if role == Qt.ItemDataRole.ForegroundRole and column == 3:
            return STATE_COLOURS[self.states[index.row()]]
        if role == Qt.ItemDataRole.ForegroundRole and column == 0 and file.meta:
            return META_COLOUR
        if role == Qt.ItemDataRole.ToolTipRole:
            if file.conflict:
                return file.conflict
            return f"{file.path}\nNeeds its own accept: {file.meta}" if file.meta else file.path
        return None


class ReviewFileList(QTreeView):
    """The change set's files, one row each; the user's choice of row comes out as :attr:`rowChosen`."""

    rowChosen = Signal(int)
    """The user made this row current (not :meth:`show_row`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reviewFiles")
        self.files_model = ReviewFileModel(self)
        self.setModel(self.files_model)
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in FITTED_COLUMNS:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        self._widest: dict[tuple[int, str], list[int]] = {}
        self.files_model.modelReset.connect(self._widest.clear)
        self.files_model.dataChanged.connect(lambda *_: self._widest.clear())
        self.selectionModel().currentRowChanged.connect(self._on_row)

    def sizeHintForColumn(self, column: int) -> int:
        """What ResizeToContents sizes a column to: the widest row's size hint, asked of the delegate only
        for the rows whose text is the widest by font metrics (QTreeView's own asks it of every row, some
        ten model roles each, on every layout: 37,000 ``data()`` calls to show 300 files)."""
        model = self.files_model
        if column not in FITTED_COLUMNS or model.rowCount() == 0:
            return super().sizeHintForColumn(column)
        self.ensurePolished()
        key = (column, self.font().key())
        rows = self._widest.get(key)
        if rows is None:
            rows = self._widest[key] = self._widest_rows(column)
        return max(self.sizeHintForIndex(model.index(row, column)).width() for row in rows)

    def _widest_rows(self, column: int) -> list[int]:
        """One row of each text within :data:`WIDTH_SLACK` pixels of the widest text of ``column``."""
        model = self.files_model
        first: dict[str, int] = {}
        for row in range(model.rowCount()):
            first.setdefault(model.text(row, column), row)
        metrics = self.fontMetrics()
        widths = {text: metrics.horizontalAdvance(text) for text in first}
        widest = max(widths.values())
        return [first[text] for text, width in widths.items() if width >= widest - WIDTH_SLACK]

    def show_row(self, row: int) -> None:
        """Make ``row`` current and scroll to it, without a :attr:`rowChosen`."""
        self.selectionModel().blockSignals(True)
        self.setCurrentIndex(self.files_model.index(row, 0))
        self.selectionModel().blockSignals(False)
        self.scrollTo(self.files_model.index(row, 0))

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.rowChosen.emit(current.row())


class BranchBar(QWidget):
    """Above a search branch's changes shown read-only: what they are, and the way back to the review."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("")
        self.label.setObjectName("branchHeader")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # an agent's branch notes: text, never markup
        self.back_button = QPushButton("Back to the review")
        self.back_button.setToolTip("Show the session's pending changes again")
        layout = QHBoxLayout()
        layout.setContentsMargins(6, 4, 6, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.back_button)
        self.setLayout(layout)


class ReviewToolbar(QWidget):
    """The summary of the change set and its actions: Side by side, Accept all, Reject all, Send feedback,
    Apply. Too narrow for one line, the buttons go on the next, whole."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel("No changes to review.")
        self.summary.setObjectName("mutedLabel")
        self.summary.setWordWrap(True)  # on more lines rather than wider than the pane
        self.summary.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.view_toggle = QPushButton("Side by side")
        self.view_toggle.setCheckable(True)
        self.accept_all_button = QPushButton("Accept all")
        self.reject_all_button = QPushButton("Reject all")
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("sendButton")
        self.feedback_button = QPushButton("Send feedback")
        layout = FlowLayout(self, TOOLBAR_SPACING)
        layout.setContentsMargins(6, 4, 6, 0)
        layout.addWidget(self.summary)
        for button in (
            self.view_toggle,
            self.accept_all_button,
            self.reject_all_button,
            self.feedback_button,
            self.apply_button,
        ):
            layout.addWidget(button)

    def show_actions(
        self, actions: ReviewActions, summary: str, apply: tuple[str, str] = ("Apply", "")
    ) -> None:
        """Enable what applies now; ``apply``: the Apply button's (text, tooltip), what it will do."""
        for button in (self.accept_all_button, self.reject_all_button, self.apply_button):
            button.setEnabled(actions.whole)
        self.feedback_button.setEnabled(actions.feedback)
        self.summary.setText(summary)
        self.apply_button.setText(apply[0])
        self.apply_button.setToolTip(apply[1])


class HunkBar(QWidget):
    """Above the diff: the current hunk, its decisions (a, r, Shift+A, Shift+R) and the comment box, on
    more lines when the diff's column is narrow."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hunk_label = QLabel("")
        self.hunk_label.setContentsMargins(0, 0, 6, 0)  # the buttons touch each other, not the caption
        self.accept_button = QPushButton("Accept")
        self.accept_button.setToolTip("Accept this hunk (a)")
        self.reject_button = QPushButton("Reject")
        self.reject_button.setToolTip("Reject this hunk (r)")
        self.accept_file_button = QPushButton("Accept file")
        self.accept_file_button.setToolTip("Accept every hunk of this file (Shift+A)")
        self.reject_file_button = QPushButton("Reject file")
        self.reject_file_button.setToolTip("Reject every hunk of this file (Shift+R)")
        self.comment_edit = QLineEdit()
        self.comment_edit.setPlaceholderText("Comment on this hunk for the agent…")
        self.comment_edit.setMinimumWidth(COMMENT_MIN_WIDTH)
        self.comment_edit.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.comment_button = QPushButton("Comment")
        layout = FlowLayout(self, HUNK_BAR_SPACING)
        layout.setContentsMargins(6, 2, 6, 2)
        for widget in (
            self.hunk_label,
            self.accept_button,
            self.reject_button,
            self.accept_file_button,
            self.reject_file_button,
            self.comment_edit,
            self.comment_button,
        ):
            layout.addWidget(widget)

    def show_actions(self, actions: ReviewActions, caption: str) -> None:
        for button in (self.accept_button, self.reject_button):
            button.setEnabled(actions.hunk)
        for button in (self.accept_file_button, self.reject_file_button):
            button.setEnabled(actions.file)
        self.comment_edit.setEnabled(actions.comment)
        self.comment_button.setEnabled(actions.comment)
        self.hunk_label.setText(caption)


class HistoryTab(QWidget):
    """The applied batches, newest first, with Refresh and Roll back."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Applied", "Message", "Files", "Commit", "State"])
        self.tree.setRootIsDecorated(False)
        # Each column as wide as its text, the message taking the rest: nothing cut beside empty space.
        header = self.tree.header()
        header.setStretchLastSection(False)
        for column in range(self.tree.columnCount()):
            mode = QHeaderView.ResizeMode.Stretch if column == 1 else QHeaderView.ResizeMode.ResizeToContents
            header.setSectionResizeMode(column, mode)
        self.rollback_button = QPushButton("Roll back")
        self.refresh_button = QPushButton("Refresh")
        self.label = QLabel("")
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # the backend's messages: text, never markup
        self.label.setWordWrap(True)
        bar = QHBoxLayout()
        bar.addWidget(self.label, 1)
        bar.addWidget(self.refresh_button)
        bar.addWidget(self.rollback_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.tree, 1)

    def selected_row(self) -> int:
        """The selected batch's row (-1: none)."""
        return self.tree.indexOfTopLevelItem(self.tree.currentItem())

    def show_batches(self, history: HistoryResult) -> None:
        """List the batches, the newest (first) selected."""
        self.tree.clear()
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
            self.tree.addTopLevelItem(item)
        if history.batches:
            self.tree.setCurrentItem(self.tree.topLevelItem(0))

    def show_actions(self, actions: ReviewActions) -> None:
        self.rollback_button.setEnabled(actions.roll_back)
        self.refresh_button.setEnabled(actions.refresh)
