"""How one prompt turn runs in a session: the slash commands, the mode (``auto`` asks the orchestrator), the
architecture on a :class:`~ide.search.base.RunContext` with its tree streamed, the branch it chose adopted,
and what the memory learns from it.

Everything the turn says goes through the turn's :class:`~ide.backend.transcript.Transcript`; the answer
to ``session/prompt`` (cancel, the features' hooks, errors) is :mod:`ide.backend.prompt`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp import text_block, update_agent_message, update_agent_thought
from pydantic import BaseModel

from ide.backend.commands import answer_command, parse_command, workflow_mode
from ide.backend.runs import LiveRun
from ide.backend.session import translate_event
from ide.changes.review import commit_subject
from ide.llm import ModelError
from ide.protocol import TurnMeta
from ide.protocol.tree import TreeEvent
from ide.search.base import RunContext
from ide.search.events import TREE_FLUSH_EVENTS, ProgressEvent
from ide.search.tree import TreeRecorder

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ide.backend.runs import ArmedFork
    from ide.backend.session import Session
    from ide.backend.transcript import Transcript
    from ide.search.architectures import Architecture
    from ide.search.steer import Fork

log = logging.getLogger(__name__)

Emit = Callable[[BaseModel], Awaitable[None]]
EmitTree = Callable[[list[TreeEvent]], Awaitable[None]]
TREE_FLUSH_S = 0.1
"""How often a tree search's events go to the client while it runs (they are batched in between)."""


@dataclass
class TurnResult:
    stop_reason: str
    meta: TurnMeta


class TreeBuffer:
    """Collects a run's tree events as the recorder makes them; :meth:`flush` sends them as one batch."""

    def __init__(self, emit_tree: EmitTree) -> None:
        self._emit_tree = emit_tree
        self._pending: list[TreeEvent] = []

    def append(self, event: TreeEvent) -> None:
        self._pending.append(event)

    async def flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            await self._emit_tree(batch)


async def run_turn(session: Session, text: str, transcript: Transcript) -> TurnResult:
    """Run one prompt turn in the session's mode, saying what it does through ``transcript``.

    The slash commands go to the client first (once), then what the session had to tell as thoughts.
    ``auto`` asks the orchestrator model first which mode fits (react, lats, tot, plan or workflow)
    and says what it chose as a thought.
    """
    emit = transcript.emit
    await session.channel.offer_commands()
    for notice in session.take_notices():
        await emit(update_agent_thought(text_block(notice + "\n")))
    armed = session.take_fork()
    if armed is not None:
        return await continue_run(session, armed, text, transcript)
    command = parse_command(text)
    if command is not None:
        answer = await answer_command(session, *command, emit)
        if isinstance(answer, str):
            await emit(update_agent_message(text_block(answer)))
            return TurnResult("end_turn", session.usage_meta())
        return await run_architecture(session, "workflow", answer.task, transcript, None, answer.architecture)
    if session.review.title is None:
        session.review.title = commit_subject(text)
    mode = session.mode
    history: list[BaseMessage] | None = None
    if mode == "auto":
        from ide.search.architectures import choose_architecture

        history = await session.history()
        mode, reason = await choose_architecture(session.router, text, history)
        await emit(update_agent_thought(text_block(f"Auto mode: {mode} — {reason}\n")))
    return await run_architecture(session, mode, text, transcript, history)


async def continue_run(session: Session, armed: ArmedFork, hint: str, transcript: Transcript) -> TurnResult:
    """A turn that continues from a node of an earlier run (``_arbor/tree/fork`` armed it): the session's
    pending change set becomes a copy of the node's branch, and the armed mode runs the origin run's task with
    the :class:`~ide.search.steer.Fork` (the node's trajectory, a copy of its branch, ``hint``) in its
    RunContext. When the run continued was itself a continuation, the Fork carries the chain before it
    (:meth:`~ide.backend.runs.RunBook.chain`: each earlier run's node and hint, as far back as the session
    knows them). The run records where it came from on its first event; its result goes to review as
    usual."""
    from ide.search.steer import Fork

    emit = transcript.emit
    kept = None if armed.given else await session.book.kept(armed.run_id)
    branch = kept.branch_of(armed.tree, armed.node_id) if kept is not None else None
    if branch is not None:
        session.use_changes(branch)
    if session.review.title is None:
        session.review.title = commit_subject(armed.task)
    # A continuation of a continuation goes on with the whole chain: the earlier runs' steps and hints.
    links = [] if armed.given else await session.book.chain(armed.run_id)
    fork = Fork(
        armed.tree,
        armed.node_id,
        hint,
        branch.child() if branch is not None else None,
        notes=dict(kept.notes) if kept is not None else {},
        # Copies under the recorded ids: the continuation never edits a recorded branch.
        branches={ident: kept.branches[ident].child() for ident in kept.branches} if kept is not None else {},
        earlier=[Fork(link.tree, link.node_id, link.hint) for link in links],
    )
    mode = armed.mode
    if mode == "auto":
        from ide.search.architectures import choose_architecture

        mode, reason = await choose_architecture(session.router, f"{armed.task}\n\n{hint}", [])
        await emit(update_agent_thought(text_block(f"Auto mode: {mode} — {reason}\n")))
    node = armed.tree.nodes[armed.node_id]
    said = f"Continuing run {armed.run_id[:8]} from {node.kind} {armed.node_id} ({node.label}) in {mode} mode"
    if links:
        said += f", with the steps and hints of the {len(links)} run(s) it went on from"
    if branch is None:
        said += "; the node's changes are not known, so the session's own stand in"
    await emit(update_agent_thought(text_block(said + "\n")))
    return await run_architecture(session, mode, armed.task, transcript, [], fork=fork, question=hint)


async def _architecture(session: Session, mode: str) -> Architecture:
    if mode == "workflow":
        return workflow_mode(session)
    from ide.search.architectures import load_architecture

    return load_architecture(mode)


async def run_architecture(
    session: Session,
    mode: str,
    text: str,
    transcript: Transcript,
    history: list[BaseMessage] | None = None,
    architecture: Architecture | None = None,
    *,
    fork: Fork | None = None,
    question: str | None = None,
) -> TurnResult:
    """Run ``text`` with the architecture of ``mode`` on a RunContext; adopt the branch it chose.

    With ``fork`` the run continues from a node of an earlier run (``text`` is that run's task, ``question``
    what the user asked now: the hint). The run's branches and the state it kept after its nodes stay with
    the session (``ide.backend.runs``), in memory and in the session store.

    Its tree events go to the client after every model step and tool call, every TREE_FLUSH_S while
    it runs, and when it ends — whether it finishes, fails or is cancelled (the tree is then closed
    with the best result so far, and a cancelled search's best branch goes up for review).
    """
    emit = transcript.emit
    for said in (await asyncio.to_thread(session.catch_up)).values():
        await emit(update_agent_thought(text_block(said + "\n")))
    architecture = architecture or await _architecture(session, mode)
    keeps_conversation = getattr(architecture, "keeps_conversation", False)
    buffer = TreeBuffer(transcript.emit_tree)
    recorder = TreeRecorder(
        architecture=mode, emit=buffer.append, forked_from=fork.origin if fork is not None else None
    )
    flush_tree = buffer.flush

    async def ticker() -> None:
        while True:
            await asyncio.sleep(TREE_FLUSH_S)
            await flush_tree()

    async def progress(event: ProgressEvent) -> None:
        update = translate_event(event)
        if update is not None:
            await emit(update)
        if event["type"] in TREE_FLUSH_EVENTS:
            await flush_tree()

    if history is None and not keeps_conversation:
        history = await session.history()
    ctx = RunContext(
        task=text,
        settings=session.settings,
        router=session.router,
        changeset=session.changeset,
        recorder=recorder,
        progress=progress,
        session_id=session.id,
        checkpointer=session.checkpointer,
        thread_id=session.id,
        history=history or [],
        services=session.tool_services(),
        ask_permission=session.ask_permission,
        observation_cap=await session.observation_cap(),
        fork=fork,
    )
    recorder.keep_start(ctx.changeset, ctx.branches)
    session.book.hold(recorder, ctx.branches)
    session.book.live = LiveRun(recorder.run_id, mode, ctx.steering, recorder.tree)
    flusher = asyncio.create_task(ticker())
    try:
        outcome = await architecture.run(ctx)
    except BaseException as exc:
        if not recorder.tree.finished and recorder.tree.root is not None:
            close_failed_tree(ctx, exc)
        if isinstance(exc, asyncio.CancelledError):
            _adopt_best_so_far(session, ctx)
        raise
    finally:
        session.book.live = None
        flusher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flusher
        await flush_tree()
        await session.book.save(recorder, ctx.branches)
    if outcome.changeset is not None and outcome.changeset is not session.changeset:
        session.changeset.adopt(outcome.changeset)
    if outcome.answer and not outcome.answered:
        await emit(update_agent_message(text_block(outcome.answer)))
    if not recorder.tree.finished and recorder.tree.root is not None:
        ctx.finish_tree(outcome.stop_reason)
        await flush_tree()
    if not keeps_conversation or fork is not None:
        await session.add_exchange(question or text, outcome.answer)
    if session.checkpointer is not None:
        from ide.backend.services import prune_checkpoints

        await prune_checkpoints(session.checkpointer, [session.id, f"{session.id}:plan"])
    figures = outcome.figures or recorder.tree.figures
    await learn(session, text, outcome.answer, recorder.tree, outcome.stop_reason, mode)
    steps = figures.get("steps") if keeps_conversation else None
    return TurnResult(
        outcome.stop_reason,
        TurnMeta(
            usage=session.router.usage_snapshot(),
            steps=int(steps or figures.get("iterations") or figures.get("model_calls") or 0),
            architecture=mode,
            figures=figures,
        ),
    )


async def learn(
    session: Session, task: str, answer: str, tree: Any, stop_reason: str, architecture: str
) -> None:
    """Let the memory learn from a finished turn (never fails the turn)."""
    if session.memory is None:
        return
    from ide.memory.learn import learn_from_run

    try:
        await asyncio.to_thread(
            learn_from_run,
            session.memory,
            task=task,
            answer=answer,
            tree=tree,
            stop_reason=stop_reason,
            changed=session.changeset.changed_paths(),
            architecture=architecture,
            session_id=session.id,
        )
    except Exception:
        log.exception("the memory could not learn from this turn")


async def learn_error(session: Session, task: str, error: str) -> None:
    """Record a failed turn in the memory's errors (for debugging; never raises)."""
    if session.memory is None:
        return
    from ide.memory.learn import learn_from_error

    try:
        await asyncio.to_thread(
            learn_from_error, session.memory, task=task, error=error, session_id=session.id
        )
    except Exception:
        log.exception("the memory could not record this error")


def _adopt_best_so_far(session: Session, ctx: RunContext) -> None:
    """After a cancelled search: the best branch so far (the tree's best path) goes up for review."""
    best = ctx.recorder.tree.best_path
    node = ctx.recorder.tree.nodes.get(best[-1]) if best else None
    branch = ctx.branches.get(node.changeset_id) if node and node.changeset_id else None
    if branch is not None and branch is not session.changeset and branch.changed_paths():
        session.changeset.adopt(branch)


def failure_reason(exc: BaseException) -> str:
    """What a failed turn's tree says about why: a model error's message and fix, else the exception."""
    if isinstance(exc, ModelError):
        return exc.info.text()
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def close_failed_tree(ctx: RunContext, exc: BaseException) -> None:
    """Close the tree of a run that raised: ``cancelled`` or ``error``, never a node left ``active``.

    A failed run's active nodes become ``failed`` and its reason is the root's observation and the
    figures' ``error``; a cancelled run's active nodes become ``terminated_early``.
    """
    cancelled = isinstance(exc, asyncio.CancelledError)
    recorder = ctx.recorder
    with recorder.lock:
        tree = recorder.tree
        ended = "terminated_early" if cancelled else "failed"
        for node in list(tree.nodes.values()):
            if node.status == "active":
                recorder.update(node.id, status=ended)
        if cancelled:
            ctx.finish_tree("cancelled")
            return
        reason = failure_reason(exc)
        root = tree.root
        if root is not None:
            said = tree.nodes[root].observation
            recorder.update(root, observation=f"{said}\n\nFailed: {reason}" if said else f"Failed: {reason}")
        # The reason first, so the tree dock's one-line summary of the run shows it.
        recorder.finish(**{"stop_reason": "error", "error": reason, **ctx.figures()})
