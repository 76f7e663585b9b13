"""The session's runs as one tree of attempts, and what the user may ask of a node.

A run continued from a node of another (``Continue from here``) records where it came from
(:attr:`~ide.protocol.tree.SearchTree.forked_from`): the runs list shows it under its origin, reading
"from run X · node", and the drawing offers a way back to that node. :func:`node_offers` says which of the
node's actions (continue, use this branch, prune, expand) the user can take now, and why not otherwise:
the window shows the reason as the action's tooltip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ide.app.tree.style import node_caption
from ide.protocol.tree import SearchTree, TreeNode

STEERABLE = ("lats", "tot")
"""Architectures whose live search takes prune and expand (``_arbor/tree/steer``)."""
DEFAULT_HINT = "Go on from here."
"""The continuation's prompt when the user gave no hint: an ACP prompt is never empty, and the chat shows
what was sent as the user's message (the backend's default says the same)."""
ID_CHARS = 12
"""Characters of a run id the window shows."""


def short_run(run_id: str | None) -> str:
    return f"run {(run_id or '?')[:ID_CHARS]}"


def origin_key(runs: Mapping[str, SearchTree], key: str) -> str | None:
    """The key of the run ``key`` continues from, if the dock holds it: the session's own run of that
    id first, else one opened from a file."""
    tree = runs.get(key)
    origin = tree.forked_from if tree is not None else None
    if origin is None:
        return None
    found = [other for other, candidate in runs.items() if other != key and candidate.run_id == origin.run_id]
    return next((k for k in found if k == origin.run_id), found[0] if found else None)


def run_rows(runs: Mapping[str, SearchTree], titles: Mapping[str, str]) -> list[tuple[str, int, str]]:
    """The runs as the runs list shows them: (key, depth, title), each continued run right under the run
    it continues (deeper by one, its title saying from where), the others in the order they came."""
    children: dict[str | None, list[str]] = {}
    for key in runs:
        children.setdefault(origin_key(runs, key), []).append(key)
    rows: list[tuple[str, int, str]] = []
    seen: set[str] = set()

    def walk(key: str, depth: int) -> None:
        if key in seen:
            return  # two runs that name each other as origin: listed once
        seen.add(key)
        rows.append((key, depth, run_title(runs[key], titles.get(key, key), depth)))
        for child in children.get(key, ()):
            walk(child, depth + 1)

    for key in children.get(None, ()):
        walk(key, 0)
    for key in runs:  # what a cycle left out
        walk(key, 0)
    return rows


def run_title(tree: SearchTree, name: str, depth: int = 0) -> str:
    """``name`` (``run 1a2b…`` or ``file · run``), and for a continued run where it continues from."""
    origin = tree.forked_from
    if origin is None:
        return name
    return f"{'  ' * (depth - 1)}↳ {name} · from {short_run(origin.run_id)} · {origin.node_id}"


def origin_text(runs: Mapping[str, SearchTree], key: str) -> str:
    """What the drawing says of a continued run's origin ("" for a run that continues nothing): the run
    and node, with the node's caption when the dock holds that run."""
    tree = runs.get(key)
    origin = tree.forked_from if tree is not None else None
    if origin is None:
        return ""
    text = f"Continues {short_run(origin.run_id)} from node {origin.node_id}"
    source = origin_key(runs, key)
    node = runs[source].nodes.get(origin.node_id) if source is not None else None
    if node is not None:
        text += f" ({node_caption(node)})"
    elif source is None:
        text += " (that run is not shown here)"
    return text


@dataclass(frozen=True)
class Backend:
    """What the session's backend offers the tree's actions now."""

    fork: bool = False
    adopt: bool = False
    steer: bool = False
    ready: bool = False
    """A session is open and no turn runs."""
    running: bool = False
    """The backend runs (a turn may be running)."""


NOT_IN_SESSION = {
    "file": "This run was opened from a file: its change sets are not in the backend's session.",
    "stale": "This run is from an earlier session that could not be restored.",
}
"""Why a run's branches cannot be shown or used, by where it comes from."""
NOT_RUNNING = "The backend is not running."
BUSY = "Wait for the running turn to end."
NO_NODE = "Select a node first (click it)."


@dataclass(frozen=True)
class Offer:
    """One action on one node: whether the user can take it now, and what the tooltip says."""

    enabled: bool
    tip: str


@dataclass(frozen=True)
class Offers:
    continue_from: Offer
    adopt: Offer
    prune: Offer
    expand: Offer
    origin: Offer


def node_offers(
    tree: SearchTree | None,
    node: TreeNode | None,
    *,
    kind: str,
    backend: Backend,
    redirected: bool = False,
    origin: bool = False,
) -> Offers:
    """What the user can ask of ``node`` of ``tree``. ``kind`` is where the run comes from: ``live`` (the
    session's), ``file`` (opened from a file) or ``stale`` (an earlier session's that could not be
    restored). ``redirected``: its continuation is carried out elsewhere (the sample, in a demo window).
    ``origin``: the dock holds the run ``tree`` continues from."""
    origin_offer = (
        Offer(True, "Show the node this run continues from")
        if origin
        else Offer(False, "This run continues no run shown here" if tree and tree.forked_from else "")
    )
    if tree is None or node is None:
        off = Offer(False, NO_NODE)
        return Offers(off, off, off, off, origin_offer)
    return Offers(
        _continue(node, kind, backend, redirected),
        _adopt(node, kind, backend),
        _steer(tree, node, kind, backend, "prune"),
        _steer(tree, node, kind, backend, "expand"),
        origin_offer,
    )


def _continue(node: TreeNode, kind: str, backend: Backend, redirected: bool) -> Offer:
    if redirected:
        return Offer(True, f"Continue from {node.id} in a demo window of its own, on a copy of the sample")
    reason = _session_reason(backend, backend.fork, "_arbor/tree/fork: Continue from here")
    if reason:
        return Offer(False, reason)
    given = " (its events are sent: the backend's session does not hold this run)" if kind != "live" else ""
    return Offer(True, f"A new turn that starts from {node.id}'s state, with your hint{given}")


def _adopt(node: TreeNode, kind: str, backend: Backend) -> Offer:
    if kind != "live":
        return Offer(False, NOT_IN_SESSION[kind])
    reason = _session_reason(backend, backend.adopt, "_arbor/tree/adopt: Use this branch")
    if reason:
        return Offer(False, reason)
    return Offer(True, f"Make the changes as they stood at {node.id} the session's change set, to review")


def _steer(tree: SearchTree, node: TreeNode, kind: str, backend: Backend, action: str) -> Offer:
    what = "Prune" if action == "prune" else "Expand"
    if kind != "live" or tree.finished:
        return Offer(False, f"{what} steers a running search; this run has finished.")
    if tree.architecture not in STEERABLE:
        name = tree.architecture or "this architecture"
        return Offer(False, f"{what} steers a LATS or Tree-of-Thoughts search, not {name}.")
    if action == "prune" and node.parent is None:
        return Offer(False, "The root cannot be pruned: that is the whole search (Stop ends it).")
    if action == "prune" and node.steer == "prune":
        return Offer(False, f"{node.id} is pruned already.")
    if not backend.running:
        return Offer(False, NOT_RUNNING)
    if not backend.steer:
        return Offer(False, "The backend does not steer a running search (_arbor/tree/steer).")
    if action == "prune":
        return Offer(True, f"Never select or expand {node.id} or anything under it again")
    return Offer(True, f"Generate more children of {node.id} next")


def _session_reason(backend: Backend, supported: bool, method: str) -> str | None:
    if not backend.running:
        return NOT_RUNNING
    if not supported:
        return f"The backend does not offer {method.split(': ')[1]} ({method.split(':')[0]})."
    if not backend.ready:
        return BUSY
    return None


def titles(runs: Mapping[str, SearchTree], file_runs: set[str]) -> dict[str, str]:
    """Each run's name in the runs list: a file's ``file · run``, else ``run 1a2b…``."""
    return {key: key if key in file_runs else short_run(tree.run_id or key) for key, tree in runs.items()}
