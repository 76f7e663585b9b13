"""Arbor's review for another ACP agent: a second connection to Arbor's own backend (``arbor acp``), used
only to hold the foreign agent's file edits in a review change set, and the ``fs/*`` serving that feeds it.

The foreign agent's ``fs/write_text_file`` becomes ``_arbor/external/write`` (into the change set, never on
disk) and ``fs/read_text_file`` becomes ``_arbor/external/read`` (pending edits visible). The backend is
started on the first file request, the review session opened with ``_arbor/external/open``; its session id
then works with every ``_arbor/review/*`` method, so the Review dock applies and rolls back these edits as
it does Arbor's own. Paths outside the workspace are refused here; secrets, ``.git`` and the rest of the
confinement are the backend's, whose message is passed on to the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Signal
from shiboken6 import isValid

from ide.app.background import run_blocking, spawn
from ide.client import agentconn, agentproc

if TYPE_CHECKING:
    from acp import RequestError
    from pydantic import BaseModel

    from ide.app.acp_client import BackendBridge
    from ide.protocol import ErrorInfo
    from ide.protocol import foreign as ex
    from ide.protocol.method import Method

log = logging.getLogger(__name__)

P = TypeVar("P", bound="BaseModel")
T = TypeVar("T", bound="BaseModel")
START_TIMEOUT_S = 60.0
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602


def review_meta() -> dict[str, bool]:
    """What the review connection asks for: change sets as summaries, their hunks fetched as they are
    shown."""
    from ide.protocol.review import SUMMARY_CAPABILITY

    return {"review": True, SUMMARY_CAPABILITY: True}


def _refusal(code: int, message: str, path: str) -> RequestError:
    from acp import RequestError

    return RequestError(code, message, {"path": path, "message": message})


class ReviewBackend(QObject):
    """Arbor's backend as the review of a foreign agent's edits; serves that agent's ``fs/*``."""

    changesetReceived = Signal(object)
    """The review session's :class:`ChangeSetView` after each write the agent made (each capture)."""
    noted = Signal(str, str)
    """A note for the conversation, title and detail: no shadow could be made, what a capture could not
    hold, files written in the workspace itself during a turn, edits of the user's the agent overlapped."""
    died = Signal(int, str)
    """The review backend ended without being asked: exit code (negative: killed by that signal) and the
    tail of its stderr. The shadow and the review session it held are gone with it."""

    def __init__(
        self,
        workspace: Path,
        backend: agentproc.AgentChoice | None = None,
        fallback: BackendBridge | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.fallback = fallback
        """Where :meth:`request` sends what is not this review's: Arbor's own backend, through the bridge."""
        self.workspace = workspace.resolve()
        self.backend = backend or agentproc.arbor_agent()
        """Arbor's backend as started for the review (another command in tests)."""
        self.agent_label = ""
        """The foreign agent's name: the review session's title."""
        self.enabled: Callable[[], bool] = lambda: True
        """False while the window drives Arbor's own agent: its edits never come through ``fs/*``."""
        self.session_id: str | None = None
        """The review session in Arbor's backend (None until the agent's first file request)."""
        self.agent: agentproc.AgentProcess | None = None
        self.timeouts = agentconn.DEFAULT_TIMEOUTS
        """How long each request to the review backend waits: the agent's ``fs/*`` call fails with the
        reason when no answer comes in time (never hangs)."""
        self.shadow: str | None = None
        """The shadow workspace the agent works in (None: it works in the workspace itself, and only its
        ``fs/write_text_file`` calls are held for review)."""
        self._conn: Any = None
        self._opening: asyncio.Future[tuple[Any, str]] | None = None
        self._capturing = asyncio.Lock()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self.agent.process if self.agent is not None else None

    def reset(self, agent_label: str) -> None:
        """A new session of the foreign agent: its first file request opens a new review session (an
        agent working in a shadow keeps the shadow's review: it is where its changes are)."""
        if self.shadow is None:
            self.agent_label, self.session_id, self._opening = agent_label, None, None

    async def open_shadow(self, agent_label: str, resume: bool) -> str | None:
        """Where the agent is started: a new shadow of the workspace and its review session (the same
        again when ``resume``-ing the agent's session while it is open), or None — said with
        :attr:`noted` — when none can be made (not a git repository, the review backend cannot start)."""
        from acp import RequestError

        if resume and self.shadow is not None and self.session_id is not None:
            return self.shadow
        await self.close_shadow()
        self.agent_label, self.session_id = agent_label, None
        self._opening = asyncio.ensure_future(self._open(shadow=True))
        try:
            await asyncio.shield(self._opening)
        except RequestError as exc:
            self._opening = None
            detail = exc.data.get("message") if isinstance(exc.data, dict) else None
            self.noted.emit(
                f"No shadow workspace: {agent_label} works in your workspace",
                f"{detail or exc}\nOnly the files it writes through fs/write_text_file are held for review; "
                "what its own tools and commands write lands on disk at once.",
            )
            return None
        return self.shadow

    async def capture(self, *, workspace: bool = False) -> ex.ForeignCapture | None:
        """Diff the shadow into the review (after a tool call, at a turn's end — ``workspace`` also scans
        the workspace for files changed there meanwhile) and show it; None without a shadow or an
        answer (the failure is noted)."""
        from ide.protocol import foreign as ex

        params = ex.ForeignCaptureParams(session_id=self.session_id or "", workspace=workspace)
        captured = await self._shadow_call(ex.FOREIGN_CAPTURE, params)
        if captured is not None:
            if captured.skipped:
                listed = "\n".join(f"{path}: {why}" for path, why in sorted(captured.skipped.items()))
                self.noted.emit("Not captured for review", listed)
            if captured.workspace_changed:
                self.noted.emit(
                    "Written outside review: " + ", ".join(captured.workspace_changed),
                    "These files of the workspace itself changed during the turn, not through Arbor: the "
                    "agent wrote outside its shadow, or they were edited meanwhile.",
                )
            if captured.git_changed:
                self.noted.emit(
                    "Your repository's git state changed during the turn",
                    "\n".join(captured.git_changed)
                    + "\nNot through Arbor: the agent acted on your repository itself, or you did meanwhile. "
                    "Apply will not commit while HEAD, the config or a hook holds what the turn left.",
                )
        return captured

    async def turn_start(self, prompt: str = "") -> None:
        """Before each of the agent's turns: its shadow takes in what the user decided (rejected hunks
        reverted, applied files as the new baseline) and edited since; the first prompt becomes the
        commit's subject."""
        from ide.protocol import foreign as ex

        params = ex.ForeignTurnStartParams(session_id=self.session_id or "", prompt=prompt)
        started = await self._shadow_call(ex.FOREIGN_TURN_START, params)
        if started is not None and started.conflicts:
            self.noted.emit(
                "Your edits and the agent's overlap: " + ", ".join(started.conflicts),
                "The agent's shadow keeps its own version of these files; the review shows it against yours.",
            )

    async def close_shadow(self) -> None:
        """Remove the shadow (its review, what was captured, stays in the backend)."""
        from ide.protocol import foreign as ex

        shadow, self.shadow = self.shadow, None
        conn, session_id = self._conn, self.session_id
        if shadow is not None and conn is not None and session_id is not None:
            params = ex.ForeignSessionParams(session_id=session_id)
            await agentconn.ask(conn, ex.FOREIGN_CLOSE, params, self.timeouts)

    async def _shadow_call(self, method: Method[P, T], params: P) -> T | None:
        from ide.protocol import ErrorInfo

        conn = self._conn
        if self.shadow is None or conn is None:
            return None
        async with self._capturing:  # one capture at a time: each sees the one before it
            answer = await agentconn.ask(conn, method, params, self.timeouts)
        if isinstance(answer, ErrorInfo):
            self.noted.emit("The review could not capture the agent's changes", answer.message)
            return None
        if answer is not None and hasattr(answer, "changeset"):
            self.changesetReceived.emit(answer.changeset)
        return answer

    async def read_text_file(self, session_id: str, path: str, line: int | None, limit: int | None) -> str:
        """``fs/read_text_file``: the file as the review leaves it (pending edits included)."""
        from ide.protocol import foreign as ex

        target = self._check("fs/read_text_file", path)
        params = {"path": target, "line": line, "limit": limit}
        answer = await self._call("fs/read_text_file", ex.FOREIGN_READ, params, path)
        return answer.content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """``fs/write_text_file``: into the review's change set, never on disk before Apply."""
        from ide.protocol import foreign as ex

        target = self._check("fs/write_text_file", path)
        self._check_size(content, path)
        params = {"path": target, "content": content}
        view = await self._call("fs/write_text_file", ex.FOREIGN_WRITE, params, path)
        self.changesetReceived.emit(view)

    def request(
        self,
        method: Method[P, T],
        params: P,
        on_result: Callable[[T], None],
        on_error: Callable[[ErrorInfo], None],
    ) -> bool:
        """An ``_arbor/review/*`` request of the Review dock, for which this is the channel once it shows the
        foreign agent's edits: to the review backend while that agent runs and a review session holds them
        (False, nothing sent, when the backend is not up); one about another session, or any while Arbor's
        own agent runs, to :attr:`fallback`."""
        session_id = getattr(params, "session_id", None)
        if not self.enabled() or self.session_id is None or session_id not in (None, self.session_id):
            return self.fallback is not None and self.fallback.request(method, params, on_result, on_error)
        conn = self._conn
        if conn is None:
            return False

        async def deliver() -> None:
            from ide.protocol import ErrorInfo

            answer = await agentconn.ask(conn, method, params, self.timeouts)
            if answer is None:
                on_error(ErrorInfo(kind="internal", message="Arbor's review backend has stopped."))
            elif isinstance(answer, ErrorInfo):
                on_error(answer)
            else:
                on_result(answer)

        spawn(deliver(), name=f"review _{method}")
        return True

    async def aclose(self) -> None:
        """Remove the shadow, stop the review backend and wait until it is reaped."""
        await self.close_shadow()
        agent, conn = self.agent, self._conn
        self.agent, self._conn, self._opening, self.session_id = None, None, None, None
        if agent is not None:
            await agent.stop(conn)

    async def _watch(self, agent: agentproc.AgentProcess) -> None:
        """Say when the review backend ends without being asked (killed, crashed) — at once, not at the
        next request; it took the shadow and the review session with it."""
        code = await agent.wait()
        if agent is not self.agent or not isValid(self):
            return  # stopped on purpose (aclose, a failed start), or the window is gone
        log.warning("the review backend exited with %s", code)
        conn = self._conn
        self.agent, self._conn, self._opening = None, None, None
        self.session_id, self.shadow = None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 1.0)
        if isValid(self):
            self.died.emit(code, agent.stderr.text())

    def _check_size(self, content: str, path: str) -> None:
        """Refuse a write whose request would pass the backend's line limit: sent, it would be dropped."""
        # The line as the SDK sends it (ASCII-escaped JSON), plus room for the ids and the method.
        size = len(json.dumps(content)) + len(json.dumps(path)) + 1024
        if size > agentproc.STDIO_LIMIT:
            mb = 1024 * 1024
            raise _refusal(
                INVALID_PARAMS,
                f"fs/write_text_file: file too large for review: {size / mb:.1f} MB as sent; the limit is "
                f"{agentproc.STDIO_LIMIT // mb} MB — write it in smaller files",
                path,
            )

    def _check(self, method: str, path: str) -> str:
        if not self.enabled():
            raise _refusal(INVALID_PARAMS, f"{method}: Arbor's own agent edits through its review", path)
        if not os.path.isabs(path):
            raise _refusal(INVALID_PARAMS, f"{method}: the path must be absolute, got {path!r}", path)
        root = Path(self.shadow) if self.shadow is not None else self.workspace
        resolved = Path(os.path.realpath(path))
        if resolved != root and root not in resolved.parents:
            raise _refusal(INVALID_PARAMS, f"{method}: {path} is outside the workspace {root}", path)
        return path

    async def _call(self, method: str, ext: Method[Any, T], params: dict[str, Any], path: str) -> T:
        from acp import RequestError
        from pydantic import ValidationError

        conn, session_id = await self._connection()
        try:
            call = conn.ext_method(ext, {"session_id": session_id, **params})
            return ext.result.model_validate(await agentconn.within(call, ext, self.timeouts))
        except agentconn.NoAnswer as exc:
            late = f"{method}: Arbor's review backend did not answer {exc.method} within {exc.seconds:g} s"
            raise _refusal(INTERNAL_ERROR, late, path) from None
        except RequestError as exc:
            detail = exc.data.get("message") if isinstance(exc.data, dict) else None
            raise _refusal(exc.code, f"{method}: {detail or exc}", path) from None
        except ValidationError:
            raise _refusal(
                INTERNAL_ERROR, f"{method}: Arbor's review backend answered garbage", path
            ) from None
        except ConnectionError:
            self._conn, self._opening = None, None
            raise _refusal(INTERNAL_ERROR, f"{method}: Arbor's review backend has stopped", path) from None

    async def _connection(self) -> tuple[Any, str]:
        if self._opening is None or (self._opening.done() and self._opening.exception() is not None):
            self._opening = asyncio.ensure_future(self._open())
        return await asyncio.shield(self._opening)

    async def _open(self, *, shadow: bool = False) -> tuple[Any, str]:
        from acp import RequestError
        from pydantic import ValidationError

        from ide.protocol import foreign as ex

        if self._conn is None or self.process is None or self.process.returncode is not None:
            await self._start()
        conn = self._conn
        try:
            if shadow:
                where = ex.ForeignShadowParams(cwd=str(self.workspace), agent=self.agent_label)
                made = await agentconn.call(conn, ex.FOREIGN_SHADOW, where, self.timeouts)
                self.session_id, self.shadow = made.session_id, made.cwd
                if made.notes:
                    self.noted.emit("What the agent's shadow workspace does not hold", "\n".join(made.notes))
            else:
                params = ex.ForeignOpenParams(cwd=str(self.workspace), agent=self.agent_label)
                opened = await agentconn.call(conn, ex.FOREIGN_OPEN, params, self.timeouts)
                self.session_id = opened.session_id
        except (RequestError, ValidationError, ConnectionError, agentconn.NoAnswer) as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Arbor's review backend could not open a review: {exc}", ""
            ) from None
        return conn, self.session_id

    async def _start(self) -> None:
        from acp import RequestError
        from pydantic import ValidationError

        from ide.protocol import foreign as ex

        line = shlex.join(self.backend.command)
        try:
            self.agent = agent = await self.backend.start()
        except OSError as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Cannot start Arbor's review backend `{line}`: {exc}", ""
            ) from None
        spawn(self._watch(agent), name="watch the review backend")
        await run_blocking(agentconn.load_sdk)
        callbacks = agentconn.ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
        self._conn = conn = agentconn.connect(agent, callbacks)
        try:
            hello = await asyncio.wait_for(agentconn.initialize(conn, meta=review_meta()), START_TIMEOUT_S)
        except (RequestError, TimeoutError, ConnectionError, ValidationError) as exc:
            self.agent, self._conn = None, None  # stopped here: not a death to report
            with contextlib.suppress(Exception):
                await agent.stop(conn)
            tail = agent.stderr.text(5)
            raise _refusal(
                INTERNAL_ERROR,
                f"Arbor's review backend `{line}` did not start: {exc or 'no answer'} {tail}",
                "",
            ) from None
        if hello.meta is None or ex.FOREIGN_OPEN not in hello.meta.extensions:
            self.agent, self._conn = None, None
            await agent.stop(conn)
            raise _refusal(
                INTERNAL_ERROR, f"`{line}` is not Arbor's backend: it offers no _{ex.FOREIGN_OPEN}", ""
            )
