"""The Qt-free half of an ACP client connection: callbacks, handshake, sessions, prompt, typed requests and
notification routing — shared by the window's BackendBridge, its review connection and ``arbor run``.

The ACP SDK is imported only inside functions: the window loads it on a worker thread while the agent's
process starts (:mod:`ide.client.agentproc`). So are the wire models (pydantic) and the declarations of ACP's
own
requests: the window's first frame does without them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from acp.core import ClientSideConnection
    from acp.schema import (
        PermissionOption,
        PromptResponse,
        ReadTextFileResponse,
        RequestPermissionResponse,
        ToolCallUpdate,
        UserMessageChunk,
        WriteTextFileResponse,
    )
    from pydantic import BaseModel

    from ide.protocol import AgentMeta, ErrorInfo, TurnMeta
    from ide.protocol.method import Method, Notification, Request
    from ide.protocol.review import ApplyResult

from ide.client.agentproc import AgentProcess, client_version, error_from_request, no_answer_error

log = logging.getLogger(__name__)

P = TypeVar("P", bound="BaseModel")
T = TypeVar("T", bound="BaseModel")
R = TypeVar("R")


@dataclass(frozen=True)
class RequestTimeouts:
    """How long a client waits for answers: each request's declared limit (``Request.timeout_s``, see
    :mod:`ide.protocol.method` and :mod:`ide.protocol.standard`) unless ``overrides`` names it; a window
    or a test may pass shorter ones."""

    overrides: Mapping[Request, float | None] = field(default_factory=dict)
    """Limits by declaration (None: no limit), in place of the declared ones."""

    def of(self, request: Request) -> float | None:
        """The limit of ``request``, None for none."""
        return self.overrides.get(request, request.timeout_s)


DEFAULT_TIMEOUTS = RequestTimeouts()
"""Every request as declared."""


class NoAnswer(TimeoutError):
    """The peer did not answer a request in time. The SDK forgot the request: a late answer is dropped."""

    def __init__(self, method: str, seconds: float) -> None:
        self.method, self.seconds = method, seconds
        self.info = no_answer_error(seconds, method)
        super().__init__(self.info.message)


async def within(call: Awaitable[R], request: Request, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS) -> R:
    """The answer to ``request``, which ``call`` sends; :class:`NoAnswer` (naming the request by its wire
    name) when it does not come within its limit (the wait is cancelled, which takes the request off the
    connection's pending list)."""
    seconds = timeouts.of(request)
    try:
        return await asyncio.wait_for(call, seconds)
    except TimeoutError:
        if seconds is None:
            raise
        raise NoAnswer(request.wire_name, seconds) from None


def load_sdk() -> None:
    """Import the ACP SDK (blocking, ~1 s the first time); the window runs it on a worker thread."""
    import acp.schema  # noqa: F401


PermissionHandler = Callable[[str, "ToolCallUpdate", list["PermissionOption"]], Awaitable[str | None]]
"""Decides a permission request: the chosen option id, or None to refuse."""


class FsHandler(Protocol):
    """Serves an agent's ``fs/read_text_file`` and ``fs/write_text_file``; raises ``acp.RequestError`` to
    refuse (the agent gets that JSON-RPC error)."""

    async def read_text_file(
        self, session_id: str, path: str, line: int | None, limit: int | None
    ) -> str: ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> None: ...


class ClientCallbacks:
    """What the agent may call on a client, forwarded to plain callables. Deliberately not a subclass of
    ``acp.Client``: the Protocol's stub methods would answer terminal requests with null instead of
    "method not found". ``fs/*`` goes to the ``fs_handler`` when there is one, else "method not found"."""

    def __init__(
        self,
        on_update: Callable[[str, Any], None],
        permission_handler: Callable[[], PermissionHandler | None],
        on_notification: Callable[[str, dict[str, Any]], None],
        fs_handler: Callable[[], FsHandler | None] = lambda: None,
    ) -> None:
        self._on_update = on_update
        self._permission_handler = permission_handler
        self._on_notification = on_notification
        self._fs_handler = fs_handler

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        from acp import RequestError
        from acp.schema import ReadTextFileResponse

        handler = self._fs_handler()
        if handler is None:
            raise RequestError.method_not_found("fs/read_text_file")
        return ReadTextFileResponse(content=await handler.read_text_file(session_id, path, line, limit))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        from acp import RequestError
        from acp.schema import WriteTextFileResponse

        handler = self._fs_handler()
        if handler is None:
            raise RequestError.method_not_found("fs/write_text_file")
        await handler.write_text_file(session_id, path, content)
        return WriteTextFileResponse()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # No await before the handler: notifications are handled as tasks in arrival order, and the
        # prompt response must not overtake the updates that preceded it.
        self._on_update(session_id, update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        # Without a handler (no permission dialog) refusing is the safe answer.
        handler = self._permission_handler()
        return permission_response(await handler(session_id, tool_call, options) if handler else None)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._on_notification(method, params)


METHOD_NOT_FOUND = -32601


class QuietUnknownNotifications(logging.Filter):
    """The ACP SDK logs a traceback (on the root logger) for every notification it has no handler for.
    Agents send their own (Qwen Code: ``qwen/notify/session/prompt-suggestion``, once a turn), which a
    client may ignore: each becomes one debug line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Unhandled error while handling notification"):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if getattr(error, "code", None) != METHOD_NOT_FOUND:
            return True
        method = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        log.debug("ignoring the agent's notification %s: no handler", method)
        return False


def quiet_unknown_notifications() -> None:
    """Install :class:`QuietUnknownNotifications` on the root logger, once."""
    root = logging.getLogger()
    if not any(isinstance(installed, QuietUnknownNotifications) for installed in root.filters):
        root.addFilter(QuietUnknownNotifications())


def connect(agent: AgentProcess, callbacks: ClientCallbacks) -> ClientSideConnection:
    """The SDK's client connection over the agent's stdio (the SDK must be loaded: :func:`load_sdk`); an
    extension notification of the agent's own that nothing handles is ignored quietly."""
    from acp import connect_to_agent

    quiet_unknown_notifications()

    process = agent.process
    assert process.stdin is not None and process.stdout is not None
    return connect_to_agent(callbacks, process.stdin, process.stdout)  # type: ignore[arg-type]


def session_modes(state: Any) -> tuple[str, list[tuple[str, str, str]]]:
    """A ``SessionModeState`` as (current mode id, [(id, name, description)])."""
    return state.current_mode_id, [(m.id, m.name, m.description or "") for m in state.available_modes]


def permission_response(choice: str | None) -> RequestPermissionResponse:
    """The answer to a permission request: the chosen option id, or None to refuse."""
    from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

    if choice is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice, outcome="selected"))


@dataclass
class AgentHello:
    """What ``initialize`` told about the agent."""

    meta: AgentMeta | None
    """Arbor's capabilities (None for an ACP agent that is not Arbor)."""
    name: str | None
    can_load_session: bool
    can_list_sessions: bool = False
    """The agent lists its sessions (``sessionCapabilities.list``)."""


async def initialize(
    conn: Any,
    *,
    meta: dict[str, bool],
    client: str = "arbor",
    title: str | None = "Arbor",
    version: str | None = None,
    fs: bool = False,
    timeouts: RequestTimeouts = DEFAULT_TIMEOUTS,
) -> AgentHello:
    """Send ``initialize`` with Arbor's client capabilities ``meta`` (and ``fs/*`` when ``fs``; never
    ``terminal/*``) and read the agent's answer; :class:`NoAnswer` when none comes in time."""
    from acp import PROTOCOL_VERSION
    from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
    from pydantic import ValidationError

    from ide.protocol import META_KEY, AgentMeta
    from ide.protocol.standard import INITIALIZE

    greeting = conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
            terminal=False,
            field_meta={META_KEY: meta},
        ),
        client_info=Implementation(name=client, title=title, version=version or client_version()),
    )
    init = await within(greeting, INITIALIZE, timeouts)
    capabilities = init.agent_capabilities
    raw_meta = (capabilities.field_meta or {}).get(META_KEY) if capabilities else None
    try:
        agent_meta = AgentMeta.model_validate(raw_meta) if raw_meta is not None else None
    except ValidationError:
        log.warning("ignoring malformed agentCapabilities._meta.%s: %r", META_KEY, raw_meta)
        agent_meta = None
    name = (init.agent_info.title or init.agent_info.name) if init.agent_info else None
    listing = capabilities.session_capabilities if capabilities else None
    return AgentHello(
        agent_meta,
        name,
        bool(capabilities and capabilities.load_session),
        bool(listing and listing.list is not None),
    )


@dataclass
class OpenedSession:
    """The session :func:`open_session` opened."""

    session_id: str
    modes: Any
    """The agent's ``SessionModeState``, if it sent one."""
    replayed: bool
    """True when the session was restored with ``session/load`` (its history replayed)."""


async def open_session(
    conn: Any,
    cwd: str,
    resume: str | None,
    can_load: bool,
    on_replay: Callable[[], None],
    on_replay_failed: Callable[[str], None],
    timeouts: RequestTimeouts = DEFAULT_TIMEOUTS,
) -> OpenedSession:
    """Restore the session ``resume`` (``on_replay`` just before its history is replayed), else open a new
    one (``on_replay_failed`` says why a restore was not possible); :class:`NoAnswer` when the agent does
    not answer in time."""
    from acp import RequestError

    from ide.protocol.standard import SESSION_LOAD, SESSION_NEW

    if resume is not None:
        if can_load:
            on_replay()
            try:
                load = conn.load_session(cwd=cwd, session_id=resume, mcp_servers=[])
                loaded = await within(load, SESSION_LOAD, timeouts)
            except RequestError as exc:
                on_replay_failed(error_from_request(exc).message)
            else:
                return OpenedSession(resume, loaded.modes if loaded else None, replayed=True)
        else:
            on_replay_failed("The agent cannot restore sessions (no loadSession capability).")
    created = await within(conn.new_session(cwd=cwd, mcp_servers=[]), SESSION_NEW, timeouts)
    return OpenedSession(created.session_id, created.modes, replayed=False)


@dataclass(frozen=True)
class SessionSummary:
    """One of a workspace's sessions as ``session/list`` gives it."""

    session_id: str
    title: str | None
    """Set from the session's first prompt (None until there was one)."""
    updated_at: datetime | None
    """When the session last changed (None when the agent did not say)."""


LIST_PAGES = 20  # of session/list, 50 sessions each from Arbor's backend


def _when(text: str | None) -> datetime | None:
    with contextlib.suppress(ValueError, TypeError):
        moment = datetime.fromisoformat(text)  # type: ignore[arg-type]
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


async def _answered(call: Awaitable[R]) -> R | ErrorInfo | None:
    """What ``call`` returns, an ErrorInfo for the agent's refusal or no answer in time, or None when the
    connection is lost (the process died) or the answer is unreadable."""
    from acp import RequestError
    from pydantic import ValidationError

    try:
        return await call
    except RequestError as exc:
        return error_from_request(exc)
    except NoAnswer as exc:
        return exc.info
    except (ConnectionError, ValidationError):
        return None


async def list_sessions(
    conn: Any, cwd: str, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS
) -> list[SessionSummary] | ErrorInfo | None:
    """The sessions of the workspace ``cwd``, newest first: an ErrorInfo for a refusal or no answer in
    time, None when the connection is lost (the process died) or the answer is unreadable."""
    from ide.protocol.standard import SESSION_LIST

    async def pages() -> list[SessionSummary]:
        found: list[SessionSummary] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await within(conn.list_sessions(cwd=cwd, cursor=cursor), SESSION_LIST, timeouts)
            found += [SessionSummary(s.session_id, s.title, _when(s.updated_at)) for s in page.sessions]
            cursor = page.next_cursor
            if not cursor:
                break
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found, key=lambda s: s.updated_at or oldest, reverse=True)

    return await _answered(pages())


async def prompt(
    conn: Any, session_id: str, text: str, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS
) -> PromptResponse | ErrorInfo | None:
    """Send ``text`` as a turn and wait for its end (by default as long as it takes: :func:`cancel` ends
    it): the response, an ErrorInfo for a refusal or no answer in time, or None when the connection is
    lost or the answer is unreadable."""
    from acp import text_block

    from ide.protocol.standard import SESSION_PROMPT

    async def answer() -> PromptResponse:
        turn = conn.prompt(session_id=session_id, prompt=[text_block(text)])
        return await within(turn, SESSION_PROMPT, timeouts)

    return await _answered(answer())


async def cancel(conn: Any, session_id: str) -> None:
    """Ask the agent to end the session's running turn (nothing when the connection is gone)."""
    with contextlib.suppress(ConnectionError):
        await conn.cancel(session_id=session_id)


async def apply_all(
    conn: Any, session_id: str, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS, *, message: str | None = None
) -> ApplyResult:
    """Accept every hunk of the session's change set and apply it, as the window's Accept all + Apply
    (``arbor run --apply``, ``arbor eval``), committed with ``message`` (default: from the session's
    title); the agent's refusal raises its ``RequestError``, and so does no answer in time (carrying
    Arbor's ErrorInfo that says so)."""
    from acp import RequestError

    from ide.protocol import ERROR_CODE, error_data
    from ide.protocol.review import APPLY, DECIDE, ApplyParams, DecideParams

    decide = DecideParams(session_id=session_id, decision="accepted", all=True)
    try:
        # Only whether it was refused matters here: its answer (the change set) is not read.
        await within(conn.ext_method(DECIDE, decide.model_dump(mode="json")), DECIDE, timeouts)
        return await call(conn, APPLY, ApplyParams(session_id=session_id, message=message), timeouts)
    except NoAnswer as exc:
        raise RequestError(ERROR_CODE, exc.info.message, error_data(exc.info)) from None


async def call(conn: Any, method: Method[P, T], params: P, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS) -> T:
    """Call the extension ``_method`` and read its answer as the method's result, waiting as long as the
    method's declaration says (unless ``timeouts`` overrides it); raises what the connection raises
    (``acp.RequestError``, :class:`NoAnswer`, pydantic's ``ValidationError``, …)."""
    answer = await within(conn.ext_method(method, params.model_dump(mode="json")), method, timeouts)
    return method.result.model_validate(answer)


async def ask(
    conn: Any, method: Method[P, T], params: P, timeouts: RequestTimeouts = DEFAULT_TIMEOUTS
) -> T | ErrorInfo | None:
    """Call the extension ``_method`` and read its answer: the result, an ErrorInfo for a refusal, an
    unreadable answer or none within the method's limit (:func:`call`), or None when the connection is
    lost (the process died)."""
    from acp import RequestError
    from pydantic import ValidationError

    from ide.protocol import ErrorInfo

    try:
        return await call(conn, method, params, timeouts)
    except RequestError as exc:
        return error_from_request(exc)
    except NoAnswer as exc:
        return exc.info
    except ValidationError as exc:
        log.warning("malformed answer to _%s: %s", method, exc)
        return ErrorInfo(
            kind="internal",
            message=f"The backend answered _{method} with data this window cannot read.",
            fix="The window and the backend may be different Arbor versions; reinstall both.",
        )
    except ConnectionError:
        return None


class NotificationRouter:
    """Extension notifications to their subscribers: each read as its model, one that carries a
    ``session_id`` delivered only when that is the current session's."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[tuple[type[BaseModel], Callable[[Any], None]]]] = {}

    def subscribe(self, notification: Notification[T], handler: Callable[[T], None]) -> None:
        self._subscribers.setdefault(notification, []).append((notification.payload, handler))

    def dispatch(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        from pydantic import ValidationError

        for model, handler in self._subscribers.get(method, ()):
            try:
                message = model.model_validate(params)
            except ValidationError as exc:
                log.warning("ignoring malformed _%s: %s", method, exc)
                return
            if getattr(message, "session_id", session_id) == session_id:
                handler(message)
        if method not in self._subscribers:
            log.debug("ignoring extension notification _%s", method)


def turn_meta(field_meta: dict[str, Any] | None) -> TurnMeta | None:
    """Arbor's figures of a finished turn from ``PromptResponse._meta`` (None if absent or malformed)."""
    from pydantic import ValidationError

    from ide.protocol import META_KEY, TurnMeta

    raw = (field_meta or {}).get(META_KEY)
    if raw is None:
        return None
    try:
        return TurnMeta.model_validate(raw)
    except ValidationError:
        log.warning("ignoring malformed PromptResponse._meta.%s", META_KEY)
        return None


def local_user_message(text: str) -> UserMessageChunk:
    """The update a client shows for a prompt the user just sent (agents replay these on load)."""
    from acp import text_block
    from acp.schema import UserMessageChunk

    return UserMessageChunk(session_update="user_message_chunk", content=text_block(text))
