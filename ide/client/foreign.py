"""One foreign-agent session, Qt-free: an ACP agent that is not Arbor works in a shadow of the workspace, and
Arbor's own backend (``arbor acp``, a second connection) holds that shadow and the review its changes are
captured into. The window (:mod:`ide.app.foreign`) and ``arbor run --agent`` (:mod:`ide.headless.foreign`)
are adapters over :class:`ForeignSession`: Qt signals and notes in the conversation, or lines on stderr.

The session's life, in the order a client goes through it: :meth:`~ForeignSession.start` Arbor's backend,
:meth:`~ForeignSession.open_shadow` (``_arbor/external/shadow``: the agent's cwd) — or, where none can be
made, :meth:`~ForeignSession.open_review` (``_arbor/external/open``: only the agent's ``fs/write_text_file``
is held) — and the agent's command line, under bwrap when confined (:meth:`~ForeignSession.command`);
then for each turn :meth:`~ForeignSession.turn_start` (the shadow takes in what the user decided and
edited), a :meth:`~ForeignSession.capture` after each tool call and one at the turn's end that also scans
the workspace, the files each capture moved said by :class:`Attribution`; the agent's ``fs/*`` served
from the shadow (:meth:`~ForeignSession.read`, :meth:`~ForeignSession.write`); and
:meth:`~ForeignSession.aclose`: the shadow removed, the backend stopped.

Requests raise what the connection raises (``acp.RequestError``, :class:`~ide.client.agentconn.NoAnswer`,
``ConnectionError``, pydantic's ``ValidationError``): ``arbor run`` ends on them, the window reads them
with :func:`ide.client.agentconn.answered` and says them. The wire models are imported inside functions
(the window's first frame does without pydantic).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.client import agentconn
from ide.client.agentconn import ClientCallbacks, load_sdk
from ide.client.agentproc import AgentChoice, AgentProcess, arbor_agent
from ide.client.link import AgentLink
from ide.client.process import EOF_GRACE_S
from ide.lifetime import scratch_prefix
from ide.sandbox import confined

if TYPE_CHECKING:
    import asyncio

    from pydantic import BaseModel

    from ide.protocol.foreign import ForeignCapture, ForeignShadow
    from ide.protocol.method import Method
    from ide.protocol.review import ChangeSetView

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Moved:
    """What one capture found changed since the capture before it, and who may have changed it."""

    files: list[tuple[str, str]]
    """Each file whose state in the review moved, with its status (``reverted``: gone from the review)."""
    by: list[str]
    """The tool calls reported from the capture before this one was asked for until it answered."""
    titles: list[str]
    """Their titles (a tool call's id where it had none)."""

    @property
    def listed(self) -> str:
        """``a.py (added), b.py (reverted)``."""
        return ", ".join(f"{path} ({status})" for path, status in self.files)


class Attribution:
    """Which files each capture of the shadow moved, and which tool calls may have moved them: the agent
    goes on while a capture runs, so what one finds is put on every tool call reported from the capture
    before it was asked for until it answered — one, when the agent waited."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, ...]] = {}
        """Each captured file's status and hunk ids at the last capture: what a tool call changed moved."""
        self._touched: dict[str, int] = {}
        """The tool calls reported since the last capture answered, each with when it was last reported
        (a count of updates): what the next capture finds, one of them did."""
        self._titles: dict[str, str] = {}
        self._updates = 0

    def reported(self, tool_call_id: str, title: str | None) -> None:
        """A tool call was reported (started, updated or done)."""
        if title:
            self._titles[tool_call_id] = title
        self._updates += 1
        self._touched[tool_call_id] = self._updates

    def asking(self) -> int:
        """Say when a capture is asked for; give the answer to :meth:`answered`."""
        return self._updates

    def answered(self, asked: int, changeset: ChangeSetView) -> Moved:
        """The capture asked at ``asked`` answered with ``changeset``: what moved since the one before."""
        group = list(self._touched)
        # Reported while this capture ran: they may also have changed files after it looked.
        self._touched = {key: when for key, when in self._touched.items() if when > asked}
        now = {f.path: (f.status, *(h.id for h in f.hunks)) for f in changeset.files}
        moved = [path for path, state in now.items() if self._seen.get(path) != state]
        moved += [path for path in self._seen if path not in now]
        self._seen = now
        files = [(path, now[path][0] if path in now else "reverted") for path in moved]
        return Moved(files, group, [self._titles.get(key, key) for key in group])

    def forget_files(self) -> None:
        """A new session of the agent in a new shadow: nothing captured yet."""
        self._seen = {}


async def _load_here() -> None:
    load_sdk()


class ForeignSession:
    """Arbor's backend holding a foreign agent's shadow and the review of its changes (see the module)."""

    def __init__(
        self,
        workspace: Path | str,
        backend: AgentChoice | None = None,
        *,
        meta: Callable[[], dict[str, bool]],
        client: str = "arbor",
        load: Callable[[], Awaitable[None]] = _load_here,
        on_exit: Callable[[int, str], None] | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.backend = backend or arbor_agent()
        """Arbor's backend as started for the review (another command in tests)."""
        self.meta, self.client = meta, client
        """What ``initialize`` asks for (asked as it is sent: the wire models load late), and the client's
        name it gives."""
        self.timeouts = agentconn.DEFAULT_TIMEOUTS
        """How long each request to the backend waits (its declaration's limit unless overridden)."""
        self.link = AgentLink(self._ended)
        """Arbor's backend process and the connection to it: ``_arbor/external/*``, and the review's
        ``_arbor/review/*``."""
        self.agent_label = ""
        """The foreign agent's name: the review session's title."""
        self.session_id: str | None = None
        """The review session in Arbor's backend."""
        self.shadow: str | None = None
        """The shadow the agent works in (None: it works in the workspace itself)."""
        self.writable: Sequence[str] | None = None
        """Not None: the agent is confined, writing only its shadow, its own TMPDIR and these."""
        self.scratch: str | None = None
        """A confined agent's TMPDIR, made when first needed (removed by :meth:`remove_scratch`)."""
        self.attribution = Attribution()
        self._load = load
        self._closing: asyncio.Future[None] | None = None
        """The one closing under way or done (:meth:`aclose`), until the next :meth:`start`."""
        self._on_exit = on_exit
        self._capture_lock: asyncio.Lock | None = None
        """One shadow call at a time (made at first use: the window makes its session before its first
        frame, and asyncio loads after it)."""

    @property
    def agent(self) -> AgentProcess | None:
        return self.link.agent

    @property
    def conn(self) -> Any:
        return self.link.conn

    @conn.setter
    def conn(self, conn: Any) -> None:
        self.link.conn = conn

    @property
    def running(self) -> bool:
        """Arbor's backend runs and is connected."""
        return self.conn is not None and self.link.pid is not None

    async def start(self) -> agentconn.AgentHello:
        """Start Arbor's backend (OSError when it cannot be run) and greet it, within ``initialize``'s
        declared limit. On a failure the backend is left to :meth:`stop_backend`. Should it end unasked,
        ``on_exit(code, stderr)`` is told (the shadow and the review session went with it)."""
        self._closing = None
        callbacks = ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
        conn = await self.link.launch(self.link.begin(), self.backend, callbacks, self._load)
        if conn is None:
            raise ConnectionError("Arbor's backend exited as it started")
        return await agentconn.initialize(conn, meta=self.meta(), client=self.client, timeouts=self.timeouts)

    async def open_shadow(self, agent_label: str) -> ForeignShadow:
        """A new shadow of the workspace and its review session, titled ``agent_label``."""
        from ide.protocol import foreign as fa

        self.agent_label, self.session_id = agent_label, None
        where = fa.ForeignShadowParams(cwd=str(self.workspace), agent=agent_label)
        made = await agentconn.call(self.conn, fa.FOREIGN_SHADOW, where, self.timeouts)
        self.session_id, self.shadow = made.session_id, made.cwd
        return made

    async def open_review(self, agent_label: str) -> str:
        """A review session without a shadow (the agent works in the workspace; only its
        ``fs/write_text_file`` calls are held): its id."""
        from ide.protocol import foreign as fa

        self.agent_label = agent_label
        params = fa.ForeignOpenParams(cwd=str(self.workspace), agent=agent_label)
        opened = await agentconn.call(self.conn, fa.FOREIGN_OPEN, params, self.timeouts)
        self.session_id = opened.session_id
        return opened.session_id

    def command(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """``argv`` as the agent is started in the shadow: under bwrap when :attr:`writable` is set
        (ConfineError, an OSError, when it cannot be), ``env`` its environment (a ``HOME`` of its own is
        bound back readable)."""
        if self.writable is None or self.shadow is None:
            return list(argv)
        if self.scratch is None:
            self.scratch = tempfile.mkdtemp(prefix=scratch_prefix("agent-tmp"))
        home = [env["HOME"]] if "HOME" in env else []
        return confined(list(argv), self.shadow, self.scratch, self.workspace, self.writable, home)

    async def turn_start(self, prompt: str = "") -> ForeignCapture | None:
        """Before each of the agent's turns: its shadow takes in what the user decided (rejected hunks
        reverted, applied files as the new baseline) and edited since; the first prompt becomes the
        commit's subject. The answer lists the files where the user's edits and the agent's overlap.
        None without a shadow."""
        from ide.protocol import foreign as fa

        params = fa.ForeignTurnStartParams(session_id=self.session_id or "", prompt=prompt)
        return await self._shadow_call(fa.FOREIGN_TURN_START, params)

    async def capture(self, *, workspace: bool = False) -> ForeignCapture | None:
        """Diff the shadow into the review (after a tool call; at a turn's end with ``workspace``, which also
        lists the workspace's own files changed meanwhile and the repository's git state). One at a time:
        each sees the one before it. None without a shadow."""
        from ide.protocol import foreign as fa

        params = fa.ForeignCaptureParams(session_id=self.session_id or "", workspace=workspace)
        return await self._shadow_call(fa.FOREIGN_CAPTURE, params)

    async def capture_after(self, *, final: bool) -> tuple[ForeignCapture, Moved] | None:
        """A :meth:`capture` after a tool call (``final``: at the turn's end, also scanning the workspace)
        and what it moved since the one before (:class:`Attribution`); None without a shadow."""
        asked = self.attribution.asking()
        captured = await self.capture(workspace=final)
        if captured is None:
            return None
        return captured, self.attribution.answered(asked, captured.changeset)

    async def _shadow_call(
        self, method: Method[Any, ForeignCapture], params: BaseModel
    ) -> ForeignCapture | None:
        conn = self.conn
        if self.shadow is None or conn is None:
            return None
        if self._capture_lock is None:
            import asyncio

            self._capture_lock = asyncio.Lock()
        async with self._capture_lock:
            return await agentconn.call(conn, method, params, self.timeouts)

    async def read(self, path: str, line: int | None, limit: int | None) -> str:
        """``fs/read_text_file`` of the agent: the file as the review leaves it (pending edits included)."""
        from ide.protocol import foreign as fa

        params = {"path": path, "line": line, "limit": limit}
        return (await self._fs_call(fa.FOREIGN_READ, params)).content

    async def write(self, path: str, content: str) -> ChangeSetView:
        """``fs/write_text_file`` of the agent: into the review's change set, never on disk before Apply."""
        from ide.protocol import foreign as fa

        return await self._fs_call(fa.FOREIGN_WRITE, {"path": path, "content": content})

    async def _fs_call(self, method: Method[Any, Any], params: dict[str, Any]) -> Any:
        # As the agent asked: the backend checks the values (a line below 1 is its refusal, not ours).
        call = self.conn.ext_method(method, {"session_id": self.session_id, **params})
        return method.result.model_validate(await agentconn.within(call, method, self.timeouts))

    async def close_shadow(self) -> None:
        """Remove the shadow (its review, what was captured, stays in the backend); a failure is ignored."""
        from ide.protocol import foreign as fa

        shadow, self.shadow = self.shadow, None
        conn, session_id = self.conn, self.session_id
        if shadow is not None and conn is not None and session_id is not None:
            params = fa.ForeignSessionParams(session_id=session_id)
            with contextlib.suppress(Exception):
                await agentconn.call(conn, fa.FOREIGN_CLOSE, params, self.timeouts)

    async def stop_backend(self, *, eof_grace: float = EOF_GRACE_S) -> None:
        """Stop Arbor's backend (``eof_grace`` after the end of its input, then signals) and wait until it
        is reaped; no end is reported."""
        self.session_id = None
        await self.link.stop(eof_grace=eof_grace)

    async def aclose(self, *, eof_grace: float = EOF_GRACE_S) -> None:
        """Remove the shadow, then stop the backend. Once: a second call (the window's close and its
        entry point both ask) waits for the first — it must not stop the backend while the first's request
        to remove the shadow is still on its way, which left the shadow behind."""
        import asyncio

        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close(eof_grace))
        await asyncio.shield(self._closing)

    async def _close(self, eof_grace: float) -> None:
        await self.close_shadow()
        await self.stop_backend(eof_grace=eof_grace)

    def remove_scratch(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def _ended(self, agent: AgentProcess, code: int, died: bool) -> None:
        if died:
            log.warning("the review backend exited with %s", code)
            self.session_id, self.shadow = None, None
            if self._on_exit is not None:
                self._on_exit(code, agent.stderr.text())
