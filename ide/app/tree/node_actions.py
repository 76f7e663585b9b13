"""What the user can ask of a drawn node — Continue from here…, Use this branch, Prune, Expand, and for a
continued run Go to origin: one set of actions, in the node's context menu (right-click), as buttons under
the inspector and as keys while the tree has the focus (:data:`KEYS`, shown in the menu). Each is enabled,
or disabled with the reason as its tooltip (:func:`~ide.app.tree.lineage.node_offers`).

The actions only say what was asked (:class:`NodeActions`' signals, with the run's key and the node's id):
the Search tree dock sends the requests (:mod:`ide.app.tree.steering`). Go to origin is carried out here,
and so is the line above a continued run's drawing that names its origin.
"""

from __future__ import annotations

import html
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, QPointF, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMenu, QSizePolicy, QToolButton, QWidget

from ide.app.tree.lineage import Backend, Offer, Offers, node_offers, origin_key, origin_text
from ide.app.widgets.flow_layout import FlowLayout

if TYPE_CHECKING:
    from ide.app.tree.view import SearchTreeView

KEYS = {"continue": "C", "adopt": "U", "prune": "P", "expand": "E", "origin": "O"}
"""The keys of the node actions while the tree (drawing, inspector, toolbar) has the focus: single letters,
as a drawing has no text to type into."""
TEXTS = {
    "continue": "Continue from here…",
    "adopt": "Use this branch",
    "prune": "Prune",
    "expand": "Expand",
    "origin": "Go to origin",
}


class NodeActions(QObject):
    """The node actions of one :class:`~ide.app.tree.view.SearchTreeView`, on its selected node."""

    continueRequested = Signal(str, str)
    """Continue from here…: the run's key and the node's id (the dock asks for the hint, then forks)."""
    adoptRequested = Signal(str, str)
    """Use this branch: the run's key and the node's id."""
    steerRequested = Signal(str, str, str)
    """Prune or expand: the run's key, the node's id and the action (``prune``, ``expand``)."""

    def __init__(self, view: SearchTreeView) -> None:
        super().__init__(view)
        self.view = view
        self.backend = Backend()
        """What the session's backend offers now (the dock says, :meth:`set_backend`)."""
        self.redirected: set[str] = set()
        """Files whose runs are continued elsewhere (the recorded sample: in a demo window)."""
        self.offers: Offers = node_offers(None, None, kind="live", backend=self.backend)
        self.menu: QMenu | None = None
        """The last context menu shown."""
        self.actions: dict[str, QAction] = {}
        for name, text in TEXTS.items():
            action = QAction(text, view)
            action.setObjectName(f"treeAction_{name}")
            action.setShortcut(QKeySequence(KEYS[name]))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.setShortcutVisibleInContextMenu(True)
            action.triggered.connect(partial(self._triggered, name))
            view.addAction(action)
            self.actions[name] = action

        self.buttons = QWidget()
        self.buttons.setObjectName("treeNodeActions")
        row = FlowLayout(self.buttons, 4)
        row.setContentsMargins(0, 2, 0, 2)
        for name in ("continue", "adopt", "prune", "expand"):
            button = QToolButton()
            button.setObjectName(f"treeButton_{name}")
            button.setDefaultAction(self.actions[name])
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            # Each line of buttons fills the panel's width, however many the width lets stand on it.
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            row.addWidget(button)
        self.buttons.hide()

        self.origin_bar = QLabel()
        self.origin_bar.setObjectName("treeOrigin")
        self.origin_bar.setContentsMargins(6, 0, 6, 0)
        self.origin_bar.setTextFormat(Qt.TextFormat.RichText)
        self.origin_bar.linkActivated.connect(lambda _link: self.go_to_origin())
        self.origin_bar.hide()

        view.graphics.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the keys work once a node is clicked
        view.graphics.menuRequested.connect(self.popup)

    def set_backend(self, backend: Backend) -> None:
        """What the session's backend offers now (its methods, a session ready for a turn)."""
        self.backend = backend
        self.refresh()

    def run_kind(self, key: str | None) -> str:
        """Where run ``key`` comes from: ``file``, ``stale`` (an earlier session's) or ``live``."""
        view = self.view
        return "file" if key in view.file_runs else "stale" if key in view.stale_runs else "live"

    def refresh(self) -> None:
        """Enable the actions for the selected node of the shown run, each saying why when it cannot."""
        view, key = self.view, self.view.current
        tree = view.runs.get(key) if key is not None else None
        node = tree.nodes.get(view.selected_id) if tree is not None and view.selected_id else None
        redirected = key is not None and key in view.file_runs and key.split(" · ")[0] in self.redirected
        has_origin = key is not None and origin_key(view.runs, key) is not None
        self.offers = node_offers(
            tree,
            node,
            kind=self.run_kind(key),
            backend=self.backend,
            redirected=redirected,
            origin=has_origin,
        )
        for name, offer in self._by_name().items():
            action = self.actions[name]
            action.setEnabled(offer.enabled)
            shortcut = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            action.setToolTip(f"{offer.tip} ({shortcut})" if offer.tip and offer.enabled else offer.tip)
        self.actions["origin"].setVisible(tree is not None and tree.forked_from is not None)
        self.buttons.setVisible(node is not None)
        text = html.escape(origin_text(view.runs, key)) if key is not None else ""
        if text and has_origin:
            text += f" · <a href='origin'>Go to origin</a> ({KEYS['origin']})"
        self.origin_bar.setText(f"↳ {text}" if text else "")
        self.origin_bar.setVisible(bool(text))

    def _by_name(self) -> dict[str, Offer]:
        offers = self.offers
        return {
            "continue": offers.continue_from,
            "adopt": offers.adopt,
            "prune": offers.prune,
            "expand": offers.expand,
            "origin": offers.origin,
        }

    def popup(self, point: QPointF, at: QPoint, keyboard: bool = False) -> QMenu | None:
        """The context menu of the node at ``point`` (scene), shown at ``at`` (global); the node is selected
        first. From the ``keyboard``, the selected node's, beside it. None (no menu) off the nodes."""
        view = self.view
        selected = view.scene_pos(view.selected_id) if keyboard and view.selected_id else None
        if selected is not None:
            at = view.graphics.viewport().mapToGlobal(view.graphics.mapFromScene(selected))
            point = selected
        index = view.canvas.node_at(point)
        if index < 0:
            return None
        view.select_node(view.canvas.geometry.ids[index])
        self.refresh()
        menu = self.menu = QMenu(view)
        menu.setObjectName("treeNodeMenu")
        menu.setToolTipsVisible(True)
        menu.addAction(self.actions["continue"])
        menu.addAction(self.actions["adopt"])
        branch = view.branch_button
        if not branch.isHidden():
            diff = menu.addAction("Show branch diff", branch.click)
            diff.setEnabled(branch.isEnabled())
            diff.setToolTip(branch.toolTip())
        menu.addSeparator()
        menu.addAction(self.actions["prune"])
        menu.addAction(self.actions["expand"])
        if self.actions["origin"].isVisible():
            menu.addSeparator()
            menu.addAction(self.actions["origin"])
        menu.popup(at)
        return menu

    def _triggered(self, name: str) -> None:
        self.refresh()  # the backend's state may have changed since the action was drawn
        view, key, node_id = self.view, self.view.current, self.view.selected_id
        if not self._by_name()[name].enabled or key is None:
            return
        if name == "origin":
            self.go_to_origin()
        elif node_id is None:
            return
        elif name == "continue":
            self.continueRequested.emit(key, node_id)
        elif name == "adopt":
            self.adoptRequested.emit(key, node_id)
        else:
            self.steerRequested.emit(key, node_id, name)
        view.graphics.setFocus()

    def go_to_origin(self) -> bool:
        """Show the run the shown run continues from, its origin node selected and in view; False when the
        dock does not hold that run."""
        view = self.view
        key = view.current
        tree = view.runs.get(key) if key is not None else None
        source = origin_key(view.runs, key) if key is not None else None
        if tree is None or tree.forked_from is None or source is None:
            return False
        node_id = tree.forked_from.node_id
        view.select_run(source)
        view.flush()
        if node_id not in view.runs[source].nodes:
            view.show_message(f"Node {node_id} is not in {source}")
            return False
        view.select_node(node_id)
        view.center_on(node_id)
        return True
