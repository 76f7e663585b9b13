"""How a search-tree node looks: size, fill colour by value, outline by status, shape by kind, caption."""

from __future__ import annotations

import math
import shlex

from PySide6.QtGui import QColor

from ide.app.theme import ACCENT
from ide.protocol.tree import TreeNode

MIN_R, MAX_R = 10.0, 18.0
FONT_PT = 9.0
CAPTION_W = 110.0
"""Scene width of a node's caption (its label, wrapped): two lines hold 30-odd characters."""
CAPTION_LINES = 2
LINE_H = 14.0
"""Scene height of one caption line (9 pt text)."""
CAPTION_H = CAPTION_LINES * LINE_H
CAPTION_GAP = 5.0
"""Scene pixels between a node and its caption (the best-path ring stays clear of it)."""
H_UNIT = CAPTION_W + 6
"""Scene pixels between sibling centres top-down, and between depth columns left to right."""
V_UNIT = 2 * MAX_R + CAPTION_H + 16
"""Scene pixels between depth levels top-down (a node, its caption and room for the edges)."""
ROW_UNIT = 2 * MAX_R + CAPTION_H + 8
"""Scene pixels between sibling rows left to right."""
MIN_SCALE = 0.8
"""The default fit never shrinks the drawing below this: it scrolls instead, so captions stay readable."""
LABEL_PX = 7.0
"""Smallest on-screen text height (pixels) worth drawing."""
SHAPE_PX = 5.0
"""Below this on-screen node diameter, nodes are plain squares (no outline, no shape)."""
MAIN_ARGS = (
    "path", "file", "file_path", "pattern", "query", "command", "cmd", "argv", "url", "name", "symbol",
)  # fmt: skip
"""Tool arguments a caption shows after the tool's name, the first one present."""


STATUS_COLOURS = {
    "generated": "#c3c8d1",
    "evaluated": "#7ea6e0",
    "active": "#f0a202",
    "terminated_early": "#8a8f98",
    "solution": "#2e9e4f",
    "verified": "#2e9e4f",
    "refuted": "#d9c9c9",
    "pruned": "#e4e6ea",
    "failed": "#d64545",
}
STATUS_PENS = {
    "verified": ("#1d6b34", 3.0),
    "solution": ("#3f7d52", 2.0),
    "refuted": ("#a12626", 2.0),
    "failed": ("#a12626", 2.0),
    "active": ("#b57800", 2.0),
    "pruned": ("#b9bdc4", 1.0),
}
DEFAULT_PEN = ("#5d636e", 1.0)
DASHED = frozenset({"pruned", "solution", "refuted"})
"""Drawn statuses outlined with a dashed line: a claim nothing checked (``solution``, ``refuted``) is
never drawn like a verified result."""
BADGES = {"verified": ("#1d6b34", "✓"), "refuted": ("#a12626", "✗")}
"""Drawn statuses that carry a badge at the node's upper right: its colour and mark."""
STEER_BADGES = {"prune": ("#6b7079", "−"), "expand": ("#2f8f9d", "+")}
"""What the user asked of a node during the run (``TreeNode.steer``), a badge at its lower right: pruned
(never selected or expanded again), expand (more children next)."""
STEER_WORDS = {"prune": "pruned by you", "expand": "expand asked"}
FORK_BADGE = ("#7a4fbf", "⑂")
"""A continued run's root, at its upper left: the run grew out of another run's node."""
EDGE_COLOUR = "#b3b9c3"
BEST_COLOUR = ACCENT
TEXT_COLOUR = "#30343b"
SELECT_COLOUR = "#ff6a00"


def value_colour(score: float) -> str:
    """Red (0) through yellow to green (1); scores above 1 are read on the 0–10 scale."""
    if score > 1.0:
        score /= 10.0
    score = min(max(score, 0.0), 1.0)
    return QColor.fromHsvF(score / 3.0, 0.65, 0.9).name()


def node_score(node: TreeNode) -> float | None:
    """The value a node is coloured by: its backed-up value once visited, else its reward, else None."""
    if node.visits > 0:
        return node.value
    return node.reward


def node_radius(node: TreeNode) -> float:
    return min(MIN_R + 1.6 * math.log2(1 + max(node.visits, 0)), MAX_R)


def _regular(count: int, start: float) -> list[tuple[float, float]]:
    return [
        (math.cos(start + 2 * math.pi * k / count), math.sin(start + 2 * math.pi * k / count))
        for k in range(count)
    ]


POLYGONS: dict[str, list[tuple[float, float]]] = {
    "answer": [(0.0, -1.2), (1.2, 0.0), (0.0, 1.2), (-1.2, 0.0)],  # diamond
    "plan": _regular(6, 0.0),  # hexagon
    "evaluation": [(0.0, -1.15), (1.1, 0.85), (-1.1, 0.85)],  # triangle
    "synthesis": [
        (r * math.cos(-math.pi / 2 + k * math.pi / 5), r * math.sin(-math.pi / 2 + k * math.pi / 5))
        for k in range(10)
        for r in ((1.25 if k % 2 == 0 else 0.6),)
    ],  # star
}
"""Unit shapes by node kind; thought is a circle, action a square, step a rounded square, root a ring."""


NodeStyle = tuple[float, str, str, str, str, str]
"""Radius, fill colour, kind, drawn status, caption and score (reward 0–10, or "") of a drawn node."""

_COLOURS: dict[float, str] = {}


def drawn_status(status: str, trust: str | None) -> str:
    """The status a node is outlined by: ``verified`` and ``refuted`` (see :mod:`ide.app.tree.verdict`)
    stand in for its own; a self-scored ``solution`` keeps its name but is drawn dashed."""
    return trust if trust in ("verified", "refuted") else status


def muted(colour: str) -> str:
    """``colour`` washed out: the fill of a self-score a check refuted, so it never reads as solved."""
    hue, _saturation, _value, _alpha = QColor(colour).getHsvF()
    return QColor.fromHsvF(max(hue, 0.0), 0.15, 0.85).name()


def node_style(node: TreeNode, trust: str | None = None) -> NodeStyle:
    """How ``node`` is drawn: size by visits, colour by value (status colour until scored), shape by kind,
    outline by status and ``trust`` (what checked it)."""
    score = node_score(node)
    if score is None:
        fill = STATUS_COLOURS.get(node.status, "#c3c8d1")
    else:
        fill = _COLOURS.get(score) or _COLOURS.setdefault(score, value_colour(score))
    status = drawn_status(node.status, trust)
    if status == "refuted":
        fill = muted(fill)
    return node_radius(node), fill, node.kind, status, node_caption(node), score_text(node)


def node_caption(node: TreeNode) -> str:
    """What a node says under it: an action's tool and main argument, else its label (or its kind). An
    action with none of :data:`MAIN_ARGS` says its label when it has one (another agent's tool call:
    ``Edit …/made_by_patch.py``, not the first string of its input, such as Codex's ``call_…`` id)."""
    action = node.action
    label = (node.label or "").strip()
    if action is not None:
        argument = next((action.args[k] for k in MAIN_ARGS if action.args.get(k) not in (None, "")), None)
        if argument is None and label and label != "tool call":
            return label.splitlines()[0]
        if argument is None:
            argument = next((v for v in action.args.values() if isinstance(v, str) and v.strip()), "")
        if isinstance(argument, list) and all(isinstance(part, str) for part in argument):
            argument = shlex.join(argument)  # an argument list (run_command's argv) as a command line
        text = str(argument).strip().splitlines()[0] if str(argument).strip() else ""
        return f"{action.tool} {text}".strip()
    return label.splitlines()[0] if label else node.kind


def node_reward(node: TreeNode) -> float | None:
    """The node's evaluated score on the 0–10 scale, or None when it was not scored."""
    if node.reward_raw is not None:
        return node.reward_raw
    return node.reward * 10 if node.reward is not None else None


def score_text(node: TreeNode) -> str:
    """The score drawn in a node: its reward 0–10 (one decimal at most), or "" when it has none."""
    reward = node_reward(node)
    return "" if reward is None else f"{round(reward, 1):g}"
