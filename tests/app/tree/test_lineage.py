"""The session's runs as one tree of attempts (a continued run under its origin, saying from where), and
what the user may ask of a node: each action enabled, or disabled with the reason its tooltip shows."""

from __future__ import annotations

from typing import Any

from ide.app.tree.lineage import (
    Backend,
    node_offers,
    origin_key,
    origin_text,
    run_rows,
    titles,
)
from ide.protocol.tree import ForkOrigin, SearchTree, TreeEvent, TreeNode

READY = Backend(fork=True, adopt=True, steer=True, ready=True, running=True)


def run(
    run_id: str,
    architecture: str,
    nodes: list[tuple[str, str | None, dict[str, Any]]],
    *,
    origin: tuple[str, str] | None = None,
    finished: bool = False,
) -> SearchTree:
    events = []
    for node_id, parent, fields in nodes:
        seq = len(events) + 1
        events.append(
            TreeEvent(
                run_id=run_id,
                seq=seq,
                kind="node_added",
                node=TreeNode(id=node_id, parent=parent, depth=0 if parent is None else 1, **fields),
                architecture=architecture if seq == 1 else None,
                forked_from=ForkOrigin(run_id=origin[0], node_id=origin[1]) if origin and seq == 1 else None,
            )
        )
    if finished:
        events.append(TreeEvent(run_id=run_id, seq=len(events) + 1, kind="finished"))
    return SearchTree(events)


def lats(run_id: str = "first-run-0001", **kwargs: Any) -> SearchTree:
    return run(
        run_id,
        "lats",
        [
            ("n0", None, {"kind": "root", "label": "fix mean()"}),
            ("n1", "n0", {"kind": "action", "label": "edit stats.py", "changeset_id": "cs-n1"}),
            ("n2", "n0", {"kind": "thought", "label": "read the tests"}),
        ],
        **kwargs,
    )


def test_a_continued_run_is_listed_under_its_origin_saying_from_where() -> None:
    runs = {
        "first-run-0001": lats(finished=True),
        "other-run-0002": lats("other-run-0002", finished=True),
        "again-run-0003": lats("again-run-0003", origin=("first-run-0001", "n1")),
        "third-run-0004": lats("third-run-0004", origin=("again-run-0003", "n2")),
    }
    rows = run_rows(runs, titles(runs, set()))
    assert [(key, depth) for key, depth, _title in rows] == [
        ("first-run-0001", 0),
        ("again-run-0003", 1),
        ("third-run-0004", 2),
        ("other-run-0002", 0),
    ]
    assert rows[0][2] == "run first-run-00"
    assert rows[1][2] == "↳ run again-run-00 · from run first-run-00 · n1"
    assert rows[2][2].startswith("  ↳ run third-run-00 · from run again-run-00 · n2")
    assert origin_key(runs, "again-run-0003") == "first-run-0001"
    assert origin_text(runs, "again-run-0003") == "Continues run first-run-00 from node n1 (edit stats.py)"


def test_a_run_continued_from_a_recording_sits_under_the_file_it_came_from() -> None:
    runs = {
        "sample.arbor-tree.jsonl · first-run-0001": lats(finished=True),
        "again-run-0003": lats("again-run-0003", origin=("first-run-0001", "n1")),
        "lost-run-0005": lats("lost-run-0005", origin=("gone-run-0009", "n3")),
    }
    rows = run_rows(runs, titles(runs, {"sample.arbor-tree.jsonl · first-run-0001"}))
    assert [(key, depth) for key, depth, _title in rows] == [
        ("sample.arbor-tree.jsonl · first-run-0001", 0),
        ("again-run-0003", 1),
        ("lost-run-0005", 0),  # its origin is not shown: a run of its own, still saying from where
    ]
    assert rows[2][2] == "↳ run lost-run-000 · from run gone-run-000 · n3"
    assert origin_text(runs, "lost-run-0005").endswith("(that run is not shown here)")


def test_each_action_says_why_it_is_off() -> None:
    live, done = lats(), lats(finished=True)
    root, edit, thought = (live.nodes[n] for n in ("n0", "n1", "n2"))

    offers = node_offers(live, edit, kind="live", backend=READY)
    assert all(o.enabled for o in (offers.continue_from, offers.adopt, offers.prune, offers.expand))
    assert not offers.origin.enabled

    assert node_offers(live, root, kind="live", backend=READY).prune.tip.startswith(
        "The root cannot be pruned"
    )
    assert node_offers(live, thought, kind="live", backend=READY).adopt.enabled, "the backend knows its state"
    finished = node_offers(done, done.nodes["n1"], kind="live", backend=READY)
    assert not finished.prune.enabled and "has finished" in finished.prune.tip
    assert finished.continue_from.enabled and finished.adopt.enabled

    react = run("react-run", "react", [("a", None, {"kind": "root"}), ("b", "a", {"changeset_id": "cs"})])
    steer = node_offers(react, react.nodes["b"], kind="live", backend=READY).expand
    assert not steer.enabled and steer.tip == "Expand steers a LATS or Tree-of-Thoughts search, not react."

    from_file = node_offers(done, edit, kind="file", backend=READY)
    assert from_file.continue_from.enabled and "its events are sent" in from_file.continue_from.tip
    assert not from_file.adopt.enabled and "opened from a file" in from_file.adopt.tip

    busy = node_offers(
        live, edit, kind="live", backend=Backend(fork=True, adopt=True, steer=True, running=True)
    )
    assert not busy.continue_from.enabled and busy.continue_from.tip == "Wait for the running turn to end."
    assert busy.prune.enabled, "a running search is steered while its turn runs"

    old = node_offers(live, edit, kind="live", backend=Backend(ready=True, running=True))
    assert old.continue_from.tip == "The backend does not offer Continue from here (_arbor/tree/fork)."
    assert old.adopt.tip == "The backend does not offer Use this branch (_arbor/tree/adopt)."
    assert old.prune.tip == "The backend does not steer a running search (_arbor/tree/steer)."
    assert (
        node_offers(live, edit, kind="live", backend=Backend()).continue_from.tip
        == "The backend is not running."
    )

    demo = node_offers(done, edit, kind="file", backend=Backend(), redirected=True).continue_from
    assert demo.enabled and "demo window" in demo.tip
    nothing = node_offers(live, None, kind="live", backend=READY)
    assert (
        not nothing.continue_from.enabled and nothing.continue_from.tip == "Select a node first (click it)."
    )
