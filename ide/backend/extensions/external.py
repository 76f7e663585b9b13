"""Review for any ACP agent: another agent's file reads and writes, forwarded by Arbor's window, go through a
change set held here, and its session id works with every ``_arbor/review/*`` method."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler
from ide.protocol import external as ex
from ide.protocol.review import ChangeSetView

if TYPE_CHECKING:
    from ide.backend.extensions import Backend
    from ide.backend.session import Session
    from ide.tools import Workspace


async def open_session(backend: Backend, request: ex.ExternalOpenParams) -> ex.ExternalSession:
    cwd, settings = backend.workspace(request.cwd)
    title = f"Edits by {request.agent}" if request.agent else "Edits by another agent"
    session = await backend.open_session(cwd, settings, title)
    session.review.title = title
    return ex.ExternalSession(session_id=session.id)


async def write(backend: Backend, request: ex.ExternalWriteParams) -> ChangeSetView:
    """Put a file's new text into the change set (nothing is written to disk before Apply)."""
    session = backend.session(request.session_id)
    files = _confined(session)
    path = _resolve(files, request.path)
    rel = files.relative(path)
    await asyncio.to_thread(_write, files, session, path, rel, request.content)
    return session.review.view()


def _write(files: Workspace, session: Session, path: Path, rel: str, content: str) -> None:
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


async def read(backend: Backend, request: ex.ExternalReadParams) -> ex.ExternalText:
    """A file as the change set leaves it (the agent sees its own pending edits), or some of its lines."""
    files = _confined(backend.session(request.session_id))
    path = _resolve(files, request.path)
    text = await asyncio.to_thread(_read, files, path)
    if request.line is not None or request.limit is not None:
        lines = text.splitlines(keepends=True)
        start = (request.line or 1) - 1
        end = start + request.limit if request.limit is not None else None
        text = "".join(lines[start:end])
    return ex.ExternalText(content=text)


def _read(files: Workspace, path: Path) -> str:
    from ide.tools import ToolError

    if not files.exists(path) or files.is_dir(path):
        raise RequestError.invalid_params({"path": str(path), "message": f"{path} is not a file"})
    try:
        _check_listed(files, path)
        return files.read_text(path)
    except ToolError as exc:
        raise RequestError.invalid_params({"path": str(path), "message": str(exc)}) from None


def _confined(session: Session) -> Workspace:
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


HANDLERS = (
    Handler(ex.EXTERNAL_OPEN, open_session),
    Handler(ex.EXTERNAL_WRITE, write),
    Handler(ex.EXTERNAL_READ, read),
)
