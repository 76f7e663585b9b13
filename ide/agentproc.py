"""The ACP agent process and the client's side of its handshake, Qt-free: spawn, stderr, stop, initialize.

The window's :class:`~ide.app.acp_client.BackendBridge` and ``arbor run`` (:mod:`ide.headless`) share it.
The agent is a child with stdio pipes: stdout/stdin carry JSON-RPC, stderr is drained continuously into a
bounded tail (a chatty agent must never block on a full pipe). Its own process group means stopping it
also stops the language servers it spawned. The ACP SDK is imported only inside functions: the window
loads it on a worker thread while the process starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from ide import self_command
from ide.protocol import ERROR_CODE, META_KEY, AgentMeta, ErrorInfo, TurnMeta, error_info_from_data

if TYPE_CHECKING:
    from acp import RequestError
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

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

BACKEND_COMMAND_ENV = "ARBOR_BACKEND_COMMAND"

STDIO_LIMIT = 50 * 1024 * 1024
"""Reader limit for the agent's stdout; asyncio's 64 KiB default is smaller than some ACP lines."""
EOF_GRACE_S = 1.0
STOP_GRACE_S = 3.0
STDERR_TAIL_LINES = 200
STDERR_LINE_CHARS = 2000


def default_backend_command() -> list[str]:
    """``ARBOR_BACKEND_COMMAND`` (shell-quoted) if set, else ``python -m ide acp`` of this interpreter."""
    override = os.environ.get(BACKEND_COMMAND_ENV, "").strip()
    if override:
        return shlex.split(override)
    return self_command("acp")


ARBOR_AGENT = "arbor"
"""The agent name that means Arbor's own backend."""


@dataclass(frozen=True)
class AgentChoice:
    """The agent the window drives: a name for menus, its command line and the environment it adds."""

    name: str
    command: list[str]
    env: dict[str, str]

    @property
    def is_arbor(self) -> bool:
        return self.name == ARBOR_AGENT


def arbor_agent() -> AgentChoice:
    """Arbor's own backend (``ARBOR_BACKEND_COMMAND`` when set)."""
    return AgentChoice(ARBOR_AGENT, default_backend_command(), {})


def resolve_agent(spec: str, agents: Mapping[str, Any]) -> AgentChoice:
    """``--agent`` as given: ``arbor``, a name of the ``[agents]`` settings table (each with ``command``,
    ``args``, ``env``), else a shell-quoted command line whose program must exist. ValueError says why not."""
    text = spec.strip()
    if text.lower() == ARBOR_AGENT:
        return arbor_agent()
    if text in agents:
        agent = agents[text]
        return AgentChoice(text, [agent.command, *agent.args], dict(agent.env))
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"--agent {spec!r}: not a command line ({exc})") from None
    if not argv:
        raise ValueError("--agent needs a name from [agents] in the settings, or a command line")
    import shutil

    if shutil.which(argv[0]) is None:
        known = ", ".join([ARBOR_AGENT, *agents]) or ARBOR_AGENT
        raise ValueError(
            f"--agent {spec!r}: no agent of that name in the settings ({known}) and no program "
            f"{argv[0]!r} on PATH"
        )
    return AgentChoice(command_name(argv), argv, {})


def command_name(argv: Sequence[str]) -> str:
    """A short name for an agent given as a command line: its words without directories."""
    return " ".join(Path(word).name or word for word in argv)[:60]


def client_version() -> str:
    """Arbor's version as installed (``ide.__version__`` would import the package root's siblings)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("arbor-ide")
    except PackageNotFoundError:
        return "0.0.0+source"


def error_from_request(exc: RequestError) -> ErrorInfo:
    """What to tell the user about a JSON-RPC error: Arbor's classified ErrorInfo, or its plain message."""
    if exc.code == ERROR_CODE:
        info = error_info_from_data(exc.data)
        if info is not None:
            return info
    message = str(exc)
    if isinstance(exc.data, dict):
        detail = exc.data.get("message") or exc.data.get("details")
        if isinstance(detail, str) and detail:
            message = detail
    kind = "bad_request" if exc.code in (-32600, -32601, -32602) else "internal"
    return ErrorInfo(kind=kind, message=f"The backend refused the request: {message}")


class BackendState(StrEnum):
    """Where the backend is in its life; the status bar shows it and the chat enables buttons by it."""

    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPED = "stopped"


class StderrTail:
    """The last lines a process wrote to stderr, bounded in lines and in line length."""

    def __init__(self, max_lines: int = STDERR_TAIL_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = ""

    def feed(self, data: bytes) -> None:
        text = self._partial + data.decode("utf-8", errors="replace")
        *complete, self._partial = text.split("\n")
        for line in complete:
            self._lines.append(line.rstrip("\r")[:STDERR_LINE_CHARS])
        self._partial = self._partial[-STDERR_LINE_CHARS:]

    def text(self, lines: int | None = None) -> str:
        """The last ``lines`` lines (all kept lines by default), newest last."""
        kept = [*self._lines, self._partial] if self._partial else list(self._lines)
        kept = kept[-(lines or self._lines.maxlen or len(kept)) :]
        return "\n".join(kept).strip("\n")


async def spawn_agent(
    command: Sequence[str], env: Mapping[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``command`` with piped stdio in a new process group (``env`` replaces the environment)."""
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
        limit=STDIO_LIMIT,
        start_new_session=True,
    )


async def drain_stderr(stream: asyncio.StreamReader, tail: StderrTail) -> None:
    """Read ``stream`` into ``tail`` until EOF."""
    while True:
        data = await stream.read(65536)
        if not data:
            return
        tail.feed(data)


def signal_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Send ``sig`` to the process's group when it leads one, else to the process alone."""
    if process.returncode is not None:
        return
    try:
        if os.getpgid(process.pid) != process.pid:
            raise ProcessLookupError  # not a group leader: never signal the group we are in
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)


async def stop_agent(
    process: asyncio.subprocess.Process,
    conn: Any = None,
    *,
    eof_grace: float = EOF_GRACE_S,
    grace: float = STOP_GRACE_S,
) -> None:
    """Close ``conn`` (bounded), then stdin (an ACP agent's cue to exit), then SIGTERM and SIGKILL the
    group, each after its grace; returns once the process is reaped (or SIGKILL's grace ran out)."""
    # Closing the connection first lets its sender finish what it queued, so closing stdin under it
    # cannot fail a write. Bounded: a hung agent with a full pipe must not hold the stop.
    if conn is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.close(), 1.0)
    if process.returncode is not None:
        return
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for sig, wait_s in ((None, eof_grace), (signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        if sig is not None:
            signal_group(process, sig)
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), wait_s)
            return
        except TimeoutError:
            continue


class AgentProcess:
    """A running agent: its process, the tail of its stderr (drained continuously), its polite stop."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.stderr = StderrTail()
        self._drain = asyncio.ensure_future(drain_stderr(process.stderr, self.stderr))

    @classmethod
    async def spawn(cls, command: Sequence[str], env: Mapping[str, str] | None = None) -> AgentProcess:
        """Start ``command`` (see :func:`spawn_agent`); OSError when it cannot be run."""
        return cls(await spawn_agent(command, env))

    async def wait(self) -> int:
        """The exit code, once the process is reaped and its last stderr lines are in the tail."""
        code = await self.process.wait()
        # The last stderr lines explain a death; a grandchild holding the pipe must not delay us.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drain), 1.0)
        return code

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the agent's process group."""
        signal_group(self.process, sig)

    async def stop(self, conn: Any = None, *, eof_grace: float = EOF_GRACE_S) -> None:
        """See :func:`stop_agent`."""
        await stop_agent(self.process, conn, eof_grace=eof_grace)


def start_error(command: Sequence[str], exc: OSError) -> ErrorInfo:
    """What to tell the user when the backend command cannot be run at all."""
    return ErrorInfo(
        kind="internal",
        message=f"Cannot start the backend `{shlex.join(command)}`: {exc.strerror or exc}",
        fix=f"Check that Arbor is installed in this Python, or set {BACKEND_COMMAND_ENV}.",
    )


def no_answer_error(seconds: float) -> ErrorInfo:
    """What to tell the user when the backend does not answer ``initialize``."""
    return ErrorInfo(
        kind="internal",
        message=f"The backend did not answer within {seconds:.0f} s.",
        fix="Run `arbor doctor` in a terminal to see what it is waiting for.",
    )


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


def connect(agent: AgentProcess, callbacks: ClientCallbacks) -> ClientSideConnection:
    """The SDK's client connection over the agent's stdio (the SDK must be loaded: :func:`load_sdk`)."""
    from acp import connect_to_agent

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
) -> AgentHello:
    """Send ``initialize`` with Arbor's client capabilities ``meta`` (and ``fs/*`` when ``fs``; never
    ``terminal/*``) and read the agent's answer."""
    from acp import PROTOCOL_VERSION
    from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
            terminal=False,
            field_meta={META_KEY: meta},
        ),
        client_info=Implementation(name=client, title=title, version=version or client_version()),
    )
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
) -> OpenedSession:
    """Restore the session ``resume`` (``on_replay`` just before its history is replayed), else open a new
    one (``on_replay_failed`` says why a restore was not possible)."""
    from acp import RequestError

    if resume is not None:
        if can_load:
            on_replay()
            try:
                loaded = await conn.load_session(cwd=cwd, session_id=resume, mcp_servers=[])
            except RequestError as exc:
                on_replay_failed(error_from_request(exc).message)
            else:
                return OpenedSession(resume, loaded.modes if loaded else None, replayed=True)
        else:
            on_replay_failed("The agent cannot restore sessions (no loadSession capability).")
    created = await conn.new_session(cwd=cwd, mcp_servers=[])
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


async def list_sessions(conn: Any, cwd: str) -> list[SessionSummary] | ErrorInfo | None:
    """The sessions of the workspace ``cwd``, newest first: an ErrorInfo for a refusal, None when the
    connection is lost (the process died) or the answer is unreadable."""
    from acp import RequestError

    found: list[SessionSummary] = []
    cursor: str | None = None
    try:
        for _ in range(LIST_PAGES):
            page = await conn.list_sessions(cwd=cwd, cursor=cursor)
            found += [SessionSummary(s.session_id, s.title, _when(s.updated_at)) for s in page.sessions]
            cursor = page.next_cursor
            if not cursor:
                break
    except RequestError as exc:
        return error_from_request(exc)
    except (ConnectionError, ValidationError):
        return None
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(found, key=lambda s: s.updated_at or oldest, reverse=True)


async def prompt(conn: Any, session_id: str, text: str) -> PromptResponse | ErrorInfo | None:
    """Send ``text`` as a turn and wait for its end: the response, an ErrorInfo for a refusal, or None when
    the connection is lost or the answer is unreadable."""
    from acp import RequestError, text_block

    try:
        return await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    except RequestError as exc:
        return error_from_request(exc)
    except (ConnectionError, ValidationError):
        return None


async def cancel(conn: Any, session_id: str) -> None:
    """Ask the agent to end the session's running turn (nothing when the connection is gone)."""
    with contextlib.suppress(ConnectionError):
        await conn.cancel(session_id=session_id)


async def ask(conn: Any, method: str, params: BaseModel, result_type: type[T]) -> T | ErrorInfo | None:
    """Call the extension ``_method`` and read its answer: the result, an ErrorInfo for a refusal or an
    unreadable answer, or None when the connection is lost (the process died)."""
    from acp import RequestError

    try:
        return result_type.model_validate(await conn.ext_method(method, params.model_dump(mode="json")))
    except RequestError as exc:
        return error_from_request(exc)
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

    def subscribe(self, method: str, model: type[BaseModel], handler: Callable[[Any], None]) -> None:
        self._subscribers.setdefault(method, []).append((model, handler))

    def dispatch(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
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
