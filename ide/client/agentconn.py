"""The client side of an ACP connection, Qt-free: what an agent may call on the client (its callbacks, and
the optional capabilities a client offers: ``fs/*``, an agent's shadow), connecting them, the handshake,
and the requests with their time limits — shared by the window's BackendBridge, its review connection
(:mod:`ide.client.foreign`), ``arbor run`` and ``arbor eval``. Session requests (open or restore, list,
prompt): :mod:`ide.client.sessions`; extension notifications: :mod:`ide.client.notifications`.

The ACP SDK is imported only inside functions: the window loads it on a worker thread while the agent's
process starts (:mod:`ide.client.agentproc`). So are the wire models (pydantic) and the declarations of ACP's
own requests: the window's first frame does without them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from acp.core import ClientSideConnection
    from acp.schema import (
        PermissionOption,
        ReadTextFileResponse,
        RequestPermissionResponse,
        ToolCallUpdate,
        WriteTextFileResponse,
    )
    from pydantic import BaseModel

    from ide.client.agentproc import AgentChoice, AgentProcess
    from ide.protocol import AgentMeta, ErrorInfo, TurnMeta
    from ide.protocol.method import Method, Request
    from ide.protocol.review import ApplyResult

from ide.client.agentproc import client_version, error_from_request, no_answer_error
from ide.client.notifications import quiet_unknown_notifications

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
    import asyncio

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


@dataclass(frozen=True)
class Placement:
    """Where and how an agent that works in a shadow is started."""

    cwd: str
    """The shadow of the workspace: the agent's cwd, and its sessions'."""
    command: list[str]
    """Its command line as started (under bwrap when confined)."""


class ShadowCapability(FsHandler, Protocol):
    """A client's optional capability for an agent that works in a shadow of the workspace
    (:attr:`AgentChoice.works_in_shadow`), whose changes are captured into Arbor's review
    (:mod:`ide.client.foreign`). A client that offers it serves ``fs/*`` through it (and says so at
    ``initialize``), asks it where such an agent starts, and lets it act before each of its prompts."""

    async def place(self, choice: AgentChoice, resume: str | None) -> Placement | None:
        """Where ``choice`` starts, asked before each start with the session being resumed: the shadow and
        the command line, or None for the workspace itself and the choice's own command (no shadow could
        be made; the capability says why). OSError: it cannot start."""
        ...

    async def turn_start(self, prompt: str) -> None:
        """Before each prompt to an agent started in a shadow: the shadow takes in what the user decided."""
        ...


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


def connect(agent: AgentProcess, callbacks: ClientCallbacks) -> ClientSideConnection:
    """The SDK's client connection over the agent's stdio (the SDK must be loaded: :func:`load_sdk`); an
    extension notification of the agent's own that nothing handles is ignored quietly."""
    from acp import connect_to_agent

    quiet_unknown_notifications()

    process = agent.process
    assert process.stdin is not None and process.stdout is not None
    return connect_to_agent(callbacks, process.stdin, process.stdout)  # type: ignore[arg-type]


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
    auth_methods: tuple[Any, ...] = ()
    """Its ``authMethods`` as the SDK read them (env-var, terminal and agent methods; :mod:`ide.client.auth`
    reads them when a session asks for authentication)."""


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
    ``terminal/*``, but terminal auth methods: the client tells the user the command to run) and read the
    agent's answer; :class:`NoAnswer` when none comes in time."""
    from acp import PROTOCOL_VERSION
    from acp.schema import AuthCapabilities, ClientCapabilities, FileSystemCapabilities, Implementation
    from pydantic import ValidationError

    from ide.protocol import META_KEY, AgentMeta
    from ide.protocol.standard import INITIALIZE

    greeting = conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
            terminal=False,
            auth=AuthCapabilities(terminal=True),
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
        tuple(init.auth_methods or ()),
    )


async def answered(call: Awaitable[R], method: str | None = None) -> R | ErrorInfo | None:
    """What ``call`` returns; an ErrorInfo for the agent's refusal, no answer in time or — for the extension
    request ``method`` — an unreadable answer; None when the connection is lost (the process died) or an
    answer of ACP's own is unreadable."""
    from acp import RequestError
    from pydantic import ValidationError

    from ide.protocol import ErrorInfo

    try:
        return await call
    except RequestError as exc:
        return error_from_request(exc)
    except NoAnswer as exc:
        return exc.info
    except ValidationError as exc:
        if method is None:
            return None
        log.warning("malformed answer to _%s: %s", method, exc)
        return ErrorInfo(
            kind="internal",
            message=f"The backend answered _{method} with data this window cannot read.",
            fix="The window and the backend may be different Arbor versions; reinstall both.",
        )
    except ConnectionError:
        return None


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
    return await answered(call(conn, method, params, timeouts), method)


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
