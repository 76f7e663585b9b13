"""The search tree: events streamed as ``_arbor/tree``, one branch's changes (``_arbor/tree/branch``), and
steering from the tree (``_arbor/tree/fork``, ``adopt``, ``steer``, ``runs``: ide.protocol.steer).

A session finds any of its runs, live or stored with its history, and the changes a node of one of its last
runs stands for (``ide.backend.runs``), so these work on a session loaded after a restart too."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler
from ide.backend.runs import ArmedFork, RunInfo, node_changes, run_summary
from ide.backend.store import KEPT_RUN_STATES
from ide.protocol import review as rv
from ide.protocol import steer as st
from ide.protocol.modes import MODES
from ide.protocol.review import ChangeSetView
from ide.protocol.tree import BRANCH_DIFF, TREE_NOTIFICATION, BranchDiffParams, SearchTree, TreeError

if TYPE_CHECKING:
    from ide.backend.extensions import Backend, SessionApi

STEERABLE = ("lats", "tot")
"""Architectures whose live search takes a prune or an expand."""


async def branch_diff(backend: Backend, request: BranchDiffParams) -> ChangeSetView:
    """The proposed changes of one search branch, read-only (for the tree view's inspector)."""
    from ide.changes import Review

    session = backend.session(request.session_id)
    branch = session.branch(request.changeset_id)
    if branch is None:
        raise RequestError.invalid_params(
            {
                "message": f"branch {request.changeset_id} is not held by this backend: it keeps the "
                "branches of a live session's last runs only"
            }
        )
    batches = backend.services.batches(session.cwd, session.settings)
    view = Review(branch, session_id=session.id, title="branch", store=batches)
    return await asyncio.to_thread(view.view)


def _refuse(message: str) -> RequestError:
    return RequestError.invalid_params({"message": message})


async def _run(session: SessionApi, run_id: str) -> RunInfo:
    found = next((run for run in await session.runs() if run.tree.run_id == run_id), None)
    if found is None:
        raise _refuse(f"this session has no run {run_id}")
    return found


def _check_node(tree: SearchTree, node_id: str) -> None:
    if node_id not in tree.nodes:
        raise _refuse(f"run {tree.run_id} has no node {node_id}")


def _check_quiet(session: SessionApi) -> None:
    if session.running:
        raise RequestError.invalid_request({"message": "wait for the turn to end"})
    if session.shadow is not None:
        raise _refuse("this session reviews another agent's work: it has no runs of Arbor's to steer")


def _decisions(session: SessionApi) -> int:
    """Hunks of the pending review the user has accepted or rejected."""
    return sum(1 for f in session.review.view().files for h in f.hunks if h.decision != "pending")


def _given_tree(request: st.ForkParams) -> SearchTree:
    tree = SearchTree()
    try:
        for event in request.events:
            if event.run_id == request.run_id:
                tree.apply(event)
    except TreeError as exc:
        raise _refuse(f"the run's events do not replay: {exc}") from None
    if tree.root is None:
        raise _refuse(f"the events hold no run {request.run_id}")
    return tree


async def fork(backend: Backend, request: st.ForkParams) -> st.ForkResult:
    """Arm the session's next prompt to continue from a node; say what the continuation will not have."""
    session = backend.session(request.session_id)
    _check_quiet(session)
    if request.events:
        tree = _given_tree(request)
        root = tree.nodes[tree.root or ""]
        task, kept = root.thought or root.label, None
    else:
        run = await _run(session, request.run_id)
        tree, task = run.tree, run.task
        kept = await session.kept(request.run_id)
    _check_node(tree, request.node_id)
    mode = request.mode or tree.architecture or session.mode
    if mode not in MODES:
        raise _refuse(f"there is no mode {mode!r}; modes: {', '.join(MODES)}")
    branch = kept.branch_of(tree, request.node_id) if kept is not None else None
    notes: list[str] = []
    if request.events:
        notes.append(
            "The run came from a file: its changes are not known, so it goes on from the session's own."
        )
    elif branch is None:
        notes.append(
            "This node's changes are not kept any more (a session keeps the branches of its last "
            f"{KEPT_RUN_STATES} runs), so it goes on from the session's pending changes."
        )
    else:
        decisions = _decisions(session)
        pending = session.changeset.changed_paths()
        if decisions:
            notes.append(
                f"The pending review's {decisions} decision(s) will be replaced: the continuation starts "
                "from this node's changes, and its result goes to review."
            )
        elif pending and session.changeset.state_key() != branch.state_key():
            notes.append(
                f"The pending changes to {len(pending)} file(s) are set aside: the continuation starts from "
                "this node's changes, and its result goes to review."
            )
    if mode == "workflow":
        from ide.workflows.fork import stage_start

        start = stage_start(tree, request.node_id, kept.notes if kept is not None else {})
        if start is None:
            notes.append(
                "The workflow stage of this node is not known: the workflow starts from its beginning, with "
                "the node's trajectory and your hint as context."
            )
    session.arm_fork(ArmedFork(request.run_id, request.node_id, mode, tree, task, given=bool(request.events)))
    return st.ForkResult(
        run_id=request.run_id,
        node_id=request.node_id,
        mode=mode,
        path=tree.path_to(request.node_id),
        files=branch.changed_paths() if branch is not None else [],
        note=" ".join(notes),
    )


async def adopt(backend: Backend, request: st.AdoptParams) -> st.AdoptResult:
    """Make a node's branch the pending change set (Use this branch): with decisions pending, only when
    ``replace`` says the user confirmed."""
    session = backend.session(request.session_id)
    _check_quiet(session)
    run = await _run(session, request.run_id)
    _check_node(run.tree, request.node_id)
    kept = await session.kept(request.run_id)
    branch = kept.branch_of(run.tree, request.node_id) if kept is not None else None
    if branch is None:
        raise _refuse(
            f"the changes of node {request.node_id} are not kept any more (a session keeps the branches "
            f"of its last {KEPT_RUN_STATES} runs)"
        )
    decisions = _decisions(session)
    if decisions and not request.replace:
        return st.AdoptResult(adopted=False, decisions=decisions)
    session.use_changes(branch)
    await session.save_review()
    view = session.review.view(summary=backend.client_wants(rv.SUMMARY_CAPABILITY))
    return st.AdoptResult(adopted=True, decisions=decisions, changeset=view)


async def steer(backend: Backend, request: st.SteerParams) -> st.SteerResult:
    """Hand a prune or an expand to the running search; the search records it when it applies it."""
    session = backend.session(request.session_id)
    live = session.live_run
    short = request.run_id[:8]
    if live is None or live.run_id != request.run_id:
        return st.SteerResult(
            accepted=False,
            message=f"Run {short} is not running: only a live search can be pruned or expanded.",
        )
    if live.architecture not in STEERABLE:
        return st.SteerResult(
            accepted=False,
            message=f"Run {short} is a {live.architecture} run: only a LATS or Tree-of-Thoughts search "
            "can be pruned or expanded.",
        )
    if request.node_id not in live.tree.nodes:
        return st.SteerResult(accepted=False, message=f"Run {short} has no node {request.node_id}.")
    live.steering.ask(request.node_id, request.action)
    return st.SteerResult(accepted=True)


async def runs(backend: Backend, request: st.RunsParams) -> st.RunsResult:
    """The session's runs, oldest first, or one run with its nodes."""
    session = backend.session(request.session_id)
    if request.run_id is None:
        return st.RunsResult(runs=[run_summary(run.tree) for run in await session.runs()])
    run = await _run(session, request.run_id)
    kept = await session.kept(request.run_id)
    changes = await asyncio.to_thread(node_changes, run.tree, kept)
    return st.RunsResult(runs=[run_summary(run.tree, changes)])


HANDLERS = (
    Handler(BRANCH_DIFF, branch_diff),
    Handler(st.FORK, fork),
    Handler(st.ADOPT, adopt),
    Handler(st.STEER, steer),
    Handler(st.RUNS, runs),
)
NOTIFICATIONS = (TREE_NOTIFICATION,)
