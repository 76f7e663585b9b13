"""The change-set review: ``_arbor/review/*`` for Arbor's window and ``arbor run``, and the one question
a plain ACP client is asked at the end of a turn that edited files."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError, tool_diff_content
from acp.schema import PermissionOption

from ide.backend.extensions import Handler, Hooks
from ide.backend.limits import DIFF_INLINE_CAP
from ide.backend.permissions import ask_client
from ide.protocol import review as rv

if TYPE_CHECKING:
    from ide.backend.extensions import Backend, SessionApi
    from ide.memory.store import MemoryStore

log = logging.getLogger(__name__)


def _summary(backend: Backend) -> bool:
    """The client asks for change sets as summaries and fetches the hunks left out (``rv.HUNKS``)."""
    return backend.client_wants(rv.SUMMARY_CAPABILITY)


async def changeset(backend: Backend, request: rv.ChangeSetParams) -> rv.ChangeSetView:
    return backend.session(request.session_id).review.view(summary=_summary(backend))


async def hunks(backend: Backend, request: rv.HunksParams) -> rv.HunksResult:
    return rv.HunksResult(files=backend.session(request.session_id).review.hunks(request.paths))


async def decide(backend: Backend, request: rv.DecideParams) -> rv.ChangeSetView:
    session = backend.session(request.session_id)
    view = session.review.decide(request, summary=_summary(backend))
    await session.save_review()
    return view


async def apply(backend: Backend, request: rv.ApplyParams) -> rv.ApplyResult:
    session = backend.session(request.session_id)
    if session.running:
        raise RequestError.invalid_request({"message": "wait for the turn to end before applying"})
    rejected = _rejected(session)
    shadow = session.shadow
    if shadow is not None and shadow.git is not None:
        # Never commit on top of a HEAD, config or hook an agent's turn moved (ide.changes.gitstate).
        await asyncio.to_thread(shadow.git.check_apply)
    if shadow is not None:
        # A foreign agent's shadow drops the rejected hunks now (Apply forgets them, and a capture before
        # the next turn would bring them back as pending) and takes what Apply wrote as its baseline after.
        await asyncio.to_thread(shadow.settle, session.review)
    result = await asyncio.to_thread(session.review.apply, request.message, summary=_summary(backend))
    if shadow is not None:
        await asyncio.to_thread(shadow.settle, session.review)
        if shadow.git is not None and result.batch is not None:
            await asyncio.to_thread(shadow.git.applied)
    elif result.batch is not None:
        # What Apply wrote is on disk now: the agent reads it from there (a later edit or Roll back too).
        session.changeset.forget_bases(result.batch.paths)
    await session.save_review()
    await _unlearn(session.memory, session.id, rejected)
    return result


async def rollback(backend: Backend, request: rv.RollbackParams) -> rv.RollbackResult:
    from ide.changes import rollback_batch

    cwd, settings = backend.workspace(request.cwd)
    batches = backend.services.batches(cwd, settings)
    result = await asyncio.to_thread(rollback_batch, Path(cwd), batches, request.batch_id)
    await _after_rollback(backend, cwd, result.batch.paths)
    memory = await backend.services.memory(cwd, settings)
    await _unlearn(memory, result.batch.session_id, result.batch.paths)
    return result


async def _after_rollback(backend: Backend, cwd: str, paths: list[str]) -> None:
    """The workspace's sessions of Arbor's agent read the rolled-back files from disk again: a recorded base
    is dropped, a pending edit's base follows the disk (ide.changes.refresh). A session whose turn is running
    catches up when its next turn starts; a foreign agent's shadow takes the disk in at its own."""
    from ide.changes.refresh import refresh_review

    for session in backend.sessions_in(cwd):
        if session.shadow is not None or session.running:
            continue
        session.changeset.forget_bases(paths)
        await asyncio.to_thread(refresh_review, session.review, paths)
        await session.save_review()


def _rejected(session: SessionApi) -> list[str]:
    from ide.memory.learn import rejected_paths

    files = session.review.view().files
    return rejected_paths((f.path, [h.decision for h in f.hunks]) for f in files)


async def _unlearn(memory: MemoryStore | None, session_id: str, paths: list[str]) -> None:
    """Rejected or rolled-back changes were no successful investigation: the memory forgets it."""
    if memory is None or not paths:
        return
    from ide.memory.learn import unlearn_changes

    try:
        await asyncio.to_thread(unlearn_changes, memory, session_id=session_id, paths=paths)
    except Exception:  # the memory must never fail a review
        log.exception("the memory could not forget the rejected changes")


async def history(backend: Backend, request: rv.HistoryParams) -> rv.HistoryResult:
    cwd, settings = backend.workspace(request.cwd)
    batches = backend.services.batches(cwd, settings).history(cwd, limit=request.limit)
    return rv.HistoryResult(batches=batches)


async def keep_pending(backend: Backend, session: SessionApi) -> None:
    """After a cancelled turn: nothing is asked and nothing written; the change set stays pending (in
    Arbor's Review dock; a plain client is offered it at the end of its next turn)."""
    if session.changeset.changed_paths() and backend.client_wants("review"):
        view = session.review.view(summary=_summary(backend))
        await backend.conn.ext_notification(rv.CHANGESET_NOTIFICATION, view.model_dump(mode="json"))


async def offer_review(backend: Backend, session: SessionApi) -> None:
    """At the end of a turn that edited files: hand the batch to the client for review.

    Arbor's window (and `arbor run`) get the hunks in ``_arbor/changeset``. Any other client is asked
    once, with the diffs, whether to apply the batch; yes writes through ``fs/write_text_file`` when
    the client offers it, else through our own apply (checkpoint, atomic writes, commit). Meta files
    (Arbor's settings, git attributes, CI, hooks) are asked about on their own, with why they matter.
    """
    if not session.changeset.changed_paths():
        return
    if backend.client_wants("review"):
        view = session.review.view(summary=_summary(backend))
        await backend.conn.ext_notification(rv.CHANGESET_NOTIFICATION, view.model_dump(mode="json"))
        return
    view = session.review.view()
    plain = [f for f in view.files if f.meta is None]
    meta = [f for f in view.files if f.meta is not None]
    for files in (plain, meta):
        if files and not await _ask_to_apply(backend, session, files, meta=files is meta):
            return


async def _ask_to_apply(
    backend: Backend, session: SessionApi, files: list[rv.FileChangeView], *, meta: bool
) -> bool:
    """Ask a plain ACP client whether to apply ``files``; False when it cannot be asked."""
    diffs = []
    for file in files:
        old, new = session.changeset.diff_texts(file.path)
        if len(old or "") + len(new or "") <= DIFF_INLINE_CAP:
            diffs.append(tool_diff_content(str(Path(session.cwd) / file.path), new or "", old))
    added = sum(f.additions for f in files)
    removed = sum(f.deletions for f in files)
    title = f"Apply changes to {len(files)} file(s) (+{added} −{removed})?"
    if meta:
        why = "; ".join(f"{f.path}: {f.meta}" for f in files)
        title = f"Also apply the agent's edits to files that change what runs? {why}"
    options = [
        PermissionOption(option_id="apply", name="Apply these changes", kind="allow_once"),
        PermissionOption(option_id="discard", name="Discard them", kind="reject_once"),
    ]
    try:
        choice = await ask_client(
            backend.conn, session.id, "arbor-review", title, "edit", options, content=diffs
        )
    except RequestError as exc:
        # A client that cannot be asked keeps the batch pending: nothing written, nothing lost.
        log.info("client cannot review the change set (%s); it stays pending", exc)
        return False
    if choice is None or session.cancel_requested:
        # The client cancelled the question (ACP clients answer "cancelled" once the user stops the
        # turn): nothing is decided, the batch stays pending for the next turn or the Review dock.
        log.info("the review question was cancelled; the change set stays pending")
        return False
    approved = choice == "apply"
    fs = backend.client_fs()
    plain_writes = all(f.status in ("added", "modified") and not f.binary for f in files)
    if approved and fs is not None and fs.write_text_file and plain_writes:
        for file in files:
            _old, new = session.changeset.diff_texts(file.path)
            await backend.conn.write_text_file(
                session_id=session.id, path=str(Path(session.cwd) / file.path), content=new or ""
            )
        approved = False  # written by the client: drop the batch from our change set
    decision = "accepted" if approved else "rejected"
    paths = [f.path for f in files]
    session.review.decide(rv.DecideParams(session_id=session.id, decision=decision, paths=paths))
    rejected = _rejected(session)
    await asyncio.to_thread(session.review.apply, None)
    await _unlearn(session.memory, session.id, rejected)
    return True


HANDLERS = (
    Handler(rv.CHANGESET, changeset),
    Handler(rv.HUNKS, hunks),
    Handler(rv.DECIDE, decide),
    Handler(rv.APPLY, apply),
    Handler(rv.ROLLBACK, rollback),
    Handler(rv.HISTORY, history),
)
NOTIFICATIONS = (rv.CHANGESET_NOTIFICATION,)
HOOKS = Hooks(turn_end=offer_review, cancel=keep_pending)
