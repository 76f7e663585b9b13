"""Review for any ACP agent: another agent's file reads and writes, forwarded by Arbor's window, go through a
change set held here, and its session id works with every ``_arbor/review/*`` method.

A session opened with ``_arbor/external/shadow`` holds a shadow workspace instead (ide.changes.shadow):
the agent works there with whatever tools it has, its ``fs/*`` is served from there, and each capture
diffs the shadow into the session's change set, so the review sees writes no ``fs/*`` call announced."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler
from ide.protocol import foreign as ex
from ide.protocol.review import SUMMARY_CAPABILITY, ChangeSetView

if TYPE_CHECKING:
    from ide.backend.extensions import Backend, SessionApi
    from ide.changes.shadow import Shadow
    from ide.tools import Workspace


async def open_session(backend: Backend, request: ex.ForeignOpenParams) -> ex.ForeignSession:
    session = await _open(backend, request.cwd, request.agent)
    return ex.ForeignSession(session_id=session.id)


async def _open(backend: Backend, cwd: str, agent: str | None, shadow: Shadow | None = None) -> SessionApi:
    """A review session for ``agent``'s changes (in ``shadow``, when it works in one)."""
    cwd, settings = backend.workspace(cwd)
    agent = agent or "another agent"
    title = _untitled(agent)
    session = await backend.open_session(cwd, settings, title, shadow=shadow)
    # Until a prompt is known (turn_start): the commit's subject is never a command line.
    session.review.title = title
    session.review.agent = agent
    return session


def _untitled(agent: str) -> str:
    """A review's title before its first prompt is known."""
    return f"Edits by {agent}"


async def write(backend: Backend, request: ex.ForeignWriteParams) -> ChangeSetView:
    """Put a file's new text into the change set (nothing is written to disk before Apply)."""
    session = backend.session(request.session_id)
    summary = backend.client_wants(SUMMARY_CAPABILITY)
    if session.shadow is not None:
        return await asyncio.to_thread(_shadow_write, session, request.path, request.content, summary)
    files = _confined(session)
    path = _resolve(files, request.path)
    rel = files.relative(path)
    await asyncio.to_thread(_write, files, session, path, rel, request.content)
    return session.review.view(summary=summary)


def _write(files: Workspace, session: SessionApi, path: Path, rel: str, content: str) -> None:
    """Refuse, with the reason, what Apply could never write or the user does not see in review: the
    root, a directory, a path below a file, an ignored path, a name that looks like another."""
    from ide.changes import ChangeError
    from ide.tools import ToolError

    try:
        _check_listed(files, path)
        files.check_new_name(path)
        session.changeset.write_bytes(rel, content.encode("utf-8"))
    except (ToolError, ChangeError) as exc:
        raise RequestError.invalid_params({"path": str(path), "message": str(exc)}) from None


def _check_listed(files: Workspace, path: Path) -> None:
    """Refuse a path gitignored or in ``workspace.exclude``: the file tree and Arbor's own tools hide it,
    so another agent must neither read it (build output, local config) nor slip edits in there."""
    from ide.tools import ToolError

    if path != files.root and files.is_ignored(path):
        raise ToolError(
            f"{files.relative(path)} is excluded from the workspace (.gitignore or workspace.exclude); "
            "Arbor neither reads nor writes it for another agent — to let the agent use it, remove it "
            "from .gitignore (or workspace.exclude)"
        )


async def read(backend: Backend, request: ex.ForeignReadParams) -> ex.ForeignText:
    """A file as the change set leaves it (the agent sees its own pending edits), or some of its lines."""
    session = backend.session(request.session_id)
    if session.shadow is not None:
        text = await asyncio.to_thread(_shadow_read, session.shadow, request.path)
    else:
        files = _confined(session)
        text = await asyncio.to_thread(_read, files, _resolve(files, request.path))
    if request.line is not None or request.limit is not None:
        lines = text.splitlines(keepends=True)
        start = (request.line or 1) - 1
        end = start + request.limit if request.limit is not None else None
        text = "".join(lines[start:end])
    return ex.ForeignText(content=text)


def _read(files: Workspace, path: Path) -> str:
    from ide.tools import ToolError

    if not files.exists(path):
        return MISSING
    if files.is_dir(path):
        said = f"{path} is a directory, not a file"
        raise RequestError.invalid_params({"path": str(path), "message": said})
    try:
        _check_listed(files, path)
        return files.read_text(path)
    except ToolError as exc:
        raise RequestError.invalid_params({"path": str(path), "message": str(exc)}) from None


def _confined(session: SessionApi) -> Workspace:
    from ide.tools import Workspace

    return Workspace(Path(session.cwd), session.settings.workspace, session.changeset)


def _resolve(files: Workspace, path: str) -> Path:
    """``path`` inside the workspace, not a secret, not git's metadata — or a clear refusal."""
    from ide.tools import ToolError

    if not Path(path).is_absolute():
        raise RequestError.invalid_params(
            {"path": path, "message": f"the path must be absolute, got {path!r}"}
        )
    try:
        return files.resolve(path)
    except ToolError as exc:
        raise RequestError.invalid_params({"path": path, "message": str(exc)}) from None


async def open_shadow(backend: Backend, request: ex.ForeignShadowParams) -> ex.ForeignShadow:
    """A review session over a new shadow of the workspace: the agent's cwd (ChangeError: not in git)."""
    from ide.changes.shadow import Shadow
    from ide.tools import Workspace

    cwd, settings = backend.workspace(request.cwd)
    files = Workspace(Path(cwd), settings.workspace)

    shadow = await asyncio.to_thread(
        Shadow.create, Path(cwd), max_file_bytes=settings.workspace.max_file_bytes, secret=files.is_secret_rel
    )
    try:
        opened = await _open(backend, cwd, request.agent, shadow)
    except BaseException:
        await asyncio.to_thread(shadow.close)
        raise
    return ex.ForeignShadow(session_id=opened.id, cwd=str(shadow.root), notes=shadow.notes)


async def capture(backend: Backend, request: ex.ForeignCaptureParams) -> ex.ForeignCapture:
    """Diff the shadow into the session's review (after a tool call, at a turn's end); with ``workspace``
    also scan the workspace itself for what changed there meanwhile."""
    session = backend.session(request.session_id)
    shadow = _shadow(session)
    found = await asyncio.to_thread(shadow.fill, session.changeset)
    changed: list[str] = []
    git_changed: list[str] = []
    if request.workspace:
        changed = await asyncio.to_thread(shadow.workspace_changes, session.changeset)
        if shadow.git is not None:
            moved = await asyncio.to_thread(shadow.git.turn_ended)
            git_changed = [change.describe() for change in moved]
    summary = backend.client_wants(SUMMARY_CAPABILITY)
    return ex.ForeignCapture(
        changeset=session.review.view(summary=summary),
        skipped=found.skipped,
        workspace_changed=changed,
        git_changed=git_changed,
    )


async def turn_start(backend: Backend, request: ex.ForeignTurnStartParams) -> ex.ForeignCapture:
    """Before each of the agent's turns: rejected hunks reverted and applied files taken as the baseline in
    the shadow, then the user's edits since taken in; the review is captured again. The session's first
    prompt becomes the commit's subject."""
    from ide.changes.review import commit_subject

    session = backend.session(request.session_id)
    shadow = _shadow(session)
    if session.review.title == _untitled(session.review.agent or "") and commit_subject(request.prompt):
        session.review.title = commit_subject(request.prompt)

    def prepare() -> tuple[list[str], dict[str, str]]:
        shadow.settle(session.review)
        conflicts = shadow.take_in()
        if shadow.git is not None:
            shadow.git.turn_started()
        return conflicts, shadow.fill(session.changeset).skipped

    conflicts, skipped = await asyncio.to_thread(prepare)
    view = session.review.view(summary=backend.client_wants(SUMMARY_CAPABILITY))
    return ex.ForeignCapture(changeset=view, skipped=skipped, conflicts=conflicts)


async def close(backend: Backend, request: ex.ForeignSessionParams) -> ex.ForeignClosed:
    """Remove the session's shadow; its review (what was captured) stays."""
    shadow = backend.session(request.session_id).drop_shadow()
    if shadow is not None:
        await asyncio.to_thread(shadow.close)
    return ex.ForeignClosed(removed=shadow is not None)


def _shadow(session: SessionApi) -> Shadow:
    if session.shadow is None:
        raise RequestError.invalid_params(
            {"sessionId": session.id, "message": "this session has no shadow workspace (open it with shadow)"}
        )
    return session.shadow


def _shadow_rel(shadow: Shadow, path: str) -> str:
    """``path`` as a path inside the shadow, checked by its text (a link is refused when it is read or
    written): absolute, below the shadow, not git's metadata."""
    if not os.path.isabs(path):
        raise RequestError.invalid_params(
            {"path": path, "message": f"the path must be absolute, got {path!r}"}
        )
    normal = os.path.normpath(path)
    root = str(shadow.root)
    if not normal.startswith(root + os.sep):
        raise RequestError.invalid_params(
            {"path": path, "message": f"{path} is outside the agent's workspace {root}"}
        )
    rel = Path(normal[len(root) + 1 :]).as_posix()
    if ".git" in rel.split("/"):
        raise RequestError.invalid_params({"path": path, "message": f"{path} is git's metadata"})
    return rel


def _shadow_write(session: SessionApi, path: str, content: str, summary: bool) -> ChangeSetView:
    from ide.changes import ChangeError
    from ide.changes.overlay import Base

    shadow = _shadow(session)
    rel = _shadow_rel(shadow, path)
    try:
        mode = shadow.read(rel).mode
        shadow.put(rel, Base(content.encode("utf-8"), mode))
        shadow.fill(session.changeset)
    except (ChangeError, OSError) as exc:
        raise RequestError.invalid_params({"path": path, "message": str(exc)}) from None
    return session.review.view(summary=summary)


def _shadow_read(shadow: Shadow, path: str) -> str:
    from ide.changes import ChangeError
    from ide.changes.overlay import decode

    rel = _shadow_rel(shadow, path)
    try:
        data = shadow.read(rel).data
    except (ChangeError, OSError) as exc:
        raise RequestError.invalid_params({"path": path, "message": str(exc)}) from None
    if data is None:
        return MISSING
    return decode(data)[0]


MISSING = ""
"""What ``fs/read_text_file`` of a file not there answers (inside the workspace, allowed): empty text, as
Zed answers it (a new buffer). An error cannot say "missing" to every agent: Gemini CLI 0.61 reads a new
file before writing it, and its bundled ACP SDK (0.16.1) hands a client's error over as a plain object
whose text it cannot read, so no code or wording lets it go on (docs/traps.md)."""


HANDLERS = (
    Handler(ex.FOREIGN_OPEN, open_session),
    Handler(ex.FOREIGN_WRITE, write),
    Handler(ex.FOREIGN_READ, read),
    Handler(ex.FOREIGN_SHADOW, open_shadow),
    Handler(ex.FOREIGN_CAPTURE, capture),
    Handler(ex.FOREIGN_TURN_START, turn_start),
    Handler(ex.FOREIGN_CLOSE, close),
)
