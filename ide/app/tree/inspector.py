"""The node inspector: a node's fields (and UCT terms, for a LATS node) as HTML, under the legend and
above the Show branch diff button; and the short text shown when hovering a node."""

from __future__ import annotations

import html
import json
import math

from PySide6.QtWidgets import QFrame, QPushButton, QScrollArea, QTextBrowser, QWidget

from ide.app.tree.legend import TreeLegend
from ide.app.tree.style import STEER_WORDS, node_caption, node_reward
from ide.app.widgets.controls import edge_to_edge
from ide.protocol.tree import SearchTree, TreeNode
from ide.protocol.uct import EXPLORATION, uct_terms

TOOLTIP_LINES = 4
"""Lines of the thought and of the observation a hover shows."""
TOOLTIP_CHARS = 300


def uses_uct(tree: SearchTree, node: TreeNode) -> bool:
    """Whether ``node`` was chosen by UCT: a LATS run's node (ReAct, ToT and plan nodes are not)."""
    return tree.architecture == "lats" or (node.role or "").startswith("lats.")


def _head(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    head = "\n".join(lines[:TOOLTIP_LINES])
    if len(head) > TOOLTIP_CHARS:
        head = head[: TOOLTIP_CHARS - 1].rstrip() + "…"
    elif len(lines) > TOOLTIP_LINES:
        head += "\n…"
    return head


TRUST_WORDS = {
    "verified": "✓ verified",
    "self": "self-scored, not checked",
    "refuted": "✗ refuted",
}
"""How the inspector and the hover name a node's trust (:mod:`ide.app.tree.verdict`)."""


def trust_text(trust: tuple[str, str] | None) -> str:
    """``✓ verified: the tests passed (…)``; "" for a node that claims nothing."""
    if trust is None:
        return ""
    return f"{TRUST_WORDS.get(trust[0], trust[0])}: {trust[1]}"


def node_tooltip(node: TreeNode, trust: tuple[str, str] | None = None) -> str:
    """The hover text of ``node`` (rich text): caption, kind, status and score, what checked it
    (``trust``: (trust, evidence)), then the first lines of its thought and of its observation."""
    e = html.escape
    reward = node_reward(node)
    facts = [e(node.kind), e(node.status.replace("_", " "))]
    if node.steer:
        facts.append(STEER_WORDS.get(node.steer, node.steer))
    if reward is not None:
        own = trust is not None and trust[0] != "verified"
        facts.append(f"score {reward:g} / 10{' (the model’s own)' if own else ''}")
    if node.visits:
        facts.append(f"value {node.value:.2f} over {node.visits} visits")
    parts = [f"<b>{e(node_caption(node))}</b><br>{' · '.join(facts)}"]
    if trust is not None:
        parts.append(e(trust_text(trust)))
    for title, text in (("Thought", node.thought), ("Observation", node.observation)):
        head = _head(text)
        if head:
            body = e(head).replace("\n", "<br>")
            parts.append(f"<b>{title}</b><br><span style='white-space:pre-wrap'>{body}</span>")
    return "<p>" + "</p><p>".join(parts) + "</p>"


def exploration_constant(figures: dict[str, object]) -> float:
    """The run's UCT constant c if its figures name it, else the default 1.414."""
    for key in ("exploration_constant", "exploration_weight", "c"):
        value = figures.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return EXPLORATION


def inspector_html(
    node: TreeNode,
    parent: TreeNode | None = None,
    c: float = EXPLORATION,
    trust: tuple[str, str] | None = None,
) -> str:
    """The inspector's text for ``node``: every field a person reads to judge a step, what checked its
    result (``trust``: (trust, evidence)), and, given the ``parent`` of a node chosen by UCT, the UCT terms
    its selection was scored by."""
    e = html.escape
    rows: list[tuple[str, str]] = [
        ("Label", e(node.label)),
        ("Kind", e(node.kind)),
        ("Status", e(node.status)),
        *([("Steered", STEER_WORDS.get(node.steer, node.steer))] if node.steer else []),
        *([("Checked", e(trust_text(trust)))] if trust is not None else []),
        ("Depth", str(node.depth)),
        ("Visits", str(node.visits)),
        ("Value", f"{node.value:.3f}"),
    ]
    if node.reward_raw is not None or node.reward is not None:
        raw = f"{node.reward_raw:g} / 10" if node.reward_raw is not None else "–"
        norm = f"{node.reward:.3f}" if node.reward is not None else "–"
        own = " · the model’s own score" if trust is not None and trust[0] != "verified" else ""
        rows.append(("Reward", f"{raw} (normalised {norm}){own}"))
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


LEGEND_MIN_HEIGHT = 48


class TreeInspector(QWidget):
    """The side panel of the tree: the legend, the selected node's text and, for a node with a change
    set, a button that asks for its branch diff (enabled only when the backend can serve it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.legend = TreeLegend()
        self.text = QTextBrowser()
        self.text.setObjectName("treeInspector")
        self.text.setOpenLinks(False)
        self.text.setPlaceholderText("Click a node to inspect it.")
        self.branch_button = QPushButton("Show branch diff")
        self.branch_button.setObjectName("branchDiffButton")
        self.branch_button.hide()
        # The legend scrolls in a low dock rather than holding the whole window's minimum height up.
        legend_area = QScrollArea()
        legend_area.setObjectName("treeLegendArea")
        legend_area.setFrameShape(QFrame.Shape.NoFrame)
        legend_area.setWidgetResizable(True)
        legend_area.setWidget(self.legend)
        legend_area.setMinimumHeight(LEGEND_MIN_HEIGHT)
        legend_area.setMaximumHeight(self.legend.sizeHint().height())
        layout = edge_to_edge(self, 2)
        layout.addWidget(legend_area)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.branch_button)

    def show_node(
        self,
        node: TreeNode | None,
        parent: TreeNode | None = None,
        c: float = EXPLORATION,
        trust: tuple[str, str] | None = None,
    ) -> None:
        """Show ``node`` (None clears) and what checked it (``trust``), with the UCT terms under ``parent``
        (None: no UCT terms) scored with constant ``c``."""
        if node is None:
            self.text.clear()
        else:
            self.text.setHtml(inspector_html(node, parent, c, trust))

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
