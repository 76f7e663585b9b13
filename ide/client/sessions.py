"""A client's session requests, Qt-free: open a session or restore one (``session/load`` replays it), list
the workspace's sessions, send a prompt, set a config option — each within its declared limit
(:func:`ide.client.agentconn.within`), for the window's BackendBridge. The handshake and the rest of the
connection: :mod:`ide.client.agentconn`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ide.client.agentconn import DEFAULT_TIMEOUTS, RequestTimeouts, answered, within
from ide.client.agentproc import error_from_request

if TYPE_CHECKING:
    from datetime import datetime

    from acp.schema import PromptResponse

    from ide.protocol import ErrorInfo


def session_modes(state: Any) -> tuple[str, list[tuple[str, str, str]]]:
    """A ``SessionModeState`` as (current mode id, [(id, name, description)])."""
    return state.current_mode_id, [(m.id, m.name, m.description or "") for m in state.available_modes]


@dataclass
class OpenedSession:
    """The session :func:`open_session` opened."""

    session_id: str
    modes: Any
    """The agent's ``SessionModeState``, if it sent one."""
    replayed: bool
    """True when the session was restored with ``session/load`` (its history replayed)."""
    config_options: tuple[Any, ...] = ()
    """The agent's ``configOptions`` (the SDK's select and boolean options), if it sent any."""


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
                options = tuple((loaded.config_options or []) if loaded else [])
                return OpenedSession(resume, loaded.modes if loaded else None, True, options)
        else:
            on_replay_failed("The agent cannot restore sessions (no loadSession capability).")
    created = await within(conn.new_session(cwd=cwd, mcp_servers=[]), SESSION_NEW, timeouts)
    options = tuple(created.config_options or [])
    return OpenedSession(created.session_id, created.modes, False, options)


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
    from datetime import UTC, datetime

    with contextlib.suppress(ValueError, TypeError):
        moment = datetime.fromisoformat(text)  # type: ignore[arg-type]
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
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
        from datetime import UTC, datetime

        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found, key=lambda s: s.updated_at or oldest, reverse=True)

    return await answered(pages())


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

    return await answered(answer())


async def set_config_option(
    conn: Any,
    session_id: str,
    option_id: str,
    value: str | bool,
    timeouts: RequestTimeouts = DEFAULT_TIMEOUTS,
) -> tuple[Any, ...] | ErrorInfo | None:
    """Set the session's option ``option_id`` to ``value`` (``session/set_config_option``: a boolean for a
    boolean option, a value id for a select): the agent's options after it, an ErrorInfo for a refusal or no
    answer in time, None when the connection is lost, the answer is unreadable or carries no options."""
    from ide.protocol.standard import SESSION_SET_CONFIG_OPTION

    async def answer() -> tuple[Any, ...] | None:
        call = conn.set_config_option(config_id=option_id, session_id=session_id, value=value)
        response = await within(call, SESSION_SET_CONFIG_OPTION, timeouts)
        return tuple(response.config_options) if response is not None else None  # None: updates tell

    return await answered(answer())
