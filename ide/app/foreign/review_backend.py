"""Arbor's review for another ACP agent in the window: the Qt adapter over the one foreign-agent session
(:class:`~ide.client.foreign.ForeignSession`: a second connection to Arbor's own backend, ``arbor acp``,
holding the agent's shadow and the review of its edits), and the bridge's shadow capability
(:class:`~ide.client.agentconn.ShadowCapability`): where the agent starts, each turn's start, its ``fs/*``.

The foreign agent's ``fs/write_text_file`` becomes ``_arbor/external/write`` (into the change set, never on
disk) and ``fs/read_text_file`` becomes ``_arbor/external/read`` (pending edits visible). The backend is
started on the first file request, the review session opened with ``_arbor/external/open``; its session id
then works with every ``_arbor/review/*`` method, so the Review dock applies and rolls back these edits as
it does Arbor's own. Paths outside the workspace are refused here; secrets, ``.git`` and the rest of the
confinement are the backend's, whose message is passed on to the agent. What the session answers becomes
Qt signals: the change sets, notes for the conversation, the backend's death.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Signal
from shiboken6 import isValid

from ide.app.background import run_blocking, spawn
from ide.client import agentconn
from ide.client.agentconn import Placement, load_sdk
from ide.client.foreign import ForeignSession, Moved
from ide.client.process import STDIO_LIMIT

if TYPE_CHECKING:
    import asyncio

    from acp import RequestError
    from pydantic import BaseModel

    from ide.app.acp_client import BackendBridge
    from ide.client.agentproc import AgentChoice
    from ide.protocol import ErrorInfo
    from ide.protocol.method import Method

log = logging.getLogger(__name__)

P = TypeVar("P", bound="BaseModel")
T = TypeVar("T", bound="BaseModel")
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
        backend: AgentChoice | None = None,
        fallback: BackendBridge | None = None,
        confine: Callable[[], Sequence[str] | None] = lambda: None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.fallback = fallback
        """Where :meth:`request` sends what is not this review's: Arbor's own backend, through the bridge."""
        self.session = ForeignSession(
            workspace.resolve(), backend, meta=review_meta, load=self._load_sdk, on_exit=self._on_exit
        )
        """The foreign agent's session: Arbor's backend started for the review (another command in tests),
        the shadow, the review session, the captures; its ``timeouts``: how long each request to it waits
        (the agent's ``fs/*`` call fails with the reason when no answer comes in time, never hangs)."""
        self.confine = confine
        """What a confined agent may write besides its shadow and TMPDIR, asked at each start (None: it is
        not confined: ``review.confine_agents`` is off)."""
        self.enabled: Callable[[], bool] = lambda: True
        """False while the window drives Arbor's own agent: its edits never come through ``fs/*``."""
        self._opening: asyncio.Future[tuple[Any, str]] | None = None

    @staticmethod
    def _load_sdk() -> Awaitable[None]:
        return run_blocking(load_sdk)

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self.session.agent.process if self.session.agent is not None else None

    @property
    def session_id(self) -> str | None:
        """The review session in Arbor's backend (None until the agent's first file request)."""
        return self.session.session_id

    @property
    def shadow(self) -> str | None:
        """The shadow workspace the agent works in (None: it works in the workspace itself, and only its
        ``fs/write_text_file`` calls are held for review)."""
        return self.session.shadow

    def reset(self, agent_label: str) -> None:
        """A new session of the foreign agent: its first file request opens a new review session (an
        agent working in a shadow keeps the shadow's review: it is where its changes are)."""
        if self.session.shadow is None:
            self.session.agent_label, self.session.session_id, self._opening = agent_label, None, None

    async def place(self, choice: AgentChoice, resume: str | None) -> Placement | None:
        """The shadow the agent works in and its command line — under bwrap with
        ``review.confine_agents`` (ConfineError, an OSError, when it cannot be: it is not started)."""
        shadow = await self.open_shadow(choice.name, resume is not None)
        if shadow is None:
            return None
        session = self.session
        session.writable = self.confine()
        command = session.command(choice.command, choice.env)
        if not resume:
            session.attribution.forget_files()
            confined_to = ""
            if session.writable is not None:
                confined_to = "\nConfined with bwrap: it can write only there, in "
                confined_to += f"{session.scratch} (its TMPDIR)"
                confined_to += "".join(f", {path}" for path in session.writable) + "."
            self.noted.emit(
                "The agent works in a shadow of the workspace",
                f"{shadow}\nWhatever it changes there — with its own tools or commands too — comes to the "
                f"Review dock; your files change only when you apply.{confined_to}",
            )
        return Placement(shadow, command)

    async def open_shadow(self, agent_label: str, resume: bool) -> str | None:
        """Where the agent is started: a new shadow of the workspace and its review session (the same
        again when ``resume``-ing the agent's session while it is open), or None — said with
        :attr:`noted` — when none can be made (not a git repository, the review backend cannot start)."""
        import asyncio

        from acp import RequestError

        if resume and self.shadow is not None and self.session_id is not None:
            return self.shadow
        await self.close_shadow()
        self.session.agent_label, self.session.session_id = agent_label, None
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

    async def capture_after(self, *, final: bool) -> Moved | None:
        """Capture the shadow (after a tool call, or at the turn's end also scanning the workspace) and show
        it; what it moved since the capture before, or None without a shadow or an answer (the failure is
        noted)."""
        from ide.protocol import ErrorInfo
        from ide.protocol.foreign import FOREIGN_CAPTURE

        answer = await agentconn.answered(self.session.capture_after(final=final), FOREIGN_CAPTURE)
        if answer is None or isinstance(answer, ErrorInfo):
            self._not_captured(answer)
            return None
        captured, moved = answer
        self.changesetReceived.emit(captured.changeset)
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
        return moved

    async def turn_start(self, prompt: str = "") -> None:
        """Before each of the agent's turns: its shadow takes in what the user decided (rejected hunks
        reverted, applied files as the new baseline) and edited since; the first prompt becomes the
        commit's subject."""
        from ide.protocol import ErrorInfo
        from ide.protocol.foreign import FOREIGN_TURN_START

        started = await agentconn.answered(self.session.turn_start(prompt), FOREIGN_TURN_START)
        if started is None or isinstance(started, ErrorInfo):
            self._not_captured(started)
            return
        self.changesetReceived.emit(started.changeset)
        if started.conflicts:
            self.noted.emit(
                "Your edits and the agent's overlap: " + ", ".join(started.conflicts),
                "The agent's shadow keeps its own version of these files; the review shows it against yours.",
            )

    def _not_captured(self, failure: ErrorInfo | None) -> None:
        """A capture or a turn's start the review failed (None: no shadow, or the backend is gone, which
        its death says)."""
        if failure is not None:
            self.noted.emit("The review could not capture the agent's changes", failure.message)

    async def close_shadow(self) -> None:
        """Remove the shadow (its review, what was captured, stays in the backend)."""
        await self.session.close_shadow()

    def remove_scratch(self) -> None:
        """Remove a confined agent's TMPDIR (with the window)."""
        self.session.remove_scratch()

    async def read_text_file(self, session_id: str, path: str, line: int | None, limit: int | None) -> str:
        """``fs/read_text_file``: the file as the review leaves it (pending edits included)."""
        target = self._check("fs/read_text_file", path)
        return await self._call("fs/read_text_file", path, lambda: self.session.read(target, line, limit))

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        """``fs/write_text_file``: into the review's change set, never on disk before Apply."""
        target = self._check("fs/write_text_file", path)
        self._check_size(content, path)
        view = await self._call("fs/write_text_file", path, lambda: self.session.write(target, content))
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
        conn = self.session.conn
        if conn is None:
            return False

        async def deliver() -> None:
            from ide.protocol import ErrorInfo

            answer = await agentconn.ask(conn, method, params, self.session.timeouts)
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
        self._opening = None
        await self.session.aclose()

    def _on_exit(self, code: int, stderr_tail: str) -> None:
        """Say when the review backend ends without being asked (killed, crashed) — at once, not at the
        next request; it took the shadow and the review session with it."""
        if isValid(self):  # else the window is gone
            self._opening = None
            self.died.emit(code, stderr_tail)

    def _check_size(self, content: str, path: str) -> None:
        """Refuse a write whose request would pass the backend's line limit: sent, it would be dropped."""
        # The line as the SDK sends it (ASCII-escaped JSON), plus room for the ids and the method.
        import json

        size = len(json.dumps(content)) + len(json.dumps(path)) + 1024
        if size > STDIO_LIMIT:
            mb = 1024 * 1024
            raise _refusal(
                INVALID_PARAMS,
                f"fs/write_text_file: file too large for review: {size / mb:.1f} MB as sent; the limit is "
                f"{STDIO_LIMIT // mb} MB — write it in smaller files",
                path,
            )

    def _check(self, method: str, path: str) -> str:
        if not self.enabled():
            raise _refusal(INVALID_PARAMS, f"{method}: Arbor's own agent edits through its review", path)
        if not os.path.isabs(path):
            raise _refusal(INVALID_PARAMS, f"{method}: the path must be absolute, got {path!r}", path)
        root = Path(self.shadow) if self.shadow is not None else self.session.workspace
        resolved = Path(os.path.realpath(path))
        if resolved != root and root not in resolved.parents:
            raise _refusal(INVALID_PARAMS, f"{method}: {path} is outside the workspace {root}", path)
        return path

    async def _call(self, method: str, path: str, send: Callable[[], Awaitable[T]]) -> T:
        """What ``send`` answers once the review is open, its failure the agent's error for ``method``."""
        from acp import RequestError
        from pydantic import ValidationError

        await self._connection()
        try:
            return await send()
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
            self.session.conn, self._opening = None, None
            raise _refusal(INTERNAL_ERROR, f"{method}: Arbor's review backend has stopped", path) from None

    async def _connection(self) -> tuple[Any, str]:
        import asyncio

        if self._opening is None or (self._opening.done() and self._opening.exception() is not None):
            self._opening = asyncio.ensure_future(self._open())
        return await asyncio.shield(self._opening)

    async def _open(self, *, shadow: bool = False) -> tuple[Any, str]:
        from acp import RequestError
        from pydantic import ValidationError

        session = self.session
        if not session.running:
            await self._start()
        try:
            if shadow:
                made = await session.open_shadow(session.agent_label)
                if made.notes:
                    self.noted.emit("What the agent's shadow workspace does not hold", "\n".join(made.notes))
            else:
                await session.open_review(session.agent_label)
        except (RequestError, ValidationError, ConnectionError, agentconn.NoAnswer) as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Arbor's review backend could not open a review: {exc}", ""
            ) from None
        return session.conn, session.session_id  # type: ignore[return-value]

    async def _start(self) -> None:
        """Start the review backend, within ``initialize``'s declared limit, and check it is Arbor's."""
        from acp import RequestError
        from pydantic import ValidationError

        from ide.protocol.foreign import FOREIGN_OPEN

        session = self.session
        line = shlex.join(session.backend.command)
        try:
            hello = await session.start()
        except (RequestError, TimeoutError, ConnectionError, ValidationError) as exc:
            agent = session.agent  # stopped here: not a death to report
            with contextlib.suppress(Exception):
                await session.stop_backend()
            tail = agent.stderr.text(5) if agent is not None else ""
            raise _refusal(
                INTERNAL_ERROR,
                f"Arbor's review backend `{line}` did not start: {exc or 'no answer'} {tail}",
                "",
            ) from None
        except OSError as exc:
            raise _refusal(
                INTERNAL_ERROR, f"Cannot start Arbor's review backend `{line}`: {exc}", ""
            ) from None
        if hello.meta is None or FOREIGN_OPEN not in hello.meta.extensions:
            await session.stop_backend()
            not_arbor = f"`{line}` is not Arbor's backend: it offers no _{FOREIGN_OPEN}"
            raise _refusal(INTERNAL_ERROR, not_arbor, "")
