"""The node inspector: a node's fields and UCT terms as HTML, beside the Show branch diff button."""

from __future__ import annotations

import html
import json
import math

from PySide6.QtWidgets import QPushButton, QTextBrowser, QVBoxLayout, QWidget

from ide.protocol.tree import TreeNode
from ide.protocol.uct import EXPLORATION, uct_terms


def exploration_constant(figures: dict[str, object]) -> float:
    """The run's UCT constant c if its figures name it, else the default 1.414."""
    for key in ("exploration_constant", "exploration_weight", "c"):
        value = figures.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return EXPLORATION


def inspector_html(node: TreeNode, parent: TreeNode | None = None, c: float = EXPLORATION) -> str:
    """The inspector's text for ``node``: every field a person reads to judge a step, and, for a child,
    the UCT terms its selection was scored by."""
    e = html.escape
    rows: list[tuple[str, str]] = [
        ("Label", e(node.label)),
        ("Kind", e(node.kind)),
        ("Status", e(node.status)),
        ("Depth", str(node.depth)),
        ("Visits", str(node.visits)),
        ("Value", f"{node.value:.3f}"),
    ]
    if node.reward_raw is not None or node.reward is not None:
        raw = f"{node.reward_raw:g} / 10" if node.reward_raw is not None else "–"
        norm = f"{node.reward:.3f}" if node.reward is not None else "–"
        rows.append(("Reward", f"{raw} (normalised {norm})"))
    for title, value in (("Role", node.role), ("Model", node.model), ("Change set", node.changeset_id)):
        if value:
            rows.append((title, e(value)))
    if node.input_tokens or node.output_tokens:
        rows.append(("Tokens", f"{node.input_tokens} in / {node.output_tokens} out"))
    if node.latency_ms:
        rows.append(("Latency", f"{node.latency_ms:.0f} ms"))
    rows.append(("Id", e(node.id)))
    table = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
    parts = [f"<table cellspacing='2'>{table}</table>"]
    if parent is not None:
        value, exploration, total = uct_terms(node.value, node.visits, parent.visits, c)

        def number(x: float) -> str:
            return "∞" if math.isinf(x) else f"{x:.3f}"

        uct_rows = [
            ("Value", f"{value:.3f}"),
            ("Exploration", f"{number(exploration)} = {c:g}·√(ln {parent.visits} / {node.visits})"),
            ("UCT", number(total)),
            ("Visits", f"{node.visits} of the parent's {parent.visits}"),
        ]
        uct = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in uct_rows)
        parts.append(f"<h4>UCT (c = {c:g})</h4><table cellspacing='2'>{uct}</table>")

    def section(title: str, text: str | None, pre: bool = False) -> None:
        if text:
            body = f"<pre>{e(text)}</pre>" if pre else f"<p>{e(text).replace(chr(10), '<br>')}</p>"
            parts.append(f"<h4>{title}</h4>{body}")

    section("Thought", node.thought)
    if node.action is not None:
        args = json.dumps(node.action.args, indent=2, ensure_ascii=False, default=str)
        how = " (recovered from text: the model wrote the call out)" if node.action.recovered else ""
        section("Action", f"{node.action.tool}{how}\n{args}", pre=True)
    section("Observation", node.observation, pre=True)
    section("Reflection", node.reflection)
    return "".join(parts)


class TreeInspector(QWidget):
    """The side panel of the tree: the selected node's text and, for a node with a change set, a button
    that asks for its branch diff (enabled only when the backend can serve it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QTextBrowser()
        self.text.setObjectName("treeInspector")
        self.text.setOpenLinks(False)
        self.text.setPlaceholderText("Click a node to inspect it.")
        self.branch_button = QPushButton("Show branch diff")
        self.branch_button.setObjectName("branchDiffButton")
        self.branch_button.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.branch_button)

    def show_node(
        self, node: TreeNode | None, parent: TreeNode | None = None, c: float = EXPLORATION
    ) -> None:
        """Show ``node`` (None clears), with the UCT terms under ``parent`` scored with constant ``c``."""
        if node is None:
            self.text.clear()
        else:
            self.text.setHtml(inspector_html(node, parent, c))

    def show_branch_button(self, node: TreeNode | None, unavailable: str | None) -> None:
        """Offer the branch diff of a node with a change set; ``unavailable``: why it cannot be shown."""
        button = self.branch_button
        if node is None or not node.changeset_id:
            button.hide()
            return
        button.setEnabled(unavailable is None)
        button.setToolTip(
            unavailable or f"Show the changes of branch {node.id} (change set {node.changeset_id})"
        )
        button.show()
