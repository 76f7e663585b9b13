"""The Workspace panel: the workspace's files as a tree, listed off the UI thread, honouring .gitignore."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QStyle,
    QToolButton,
    QTreeView,
    QWidget,
)

from ide.app.background import run_blocking, spawn
from ide.app.widgets.controls import edge_to_edge
from ide.app.workspace.files import list_workspace_files

if TYPE_CHECKING:
    import asyncio

    from ide.settings import WorkspaceSettings

Index = QModelIndex | QPersistentModelIndex


@dataclass(eq=False)
class FileNode:
    """One file or directory of the tree; built in a worker thread, then only read by the model."""

    name: str
    path: str
    is_dir: bool
    parent: FileNode | None = None
    children: list[FileNode] = field(default_factory=list)
    row: int = 0


def build_tree(paths: list[str]) -> FileNode:
    """A tree of ``paths`` (workspace-relative, POSIX): directories first, then files, each by name."""
    root = FileNode("", "", is_dir=True)
    dirs: dict[str, FileNode] = {"": root}
    for path in paths:
        parent = root
        parts = path.split("/")
        for depth, part in enumerate(parts[:-1]):
            key = "/".join(parts[: depth + 1])
            node = dirs.get(key)
            if node is None:
                node = FileNode(part, key, is_dir=True, parent=parent)
                parent.children.append(node)
                dirs[key] = node
            parent = node
        parent.children.append(FileNode(parts[-1], path, is_dir=False, parent=parent))
    for node in dirs.values():
        node.children.sort(key=lambda child: (not child.is_dir, child.name.lower(), child.name))
        for row, child in enumerate(node.children):
            child.row = row
    return root


class FileTreeModel(QAbstractItemModel):
    """A read-only item model over a :class:`FileNode` tree; Qt asks only for the rows it shows."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = FileNode("", "", is_dir=True)
        self._dir_icon = _standard_icon(QStyle.StandardPixmap.SP_DirIcon)
        self._file_icon = _standard_icon(QStyle.StandardPixmap.SP_FileIcon)

    def set_root(self, root: FileNode) -> None:
        """Replace the whole tree (a refresh); views keep no stale indexes across the reset."""
        self.beginResetModel()
        self._root = root
        self.endResetModel()

    def node(self, index: Index) -> FileNode:
        """The node behind ``index`` (the invisible root for an invalid index)."""
        if not index.isValid():
            return self._root
        node = index.internalPointer()
        assert isinstance(node, FileNode)
        return node

    def index_of(self, path: str) -> QModelIndex:
        """Index of a workspace-relative path, or an invalid index when it is not in the tree."""
        node = self._root
        index = QModelIndex()
        for part in path.split("/"):
            match = next((child for child in node.children if child.name == part), None)
            if match is None:
                return QModelIndex()
            index = self.index(match.row, 0, index)
            node = match
        return index

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        children = self.node(parent).children
        if column != 0 or not 0 <= row < len(children):
            return QModelIndex()
        return self.createIndex(row, column, children[row])

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if not index.isValid():
            return QModelIndex()
        parent = self.node(index).parent
        if parent is None or parent is self._root:
            return QModelIndex()
        return self.createIndex(parent.row, 0, parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 (Qt override)
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self.node(parent).children)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 (Qt override)
        return 1

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008 (Qt override)
        return bool(self.node(parent).children)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node = self.node(index)
        if role == Qt.ItemDataRole.DisplayRole:
            return node.name
        if role == Qt.ItemDataRole.ToolTipRole:
            return node.path
        if role == Qt.ItemDataRole.DecorationRole:
            return self._dir_icon if node.is_dir else self._file_icon
        return None


def _standard_icon(which: QStyle.StandardPixmap) -> QIcon:
    return QApplication.style().standardIcon(which)


class WorkspacePanel(QWidget):
    """Dock content: the workspace tree. Interface: :meth:`refresh`, :attr:`fileActivated`, :attr:`loaded`."""

    fileActivated = Signal(object)
    """A file was chosen (activated or clicked): its absolute :class:`Path`."""
    loaded = Signal(int)
    """The listing finished; the number of files in the tree."""

    def __init__(
        self, root: Path, settings: Callable[[], WorkspaceSettings], parent: QWidget | None = None
    ) -> None:
        """``settings`` gives the ``[workspace]`` settings a listing honours, read at each listing (the
        window reads its settings after the first frame, before the first listing)."""
        super().__init__(parent)
        self.setObjectName("workspacePanel")
        self.root = root
        self._settings = settings
        self._listing: asyncio.Task[None] | None = None
        self.files: list[str] = []

        self.model = FileTreeModel(self)
        self.tree = QTreeView()
        self.tree.setObjectName("workspaceTree")
        self.tree.setModel(self.model)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAnimated(False)
        self.tree.clicked.connect(self._on_chosen)
        self.tree.activated.connect(self._on_chosen)

        self._title = QLabel(root.name or str(root))
        self._title.setObjectName("panelTitle")
        self._title.setToolTip(str(root))
        self._count = QLabel("listing…")
        self._count.setObjectName("mutedLabel")
        refresh = QToolButton()
        refresh.setIcon(_standard_icon(QStyle.StandardPixmap.SP_BrowserReload))
        refresh.setToolTip("Refresh the file list")
        refresh.setAutoRaise(True)
        refresh.clicked.connect(self.refresh)

        header = QHBoxLayout()
        header.setContentsMargins(8, 4, 4, 4)
        header.addWidget(self._title)
        header.addStretch(1)
        header.addWidget(self._count)
        header.addWidget(refresh)
        layout = edge_to_edge(self)
        layout.addLayout(header)
        layout.addWidget(self.tree, 1)

    def refresh(self) -> None:
        """List the workspace again in a worker; the tree is replaced when the listing arrives."""
        if self._listing is not None and not self._listing.done():
            self._listing.cancel()
        self._listing = spawn(self._list(), name="list workspace")

    async def _list(self) -> None:
        settings = self._settings()
        paths = await run_blocking(list_workspace_files, self.root, settings)
        secrets = await run_blocking(secret_files, paths, settings)
        tree = await run_blocking(build_tree, paths)
        if not shiboken6.isValid(self):
            return  # the window closed while the listing ran
        expanded = self._expanded_paths()
        self.files = paths
        self.model.set_root(tree)
        for path in expanded:
            self.tree.expand(self.model.index_of(path))
        self._count.setText(count_text(len(paths), len(secrets)))
        named = ", ".join(secrets[:SECRETS_NAMED]) + (" …" if len(secrets) > SECRETS_NAMED else "")
        self._count.setToolTip(
            "Files git lists (tracked, and untracked but not ignored) less workspace.exclude."
            + (f" {len(secrets)} of them are secrets (workspace.secrets: {named})," if secrets else "")
            + " The code index looks at these files less the secrets (the status bar's 'of N files'), "
            "and skips files in no language it reads, binaries and files over workspace.max_file_bytes."
        )
        self.loaded.emit(len(paths))

    def _expanded_paths(self) -> list[str]:
        found: list[str] = []
        pending = [QModelIndex()]
        while pending:
            parent = pending.pop()
            for row in range(self.model.rowCount(parent)):
                index = self.model.index(row, 0, parent)
                if self.tree.isExpanded(index):
                    found.append(self.model.node(index).path)
                    pending.append(index)
        return found

    def select(self, path: Path) -> None:
        """Reveal and select ``path`` in the tree (no-op for files the tree does not list)."""
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return
        index = self.model.index_of(rel)
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)

    def _on_chosen(self, index: QModelIndex) -> None:
        node = self.model.node(index)
        if not node.is_dir:
            self.fileActivated.emit(self.root / node.path)


SECRETS_NAMED = 5
"""Secret files the count's tooltip names before "…"."""


def secret_files(paths: list[str], settings: WorkspaceSettings) -> list[str]:
    """The ``paths`` that ``workspace.secrets`` names: listed in the tree, never read by the code index or
    the agent (so the index's count is the tree's less these). ``!`` patterns never take a secret off."""
    from pathspec import GitIgnoreSpec  # imported with the first listing, after the first frame

    spec = GitIgnoreSpec.from_lines([pattern for pattern in settings.secrets if not pattern.startswith("!")])
    return [path for path in paths if spec.match_file(path)]


def count_text(files: int, secrets: int) -> str:
    """``231 files · 1 secret``: what the tree lists, and how many of them the index leaves out as secrets."""
    text = f"{files} file{'' if files == 1 else 's'}"
    return text + (f" · {secrets} secret{'' if secrets == 1 else 's'}" if secrets else "")
