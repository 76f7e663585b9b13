"""The ACP agent: initialize, sessions (new/load/list), modes, prompt turns and cancel over JSON-RPC.

It knows no feature: Arbor's own ``_arbor/*`` methods are served by the feature modules of
:mod:`ide.backend.extensions`, which also say what happens when a turn ends, is cancelled or a session is
loaded; the per-workspace services (index, language servers, memory, stores) are :mod:`ide.backend.services`;
a session is built whole here (:mod:`ide.backend.session`) and a prompt answered by :mod:`ide.backend.prompt`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, Agent, Client, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
)
from pydantic import ValidationError

from ide import __version__
from ide.backend import config_options
from ide.backend.extensions import registry
from ide.backend.prompt import answer_prompt, arbor_error
from ide.backend.services import Services, trust_notice
from ide.backend.transcript import Channel, replay
from ide.protocol import META_KEY, AgentMeta, ErrorInfo
from ide.protocol.modes import MODES
from ide.search.events import cap_text
from ide.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from ide.backend.session import Session
    from ide.changes.shadow import Shadow
    from ide.protocol.index import IndexChanged

# LangGraph, LangChain and the model layer are imported when the first session opens, not at start:
# they cost about a second, and `initialize` should answer before that.

log = logging.getLogger(__name__)

LIST_PAGE = 50
LOGGED_ERROR_CAP = 300
"""Characters of a refused request's reason kept in the log and the answer (a path may be megabytes)."""


class QuietRefusals(logging.Filter):
    """One line, not a traceback, for what the SDK refuses on its own: a notification with invalid params
    or an unknown method (JSON-RPC answers no notification, so the log is all that is left of it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, (RequestError, ValidationError)) and "notification" in str(record.msg):
            reason = str(error).splitlines()[0] if isinstance(error, RequestError) else _first_error(error)
            record.msg, record.args = f"{record.getMessage()}: {cap_text(reason, LOGGED_ERROR_CAP)}", ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"invalid params ({where}: {first['msg']})"


def _settings_error(exc: SettingsError) -> RequestError:
    return arbor_error(ErrorInfo(kind="settings", message=str(exc), fix="Fix the value, then try again."))


def _modes(current: str) -> SessionModeState:
    available = [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES.values()]
    return SessionModeState(current_mode_id=current, available_modes=available)


class ArborAgent(Agent):
    """Serves ACP for any client: Arbor's window, Zed, or the SDK's example client."""

    def __init__(self) -> None:
        self._conn: Client | None = None
        self._sessions: dict[str, Session] = {}
        self._base_settings: Settings | None = None
        self._client_caps: ClientCapabilities | None = None
        self.services = Services(on_index_change=self._index_changed)
        self._held_back: dict[str, str | None] = {}
        """Workspace → what its config asks for that waits for trust, told in the first turn."""

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        assert self._conn is not None, "on_connect was not called"
        return self._conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        if not isinstance(client_capabilities, (ClientCapabilities, type(None))):
            # The SDK turns capabilities it cannot read (a number, a string) into a plain dict of defaults.
            client_capabilities = ClientCapabilities.model_validate(client_capabilities)
        self._client_caps = client_capabilities
        try:
            self._base_settings = load_settings(None).settings
        except SettingsError as exc:
            raise _settings_error(exc) from None
        meta = AgentMeta(
            version=__version__,
            model=self._base_settings.llm.model,
            architectures=list(MODES),
            extensions=registry().advertised,
            data_dir=str(self._base_settings.resolved_data_dir()),
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
                field_meta={META_KEY: meta.model_dump()},
            ),
            agent_info=Implementation(name="arbor", title="Arbor", version=__version__),
            auth_methods=config_options.auth_methods(self._base_settings) or None,
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """An env-var method: its variable is set in this backend's environment (else a plain refusal)."""
        config_options.authenticate(self._base_settings or load_settings(None).settings, method_id)
        return AuthenticateResponse()

    def workspace(self, cwd: str) -> tuple[str, Settings]:
        shown = cap_text(cwd, LOGGED_ERROR_CAP)  # the answer must stay one short line, whatever was sent
        if not cwd or not os.path.isabs(cwd):
            raise RequestError.invalid_params(
                {"cwd": shown, "message": f"cwd must be an absolute path to the workspace, got {shown!r}"}
            )
        if not os.path.isdir(cwd):
            raise RequestError.invalid_params(
                {"cwd": shown, "message": f"cwd {shown} does not exist or is not a directory"}
            )
        if os.path.dirname(os.path.realpath(cwd)) == os.path.realpath(cwd):
            # Indexing and watching the whole machine would never finish (nor let the backend exit).
            message = f"cwd {cwd} is the root of the file system; open a project folder instead"
            raise RequestError.invalid_params({"cwd": cwd, "message": message})
        try:
            resolved = load_settings(Path(cwd))
        except SettingsError as exc:
            raise _settings_error(exc) from None
        self._held_back[cwd] = trust_notice(resolved)
        return cwd, resolved.settings

    async def _index_changed(self, change: IndexChanged) -> None:
        await registry().index_changed(self, change)

    async def _open(
        self,
        session_id: str,
        cwd: str,
        settings: Settings,
        mode: str,
        mcp_servers: Any = None,
        *,
        shadow: Shadow | None = None,
        saved_review: dict[str, Any] | None = None,
    ) -> Session:
        """The session, built whole: its channel to the client, MCP servers, notices, shadow and review."""
        from ide.backend.permissions import connect_mcp
        from ide.backend.session import Session

        services = await self.services.open(cwd, settings)
        connection = await connect_mcp(self.conn, session_id, mcp_servers, self._sessions.get(session_id))
        channel = Channel(self.conn, session_id, cwd, services.store, arbor_client=self.client_wants("tree"))
        notices = [note for note in (connection.notice(), self._held_back.get(cwd)) if note]
        session = Session(
            session_id,
            cwd,
            settings,
            services,
            channel,
            mode=mode,
            mcp=connection,
            notices=notices,
            shadow=shadow,
            saved_review=saved_review,
        )
        self._sessions[session_id] = session
        return session

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        cwd, settings = self.workspace(cwd)
        mode = settings.agent.architecture if settings.agent.architecture in MODES else "react"
        session_id = uuid.uuid4().hex
        self.services.store(settings).create(session_id, cwd, mode)
        session = await self._open(session_id, cwd, settings, mode, mcp_servers)
        mcp = {
            "connected": session.mcp.connected,
            "failed": session.mcp.failed,
            "tools": len(session.extra_tools),
        }
        return NewSessionResponse(
            session_id=session_id,
            modes=_modes(mode),
            config_options=await config_options.config_options(session),
            field_meta={META_KEY: {"mcp": mcp}},
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: Any = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        cwd, settings = self.workspace(cwd)
        store = self.services.store(settings)
        record = store.get(session_id, cwd)
        if record is None:
            shown = cap_text(session_id, LOGGED_ERROR_CAP)
            raise RequestError.invalid_params(
                {"sessionId": shown, "message": f"no session {shown} for workspace {cwd}"}
            )
        session = self._sessions.get(session_id)
        if session is None:
            saved = store.load_review(session_id, cwd)
            session = await self._open(
                session_id, cwd, settings, record.mode, mcp_servers, saved_review=saved
            )
            await config_options.restore(session, store.load_options(session_id, cwd))
        await replay(self.conn, store, session_id, cwd, arbor_client=self.client_wants("tree"))
        await session.channel.offer_commands()
        await registry().session_loaded(self, session)  # e.g. an interrupted workflow's /resume
        options = await config_options.config_options(session)
        return LoadSessionResponse(modes=_modes(session.mode), config_options=options)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        settings = self._base_settings or load_settings(None).settings
        if cwd is not None:
            cwd, settings = self.workspace(cwd)
        records = self.services.store(settings).list(cwd)
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = records[start : start + LIST_PAGE]
        more = start + LIST_PAGE < len(records)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(session_id=r.id, cwd=r.cwd, title=r.title, updated_at=r.updated_iso) for r in page
            ],
            next_cursor=str(start + LIST_PAGE) if more else None,
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> None:
        session = self.session(session_id)
        if mode_id not in MODES:
            message = f"there is no mode {mode_id!r}; modes: {', '.join(MODES)}"
            raise RequestError.invalid_params({"modeId": mode_id, "message": message})
        changed = mode_id != session.mode
        session.set_mode(mode_id)
        if changed:
            update = config_options.options_update(await config_options.config_options(session))
            await config_options.tell(session, update)

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        options = await config_options.set_option(self.session(session_id), config_id, value)
        return SetSessionConfigOptionResponse(config_options=list(options))

    async def open_session(
        self, cwd: str, settings: Settings, title: str, *, shadow: Shadow | None = None
    ) -> Session:
        """A new stored session titled ``title`` that no client has prompted (an extension's)."""
        session_id = uuid.uuid4().hex
        store = self.services.store(settings)
        store.create(session_id, cwd, "react")
        store.update(session_id, cwd, title=title)
        return await self._open(session_id, cwd, settings, "react", shadow=shadow)

    def find_session(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def sessions_in(self, cwd: str) -> list[Session]:
        real = os.path.realpath(cwd)
        return [s for s in self._sessions.values() if os.path.realpath(s.cwd) == real]

    def session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            shown = cap_text(session_id, LOGGED_ERROR_CAP)
            raise RequestError.invalid_params(
                {"sessionId": shown, "message": f"unknown session {shown}; call session/load first"}
            )
        return session

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        return await answer_prompt(self, self.session(session_id), prompt)

    def client_wants(self, feature: str) -> bool:
        """True when the client asked for an Arbor extension in ``_meta.arbor`` ("review", "tree")."""
        meta = (self._client_caps.field_meta or {}) if self._client_caps else {}
        return bool(isinstance(meta.get(META_KEY), dict) and meta[META_KEY].get(feature))

    def client_fs(self) -> FileSystemCapabilities | None:
        return self._client_caps.fs if self._client_caps else None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.prompting:
            session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from ide.changes import ChangeError

        handler = registry().handlers.get(method)
        if handler is None:
            raise RequestError.method_not_found(f"_{method}")
        try:
            return await handler.answer(self, params)
        except ValidationError as exc:
            raise RequestError.invalid_params({"errors": exc.errors(include_url=False)}) from None
        except ChangeError as exc:
            # Classified, so every client (the window, arbor run) shows the reason, not "Invalid params".
            raise arbor_error(ErrorInfo(kind="bad_request", message=str(exc))) from None
        except OSError as exc:
            # The file system refused (a name too long, a permission): the reason, not an internal error.
            log.warning("_%s: %s", method, cap_text(str(exc), LOGGED_ERROR_CAP))
            message = f"the file system refused it: {cap_text(str(exc), LOGGED_ERROR_CAP)}"
            raise arbor_error(ErrorInfo(kind="bad_request", message=message)) from None

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring extension notification _%s", method)

    async def close(self) -> None:
        """Stop running turns, the MCP servers, the workspaces' services and the checkpoint databases."""
        for session in self._sessions.values():
            if session.running:
                session.cancel()
        await asyncio.gather(*(s.mcp.aclose() for s in self._sessions.values() if s.mcp is not None))
        await self.services.close()
