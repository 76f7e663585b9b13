"""The UCT terms of a child, shared by the backend's search and the window's node inspector."""

from __future__ import annotations

import math

EXPLORATION = 1.414
"""The UCT exploration constant c (seed 000), about √2."""


def uct_terms(
    value: float, visits: int, parent_visits: int, c: float = EXPLORATION
) -> tuple[float, float, float]:
    """Exploitation (``value``), exploration ``c·√(ln parent_visits / visits)`` and their sum, the UCT score.

    An unvisited child explores and scores infinity (it is tried first); under an unvisited parent the
    exploration term is 0. Callers that must reject impossible counts check them first.
    """
    if visits <= 0:
        return value, math.inf, math.inf
    if parent_visits <= 0:
        return value, 0.0, value
    exploration = c * math.sqrt(math.log(parent_visits) / visits)
    return value, exploration, value + exploration
