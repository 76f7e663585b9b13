"""``arbor tree list``: a session's runs, and one run's nodes, as plain text lines (printed through
``ide.termout`` like every command's output).

A run's line: its id, architecture, node count, whether it finished, where it continued from, and its task's
first line. A node's line: ``*`` when it is on the run's best path, its id, kind, score, status, ``±`` when
the session keeps changes for it (it can be adopted or continued from with them), then its label indented
by its depth.
"""

from __future__ import annotations

from ide.protocol.steer import NodeSummary, RunSummary

BEST_MARK = "*"
CHANGES_MARK = "±"


def run_line(run: RunSummary, nodes: int | None = None) -> str:
    """One run as a line (``nodes``: its node count, when known)."""
    parts = [run.run_id, run.architecture or "?"]
    if nodes is not None:
        parts.append(f"{nodes} node{'s' * (nodes != 1)}")
    parts.append("finished" if run.finished else "unfinished")
    if run.forked_from is not None:
        parts.append(f"from {run.forked_from.run_id}:{run.forked_from.node_id}")
    return "  ".join(parts) + (f"  {run.label}" if run.label else "")


def node_lines(nodes: list[NodeSummary]) -> list[str]:
    """A run's nodes, one line each, parents before children in the order they were added."""
    depth: dict[str, int] = {}
    lines = []
    width = max((len(node.id) for node in nodes), default=2)
    for node in nodes:
        depth[node.id] = depth[node.parent] + 1 if node.parent in depth else 0
        score = f"{node.score:.2f}" if node.score is not None else "-"
        lines.append(
            f"{BEST_MARK if node.best else ' '} {node.id:<{width}}  {node.kind:<10}  {score:>5}  "
            f"{node.status:<16}  {CHANGES_MARK if node.changes else ' '}  {'  ' * depth[node.id]}{node.label}"
        )
    return lines


def run_listing(session_id: str, runs: list[tuple[RunSummary, int]]) -> list[str]:
    """What ``arbor tree list`` prints for a session: a header, then each run (oldest first) with its
    number of nodes."""
    lines = [f"session {session_id}: {len(runs)} run{'s' * (len(runs) != 1)}"]
    lines += [run_line(run, nodes) for run, nodes in runs]
    return lines


def node_listing(session_id: str, run: RunSummary) -> list[str]:
    """What ``arbor tree list RUN`` prints: the run's line, a legend, then its nodes."""
    return [
        f"session {session_id}",
        run_line(run, len(run.nodes)),
        f"{BEST_MARK}: on the best path; {CHANGES_MARK}: its changes are kept "
        "(arbor run --from RUN:NODE continues from them)",
        *node_lines(run.nodes),
    ]
