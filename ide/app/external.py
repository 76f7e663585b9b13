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

from pydantic import BaseModel, ValidationError
from PySide6.QtCore import QObject, Signal

from ide import agentconn, agentproc
from ide.app.background import run_blocking, spawn
from ide.protocol import ErrorInfo
from ide.protocol import external as ex
from ide.protocol.method import Method

if TYPE_CHECKING:
    from acp import RequestError

    from ide.app.acp_client import BackendBridge

log = logging.getLogger(__name__)

P = TypeVar("P", bound=BaseModel)
T = TypeVar("T", bound=BaseModel)
START_TIMEOUT_S = 60.0
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602


def _refusal(code: int, message: str, path: str) -> RequestError:
    from acp import RequestError

    return RequestError(code, message, {"path": path, "message": message})


class ReviewBackend(QObject):
    """Arbor's backend as the review of a foreign agent's edits; serves that agent's ``fs/*``."""

    changesetReceived = Signal(object)
    """The review session's :class:`ChangeSetView` after each write the agent made."""

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
        self._conn: Any = None
        self._opening: asyncio.Future[tuple[Any, str]] | None = None

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self.agent.process if self.agent is not None else None

    def reset(self, agent_label: str) -> None:
        """A new session of the foreign agent: its first file request opens a new review session."""
        self.agent_label, self.session_id, self._opening = agent_label, None, None

    async def read_text_file(self, session_id: str, path: str, line: int | None, limit: int | None) -> str:
        """``fs/read_text_file``: the file as the review leaves it (pending edits included)."""
        target = self._check("fs/read_text_file", path)
        params = {"path": target, "line": line, "limit": limit}
        answer = await self._call("fs/read_text_file", ex.EXTERNAL_READ, params, path)
        return answer.content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """``fs/write_text_file``: into the review's change set, never on disk before Apply."""
        target = self._check("fs/write_text_file", path)
        self._check_size(content, path)
        params = {"path": target, "content": content}
        view = await self._call("fs/write_text_file", ex.EXTERNAL_WRITE, params, path)
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
        """Stop the review backend and wait until it is reaped."""
        agent, conn = self.agent, self._conn
        self.agent, self._conn, self._opening, self.session_id = None, None, None, None
        if agent is not None:
            await agent.stop(conn)

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
        resolved = Path(os.path.realpath(path))
        if resolved != self.workspace and self.workspace not in resolved.parents:
            raise _refusal(
                INVALID_PARAMS, f"{method}: {path} is outside the workspace {self.workspace}", path
            )
        return path

    async def _call(self, method: str, ext: Method[Any, T], params: dict[str, Any], path: str) -> T:
        from acp import RequestError

        conn, session_id = await self._connection()
        try:
            call = conn.ext_method(ext, {"session_id": session_id, **params})
            return ext.result.model_validate(await agentconn.within(call, f"_{ext}", self.timeouts))
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

    async def _open(self) -> tuple[Any, str]:
        from acp import RequestError

        if self._conn is None or self.process is None or self.process.returncode is not None:
            await self._start()
        conn = self._conn
        try:
            params = ex.ExternalOpenParams(cwd=str(self.workspace), agent=self.agent_label).model_dump()
            call = conn.ext_method(ex.EXTERNAL_OPEN, params)
            opened = await agentconn.within(call, f"_{ex.EXTERNAL_OPEN}", self.timeouts)
            self.session_id = ex.EXTERNAL_OPEN.result.model_validate(opened).session_id
        except (RequestError, ValidationError, ConnectionError, agentconn.NoAnswer) as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Arbor's review backend could not open a review: {exc}", ""
            ) from None
        return conn, self.session_id

    async def _start(self) -> None:
        from acp import RequestError

        line = shlex.join(self.backend.command)
        try:
            self.agent = agent = await self.backend.start()
        except OSError as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Cannot start Arbor's review backend `{line}`: {exc}", ""
            ) from None
        await run_blocking(agentconn.load_sdk)
        callbacks = agentconn.ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
        self._conn = conn = agentconn.connect(agent, callbacks)
        try:
            hello = await asyncio.wait_for(agentconn.initialize(conn, meta={"review": True}), START_TIMEOUT_S)
        except (RequestError, TimeoutError, ConnectionError, ValidationError) as exc:
            with contextlib.suppress(Exception):
                await agent.stop(conn)
            self._conn = None
            tail = agent.stderr.text(5)
            raise _refusal(
                INTERNAL_ERROR,
                f"Arbor's review backend `{line}` did not start: {exc or 'no answer'} {tail}",
                "",
            ) from None
        if hello.meta is None or ex.EXTERNAL_OPEN not in hello.meta.extensions:
            await agent.stop(conn)
            self._conn = None
            raise _refusal(
                INTERNAL_ERROR, f"`{line}` is not Arbor's backend: it offers no _{ex.EXTERNAL_OPEN}", ""
            )
