"""The window's one link to the backend: a QObject owning ``arbor acp`` and the SDK's client connection.

Everything ACP happens here, on the qasync loop; widgets see Qt signals and call methods that return at
once. The bridge knows the backend's life (its process and connection: :class:`~ide.client.link.AgentLink`)
and its session (modes, prompt, cancel, permissions), no feature: a dock sends ``_arbor/*`` requests with
:meth:`BackendBridge.request`, whose answer or error goes back to that dock, and subscribes to
notifications with :meth:`BackendBridge.on_notification`; an agent that works in a shadow is served by
the capability a part offers (:meth:`BackendBridge.offer_shadow`, a ``ShadowCapability``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QObject, Signal
from shiboken6 import isValid

from ide.app.background import run_blocking, spawn
from ide.client import agentconn, agentproc, sessions
from ide.client.agentproc import BackendState, error_from_request
from ide.client.link import AgentLink
from ide.client.notifications import NotificationRouter

if TYPE_CHECKING:
    import asyncio

    from acp.core import ClientSideConnection
    from pydantic import BaseModel

    from ide.client.agentconn import PermissionHandler, ShadowCapability
    from ide.client.fold import SessionFold
    from ide.protocol import AgentMeta, ErrorInfo
    from ide.protocol.method import Method, Notification

__all__ = ["BackendBridge", "BackendState"]
log = logging.getLogger(__name__)

P = TypeVar("P", bound="BaseModel")
T = TypeVar("T", bound="BaseModel")
M = TypeVar("M", bound="BaseModel")
OnError = Callable[["ErrorInfo"], None]
OnSessions = Callable[[list[sessions.SessionSummary]], None]
CLIENT_META = {"review": True, "reviewHunks": True, "tree": True, "index": True}
"""Arbor's extensions the window asks for: reviews (as summaries, the hunks fetched as files are shown:
``ide.protocol.review.SUMMARY_CAPABILITY``), search trees, the Outline."""


class BackendBridge(QObject):
    """Owns one backend process at a time and its ACP session, and reports their life as signals."""

    stateChanged = Signal(str)
    """A :class:`BackendState` value."""
    agentChanged = Signal(object)
    """The backend's :class:`AgentMeta` after initialize (None for an ACP agent that is not Arbor)."""
    sessionReady = Signal(str, bool)
    """Session id, and True when it was restored with ``session/load`` (its history was replayed)."""
    replayStarting = Signal()
    """A session is about to be loaded (``session/load`` replays its history) or a new one opened in the
    window's current one's place: views should forget what they show."""
    replayFailed = Signal(str)
    """The previous session could not be restored (message); a new session follows."""
    sessionEvent = Signal(object)
    """One event of the current session, from its one fold (:mod:`ide.client.fold`): an update read, the
    prompt sent (``PromptSent``), its answer (``TurnEnded``, or ``TurnFailed``)."""
    turnFinished = Signal(str, object)
    """Stop reason and the turn's :class:`TurnMeta` (None when the agent sent none)."""
    errorRaised = Signal(object)
    """An :class:`ErrorInfo` to read: a failed turn or start, a refused request that had no error handler."""
    backendDied = Signal(int, str)
    """The process ended without being asked: exit code (negative: killed by that signal), stderr tail."""
    stopped = Signal()
    """The process is gone and reaped, whether it was asked to stop or died."""
    modeChanged = Signal(str)
    """The session's mode (agent architecture) is now this id."""
    cancelRequested = Signal()
    """The user asked to end the running turn (an open permission question is answered ``cancelled``)."""
    configOptionsChanged = Signal(object)
    """The session's config options (a tuple of the SDK's select and boolean options) are now these."""
    configOptionRefused = Signal(str)
    """The agent refused to set a config option (or did not answer): why; the options stay as they were."""
    authRequired = Signal(object)
    """The agent answered ``session/new`` with "authentication required": an
    :class:`~ide.client.auth.AuthNeeded` (its methods, what it said). It runs on, waiting:
    :meth:`authenticate`, a :meth:`switch` (with the credentials in its environment, or after a terminal
    login), or :meth:`stop`."""
    authFailed = Signal(str)
    """An ``authenticate`` (:meth:`authenticate`, or a :meth:`switch`'s) did not get through: what to tell
    the user."""

    def __init__(
        self, workspace: Path, agent: agentproc.AgentChoice | None = None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.workspace = workspace.resolve()
        self.choice = agent or agentproc.arbor_agent()
        """The agent started: its command line and what it adds to the window's environment."""
        self.state = BackendState.STOPPED
        self.agent_meta: AgentMeta | None = None
        self.agent_name: str | None = None
        self.session_id: str | None = None
        self.mode: str | None = None
        self.modes: list[tuple[str, str, str]] = []
        """The agent's session modes: (id, name, description)."""
        self.config_options: tuple[Any, ...] = ()
        """The session's config options (``configOptions``), as the agent last told them."""
        self.can_load_session = self.can_list_sessions = False
        self.auth_methods: tuple[Any, ...] = ()
        """The agent's ``authMethods`` from its ``initialize`` answer (the SDK's models)."""
        self.awaiting_auth = False
        """The agent asked for authentication and no session is open yet (:attr:`authRequired`)."""
        self.permission_handler: PermissionHandler | None = None
        self.shadow: ShadowCapability | None = None
        """The client's capability for agents that work in a shadow (:meth:`offer_shadow`)."""
        self.agent_dir = self.workspace
        """The running agent's cwd and sessions' cwd: the workspace, or its shadow."""
        self._link = AgentLink(self._ended, lambda coro, name: spawn(coro, name=name))
        """The agent's process and its connection, one at a time, each start a new generation."""
        self._notifications = NotificationRouter()
        self._session_fold: SessionFold | None = None
        """The current session's updates read into events; a new one for each session, start and replay
        (made at first use: the events' module is not for the first frame)."""
        self.timeouts = agentconn.DEFAULT_TIMEOUTS
        """How long each request waits for its answer (its declaration's limit, ``Request.timeout_s``);
        without one in time its handler gets an error saying so, and a late answer is dropped."""

    @property
    def _fold(self) -> SessionFold:
        if self._session_fold is None:
            self._session_fold = _new_fold(None)
        return self._session_fold

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The backend's process (running or not), if one was started."""
        return self._link.process

    @property
    def pid(self) -> int | None:
        """Process id of the running backend, if any."""
        return self._link.pid

    def offer_shadow(self, shadow: ShadowCapability) -> None:
        """Offer agents ``shadow``: an agent that works in a shadow (:attr:`AgentChoice.works_in_shadow`)
        is started where it says, it acts before each of that agent's prompts, and it serves every agent's
        ``fs/*`` (which ``initialize`` then advertises)."""
        self.shadow = shadow

    def start(self) -> asyncio.Task[None]:
        """Spawn the backend, initialize it and open a new session."""
        return self._link.run(lambda: self._start(resume=None))

    def announce_start(self) -> None:
        """Show the backend as starting before :meth:`start` spawns it: the window's first frame shows what
        the window is about to do, while the spawn waits for that frame."""
        self._set_state(BackendState.STARTING)

    def withdraw_start(self) -> None:
        """The start :meth:`announce_start` showed waits for a question (workspace trust): stopped until the
        answer starts it. Nothing changes once a start is under way."""
        if self.state == BackendState.STARTING and self._link.idle:
            self._set_state(BackendState.STOPPED)

    def restart(self) -> asyncio.Task[None]:
        """Stop whatever runs, spawn again and restore the current session (replaying it), else a new one."""
        return self._link.run(self._restart)

    def switch(self, choice: agentproc.AgentChoice, *, auth_method: str | None = None) -> asyncio.Task[None]:
        """Stop whatever runs and start the agent ``choice`` in a new session; with ``auth_method`` (an
        env-var method whose variables ``choice`` now sets), ``authenticate`` with it before the session
        (a refusal comes as ``authFailed``, the agent waiting)."""
        return self._link.run(partial(self._restart, choice, auth_method))

    def stop(self) -> asyncio.Task[None]:
        """Ask the backend to exit (EOF, then SIGTERM, then SIGKILL); no death is reported."""
        return self._link.run(self._stop)

    def kill(self) -> None:
        """SIGKILL the backend's process group at once (window teardown, no waiting)."""
        self._link.kill()

    async def aclose(self) -> None:
        """Stop the backend and wait until it is reaped (for the end of ``run_gui`` and tests)."""
        await self.stop()

    def send_prompt(self, text: str) -> bool:
        """Start a turn with ``text``; False (and nothing sent) unless the backend is ready."""
        if self.state != BackendState.READY or self._link.conn is None or self.session_id is None:
            return False
        self._set_state(BackendState.BUSY)
        self.sessionEvent.emit(self._fold.sent(text))
        spawn(self._prompt(self._link.generation, self._link.conn, self.session_id, text), name="prompt")
        return True

    def list_sessions(self, on_result: OnSessions, on_error: OnError | None = None) -> bool:
        """Ask for the workspace's sessions (``session/list``, newest first) for ``on_result``; a refusal
        goes to ``on_error``. False, and nothing sent, unless the agent runs and lists sessions."""
        if self._link.conn is None or not self.can_list_sessions:
            return False
        call = sessions.list_sessions(self._link.conn, str(self.workspace), self.timeouts)
        self._link.answer(call, on_result, on_error or self.errorRaised.emit, "session/list")
        return True

    def open_session(self, session_id: str | None) -> bool:
        """Switch to session ``session_id`` (``session/load`` replays it; if that fails, ``replayFailed`` and
        a new one) or, for None, a new one: ``replayStarting``, then ``sessionReady``. False unless ready."""
        if self.state != BackendState.READY or (conn := self._link.conn) is None:
            return False
        if session_id is None:
            self.replayStarting.emit()
        self._set_state(BackendState.BUSY)
        generation = self._link.generation
        self._link.run(lambda: self._guarded(generation, self._open(generation, conn, session_id)))
        return True

    def authenticate(self, method_id: str) -> bool:
        """Sign in with the agent's method ``method_id`` (``authenticate``), then open the session again;
        False, and nothing sent, unless the agent waits for authentication. A refusal comes as
        ``authFailed``, a session still refused as ``authRequired`` again."""
        if not self.awaiting_auth or (conn := self._link.conn) is None:
            return False
        # Not a lifecycle step: a browser sign-in may take minutes, and a stop (Cancel) must not wait for it.
        spawn(self._authenticate(self._link.generation, conn, method_id), name="authenticate")
        return True

    async def _authenticate(self, generation: int, conn: ClientSideConnection, method_id: str) -> None:
        from ide.client import auth

        try:
            failure = await auth.authenticate(conn, method_id, self.timeouts)
        except ConnectionError:
            return  # the agent ended: its watcher tells (backendDied)
        if generation != self._link.generation or self._link.stopping:
            return  # stopped or restarted meanwhile: no one waits for this sign-in
        if failure is not None:
            self.authFailed.emit(failure)
            return
        self._link.run(lambda: self._guarded(generation, self._open(generation, conn, None)))

    def cancel(self) -> None:
        """Ask the agent to end the running turn; it answers the prompt with stop reason ``cancelled``."""
        if self.state == BackendState.BUSY and self._link.conn is not None and self.session_id is not None:
            self.cancelRequested.emit()
            spawn(agentconn.cancel(self._link.conn, self.session_id), name="cancel")

    def set_mode(self, mode_id: str) -> bool:
        """Switch the session's mode (agent architecture) for the next turns; False unless ready.
        ``modeChanged`` follows when the agent accepted it; a refusal comes as ``errorRaised``."""
        if self.state != BackendState.READY or self._link.conn is None or self.session_id is None:
            return False
        spawn(
            self._set_mode(self._link.generation, self._link.conn, self.session_id, mode_id), name="set-mode"
        )
        return True

    def set_config_option(self, option_id: str, value: str | bool) -> bool:
        """Set the session's config option ``option_id`` (``session/set_config_option``); False unless
        ready. The agent's options follow as ``configOptionsChanged``; a refusal as ``configOptionRefused``
        and the options as they were."""
        if self.state != BackendState.READY or (conn := self._link.conn) is None or self.session_id is None:
            return False
        generation, call = self._link.generation, sessions.set_config_option
        answer = call(conn, self.session_id, option_id, value, self.timeouts)
        spawn(self._config_set(generation, answer), name="set-config-option")
        return True

    async def _config_set(self, generation: int, answer: Awaitable[Any]) -> None:
        from ide.protocol import ErrorInfo

        options = await answer
        if generation != self._link.generation or options is None:
            return
        if isinstance(options, ErrorInfo):
            self.configOptionRefused.emit(options.message)
            options = self.config_options  # the selectors go back
        self._note_options(options)

    def _note_options(self, options: tuple[Any, ...]) -> None:
        self.config_options = tuple(options)
        self.configOptionsChanged.emit(self.config_options)

    def note_mode(self, mode_id: str) -> None:
        """The session's mode changed by other means (a workflow was picked): record it, emit modeChanged."""
        self.mode = mode_id
        self.modeChanged.emit(mode_id)

    def supports(self, method: str) -> bool:
        """Whether the backend advertised the ``_arbor/*`` extension ``method`` (without the underscore)."""
        return self.agent_meta is not None and method in self.agent_meta.extensions

    def request(
        self,
        method: Method[P, T],
        params: P,
        on_result: Callable[[T], None],
        on_error: Callable[[ErrorInfo], None] | None = None,
    ) -> bool:
        """Send the extension request ``_method``; its answer, read as the method's result type, goes to
        ``on_result``. A refusal, an unreadable answer or none within its time (:attr:`timeouts`) goes to
        ``on_error`` (without one, to :attr:`errorRaised`); the answer of a backend that has died or
        restarted since goes nowhere. False, and nothing sent, when the backend is not running or did not
        advertise ``method``."""
        if self._link.conn is None or not self.supports(method):
            return False
        call = agentconn.ask(self._link.conn, method, params, self.timeouts)
        self._link.answer(call, on_result, on_error or self.errorRaised.emit, f"_{method}")
        return True

    def on_notification(self, notification: Notification[M], handler: Callable[[M], None]) -> None:
        """Call ``handler`` with each such notification of the current backend, read as its payload type;
        one that carries a ``session_id`` reaches it only when that is the current session's."""
        self._notifications.subscribe(notification, handler)

    @staticmethod
    def _load_sdk() -> Awaitable[None]:
        return run_blocking(agentconn.load_sdk)

    def _on_notification(self, generation: int, method: str, params: dict[str, Any]) -> None:
        if generation == self._link.generation:
            self._notifications.dispatch(method, params, self.session_id)

    async def _restart(
        self, choice: agentproc.AgentChoice | None = None, auth_method: str | None = None
    ) -> None:
        resume = self.session_id if choice is None else None  # another agent: a new session
        await self._stop()
        if choice is not None:
            self.choice, self.session_id = choice, None
        await self._start(resume, auth_method)

    async def _start(self, resume: str | None, auth_method: str | None = None) -> None:
        generation = self._link.begin()
        self.agent_meta, self.auth_methods, self.awaiting_auth = None, (), False
        self._set_state(BackendState.STARTING)
        callbacks = agentconn.ClientCallbacks(
            partial(self._on_update, generation),
            lambda: self.permission_handler,
            partial(self._on_notification, generation),
            lambda: self.shadow,
        )
        try:
            shadow = self.shadow if self.choice.works_in_shadow else None
            placed = await shadow.place(self.choice, resume) if shadow is not None else None
            self.agent_dir = Path(placed.cwd) if placed else self.workspace
            # Spawn first: the backend's own start-up then overlaps with loading the SDK here.
            cwd, command = (placed.cwd, placed.command) if placed else (None, None)
            conn = await self._link.launch(
                generation, self.choice, callbacks, self._load_sdk, cwd=cwd, command=command
            )
        except OSError as exc:
            self._set_state(BackendState.STOPPED)
            arbor = not self.choice.works_in_shadow  # Arbor, or a backend command given as is
            self.errorRaised.emit(agentproc.start_error(self.choice.command, exc, arbor=arbor))
            return
        if conn is not None:  # else it died while the SDK loaded; the watcher has reported it
            await self._guarded(generation, self._handshake(generation, conn, resume, auth_method))

    async def _guarded(self, generation: int, step: Awaitable[None]) -> None:
        """Run ``step`` (a handshake, opening a session); a refusal or no answer stops the backend."""
        from acp import RequestError
        from pydantic import ValidationError

        try:
            await step
        except (RequestError, agentconn.NoAnswer) as exc:
            if generation == self._link.generation:
                self.errorRaised.emit(error_from_request(exc) if isinstance(exc, RequestError) else exc.info)
                await self._stop()
        except (ConnectionError, ValidationError):
            # The process died mid-handshake (or spoke garbage); the watcher reports its exit and stderr.
            if generation == self._link.generation and self.pid is not None:
                await self._link.kill_unless_ending()

    async def _handshake(
        self, generation: int, conn: ClientSideConnection, resume: str | None, auth_method: str | None = None
    ) -> None:
        fs = self.shadow is not None
        hello = await agentconn.initialize(conn, meta=CLIENT_META, fs=fs, timeouts=self.timeouts)
        self.agent_meta, self.agent_name = hello.meta, hello.name
        self.can_load_session, self.can_list_sessions = hello.can_load_session, hello.can_list_sessions
        self.auth_methods = hello.auth_methods
        self.agentChanged.emit(self.agent_meta)
        if auth_method is not None and auth_method in {getattr(m, "id", None) for m in hello.auth_methods}:
            from ide.client import auth

            # An env-var method's variables are set now: the agent reads them when asked to authenticate.
            failure = await auth.authenticate(conn, auth_method, self.timeouts)
            if failure is not None:
                if generation == self._link.generation:
                    self.awaiting_auth = True
                    self._set_state(BackendState.STARTING)
                    self.authFailed.emit(failure)
                return
        await self._open(generation, conn, resume)

    async def _open(self, generation: int, conn: ClientSideConnection, resume: str | None) -> None:
        from acp import RequestError

        def replay() -> None:
            self.session_id = resume  # the replayed updates are of this session
            self._session_fold = _new_fold(resume)
            self.replayStarting.emit()

        try:
            opened = await sessions.open_session(
                conn,
                str(self.agent_dir),
                resume,
                self.can_load_session,
                replay,
                self.replayFailed.emit,
                self.timeouts,
            )
        except RequestError as exc:
            from ide.client import auth

            if not auth.is_auth_required(exc):
                raise
            if generation == self._link.generation:
                self._wait_for_auth(
                    auth.AuthNeeded(
                        self.choice.name,
                        tuple(self.choice.command),
                        tuple(auth.read_methods(self.auth_methods)),
                        auth.error_message(exc),
                    )
                )
            return
        self.awaiting_auth = False
        if not opened.replayed:
            self.mode, self.modes = None, []
        if opened.modes:
            self.mode, self.modes = sessions.session_modes(opened.modes)
        if generation == self._link.generation:
            self.session_id = opened.session_id
            self._note_options(opened.config_options)
            self._set_state(BackendState.READY)
            self.sessionReady.emit(opened.session_id, opened.replayed)

    def _wait_for_auth(self, needed: Any) -> None:
        self.awaiting_auth = True
        self._set_state(BackendState.STARTING)
        log.info("the agent %s asks for authentication (%d methods)", needed.agent, len(needed.methods))
        self.authRequired.emit(needed)

    async def _set_mode(self, generation: int, conn: ClientSideConnection, session: str, mode: str) -> None:
        from acp import RequestError

        from ide.protocol.standard import SESSION_SET_MODE

        try:
            await agentconn.within(
                conn.set_session_mode(session_id=session, mode_id=mode), SESSION_SET_MODE, self.timeouts
            )
        except (RequestError, agentconn.NoAnswer, ConnectionError) as exc:
            if generation == self._link.generation and not isinstance(exc, ConnectionError):
                self.errorRaised.emit(error_from_request(exc) if isinstance(exc, RequestError) else exc.info)
                self.modeChanged.emit(self.mode or "")
            return
        if generation == self._link.generation:
            self.note_mode(mode)

    async def _prompt(self, generation: int, conn: ClientSideConnection, session_id: str, text: str) -> None:
        from ide.protocol import ErrorInfo

        if self.agent_dir != self.workspace and self.shadow is not None:
            await self.shadow.turn_start(text)
        response = await sessions.prompt(conn, session_id, text, self.timeouts)
        if generation != self._link.generation:
            return
        if response is None:
            # Usually the process died and the watcher reports it. If it still runs, its stdout closed
            # or it spoke garbage: it is of no further use, and killing it lets the watcher report that.
            if self.pid is not None and not self._link.stopping:
                await self._link.kill_unless_ending()
            return
        if isinstance(response, ErrorInfo):
            self.errorRaised.emit(response)
            self.sessionEvent.emit(self._fold.failed(response))
        else:
            ended = self._fold.answer(response)
            self.sessionEvent.emit(ended)
            self.turnFinished.emit(ended.stop_reason, ended.meta)
            if ended.meta is not None and ended.meta.error is not None:
                self.errorRaised.emit(ended.meta.error)
        self._set_state(BackendState.READY)

    def _on_update(self, generation: int, session_id: str, update: Any) -> None:
        if generation != self._link.generation or session_id != self.session_id:
            return
        from ide.client.events import ConfigOptionsChanged, ModeChanged

        if self._fold.session_id != session_id:
            self._session_fold = _new_fold(session_id)
        event = self._fold.apply(update)
        if isinstance(event, ModeChanged):
            self.mode = event.mode_id
            self.modeChanged.emit(self.mode)
        elif isinstance(event, ConfigOptionsChanged):
            self._note_options(event.options)
        self.sessionEvent.emit(event)

    def _ended(self, agent: agentproc.AgentProcess, code: int, died: bool) -> None:
        """The current backend's process ended (``died``: unasked), told by its watcher."""
        if not isValid(self):
            return  # this bridge was deleted with its window: no one to tell
        self.awaiting_auth = False
        self._set_state(BackendState.STOPPED)
        if died:
            log.warning("backend exited with %s", code)
            self.backendDied.emit(code, agent.stderr.text())
        self.stopped.emit()

    async def _stop(self) -> None:
        # EOF on stdin is the polite way to end an ACP agent; signals follow if it lingers.
        if not await self._link.stop() and self.state != BackendState.STOPPED:
            self._set_state(BackendState.STOPPED)

    def _set_state(self, state: BackendState) -> None:
        if state != self.state:
            self.state = state
            self.stateChanged.emit(state.value)


def _new_fold(session_id: str | None) -> SessionFold:
    """A session's fold (:mod:`ide.client.fold` and its events are imported with the first one)."""
    from ide.client.fold import SessionFold

    return SessionFold(session_id)
