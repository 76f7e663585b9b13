"""The ACP agent: initialize, sessions (new/load/list), modes, prompt turns and cancel over JSON-RPC."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sqlite3
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    Client,
    RequestError,
    text_block,
    tool_diff_content,
    update_agent_message,
    update_agent_thought,
    update_user_message,
)
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionNotification,
    ToolCallUpdate,
)
from pydantic import BaseModel

from ide import __version__
from ide.backend.limits import DIFF_INLINE_CAP
from ide.backend.store import SessionStore
from ide.protocol import ERROR_CODE, META_KEY, AgentMeta, ErrorInfo, error_data
from ide.protocol import index as ix
from ide.protocol import lsp as lp
from ide.protocol import memory as mp
from ide.protocol import model as md
from ide.protocol import review as rv
from ide.protocol import workflow as wf
from ide.protocol.review import REVIEW_METHODS
from ide.protocol.tree import BRANCH_DIFF, TREE_NOTIFICATION, BranchDiffParams, TreeEvent
from ide.settings import ResolvedSettings, Settings, SettingsError, load_settings

if TYPE_CHECKING:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from ide.backend.session import Session, TurnResult
    from ide.codeintel.index.service import IndexService
    from ide.codeintel.lsp import LspBridge
    from ide.memory.store import MemoryStore
    from ide.workflows.mode import ActiveRun

# LangGraph, LangChain and the model layer are imported when the first session opens, not at start:
# they cost about a second, and `initialize` should answer before that.

log = logging.getLogger(__name__)

MODES = {
    "react": SessionMode(
        id="react",
        name="ReAct",
        description="Think, call a tool, read the result, repeat until the answer is found",
    ),
    "lats": SessionMode(
        id="lats",
        name="LATS tree search",
        description="Try several actions in parallel branches, score them, search on from the best "
        "(UCT), learn from failures; you review the best branch's changes",
    ),
    "tot": SessionMode(
        id="tot",
        name="Tree of Thoughts",
        description="Planner, researcher, analyzer and critic explore approaches; the synthesizer "
        "answers from the best ones (read-only)",
    ),
    "plan": SessionMode(
        id="plan",
        name="Plan / execute / replan",
        description="A planner writes tasks, an executor does them one by one, a replanner revises the "
        "plan after each",
    ),
    "workflow": SessionMode(
        id="workflow",
        name="Workflow",
        description="The orchestrator picks a YAML workflow (feature, bugfix, refactor, investigate…) and "
        "its optional stages; stages get retrieved context, tests and routing on failure (/workflow NAME)",
    ),
    "auto": SessionMode(
        id="auto",
        name="Auto",
        description="The orchestrator model picks ReAct for simple questions and LATS for multi-step changes",
    ),
}
"""Agent architectures offered as ACP session modes."""

LIST_PAGE = 50

TREE_RECORD = "_arbor_tree"
"""Key of a stored history entry holding a batch of search-tree events instead of a session update."""


def arbor_error(info: ErrorInfo) -> RequestError:
    """A JSON-RPC error carrying a classified, fixable failure."""
    return RequestError(ERROR_CODE, info.text(), error_data(info))


def _settings_error(exc: SettingsError) -> RequestError:
    return arbor_error(ErrorInfo(kind="settings", message=str(exc), fix="Fix the value, then try again."))


def _prompt_text(blocks: list[Any]) -> str:
    """The prompt as text: text blocks, plus the text of embedded resources and links to others."""
    parts = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(f"<file uri={resource.uri!r}>\n{text}\n</file>" if text else f"[{resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
    return "\n\n".join(p for p in parts if p)


def _line_texts(places: list[tuple[Path, int]], documents: dict[Path, str]) -> list[str]:
    """The text of each (path, line), for a references list (proposed text for changed files)."""
    cache: dict[Path, list[str]] = {}
    texts = []
    for path, line in places:
        if path not in cache:
            try:
                text = documents.get(path) or path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            cache[path] = text.splitlines()
        lines = cache[path]
        texts.append(lines[line - 1].strip()[:200] if 0 < line <= len(lines) else "")
    return texts


def trust_notice(resolved: ResolvedSettings) -> str | None:
    """What the first turn tells any ACP client about settings held back until the workspace is trusted."""
    if not resolved.held_back:
        return None
    lines = [
        f"This workspace's .arbor/config.toml asks for {len(resolved.held_back)} setting(s) that run "
        "commands, reach other hosts or widen what I read; Arbor holds them back until you trust the "
        f"workspace (Arbor's window asks, or run: arbor trust {resolved.workspace}):"
    ]
    lines.extend(f"- {item.describe()}" for item in resolved.held_back)
    return "\n".join(lines)


class ArborAgent(Agent):
    """Serves ACP for any client: Arbor's window, Zed, or the SDK's example client."""

    def __init__(self) -> None:
        self._conn: Client | None = None
        self._sessions: dict[str, Session] = {}
        self._checkpointers: dict[Path, tuple[aiosqlite.Connection, AsyncSqliteSaver]] = {}
        self._base_settings: Settings | None = None
        self._stores: dict[Path, SessionStore] = {}
        self._client_caps: ClientCapabilities | None = None
        self._pruned: set[str] = set()
        self._indexes: dict[str, IndexService] = {}
        self._lsp: dict[str, LspBridge] = {}
        """Language-server pools by their settings: a trusted workspace's servers never serve another."""
        self._memories: dict[str, MemoryStore | None] = {}
        self._background: set[asyncio.Future[Any]] = set()
        """Notifications sent without waiting (the context fill), kept until done."""
        self._held_back: dict[str, str | None] = {}
        """Workspace → what its config asks for that waits for trust, told in the first turn."""

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        assert self._conn is not None, "on_connect was not called"
        return self._conn

    def _store(self, settings: Settings) -> SessionStore:
        data_dir = settings.resolved_data_dir()
        if data_dir not in self._stores:
            self._stores[data_dir] = SessionStore(data_dir)
        return self._stores[data_dir]

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._client_caps = client_capabilities
        try:
            self._base_settings = load_settings(None).settings
        except SettingsError as exc:
            raise _settings_error(exc) from None
        meta = AgentMeta(
            version=__version__,
            model=self._base_settings.llm.model,
            architectures=list(MODES),
            extensions=[
                *REVIEW_METHODS,
                TREE_NOTIFICATION,
                md.CONTEXT_NOTIFICATION,
                BRANCH_DIFF,
                *ix.INDEX_METHODS,
                ix.INDEX_CHANGED,
                *lp.LSP_METHODS,
                *wf.WORKFLOW_METHODS,
                *mp.MEMORY_METHODS,
                *md.MODEL_METHODS,
            ],
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
        )

    def _workspace(self, cwd: str) -> tuple[str, Settings]:
        if not cwd or not os.path.isabs(cwd):
            raise RequestError.invalid_params(
                {"cwd": cwd, "message": f"cwd must be an absolute path to the workspace, got {cwd!r}"}
            )
        if not os.path.isdir(cwd):
            raise RequestError.invalid_params(
                {"cwd": cwd, "message": f"cwd {cwd} does not exist or is not a directory"}
            )
        try:
            resolved = load_settings(Path(cwd))
        except SettingsError as exc:
            raise _settings_error(exc) from None
        self._held_back[cwd] = trust_notice(resolved)
        return cwd, resolved.settings

    async def _checkpointer(self, store: SessionStore, cwd: str) -> AsyncSqliteSaver:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = store.checkpoint_path(cwd)
        if path not in self._checkpointers:
            conn = await aiosqlite.connect(path)
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
            self._checkpointers[path] = (conn, saver)
        return self._checkpointers[path][1]

    async def _open(
        self, session_id: str, cwd: str, settings: Settings, mode: str, mcp_servers: Any = None
    ) -> Session:
        from ide.backend.session import Session
        from ide.changes import BatchStore, prune_stale_worktrees
        from ide.changes.rollback import recover_batches

        store = self._store(settings)
        if cwd not in self._pruned:
            # Scratch checkouts left by a crashed backend are removed the first time we see the workspace.
            self._pruned.add(cwd)
            await asyncio.to_thread(prune_stale_worktrees, Path(cwd))
            # A batch a killed backend left half-applied is finished or put back before anything else.
            recovered = await asyncio.to_thread(
                recover_batches, Path(cwd), BatchStore(store.workspace_dir(cwd))
            )
            if recovered:
                log.warning("recovered interrupted Apply batches in %s: %s", cwd, ", ".join(recovered))
        from ide.tools import builtin_tool_names
        from ide.tools.mcp import connect

        connection = await connect(list(mcp_servers or []), builtin_tool_names())
        session = Session(
            session_id,
            cwd,
            settings,
            await self._checkpointer(store, cwd),
            batches=BatchStore(store.workspace_dir(cwd)),
            mode=mode,
            index=self._index(cwd, settings).index,
            lsp=self._lsp_bridge(settings),
            memory=await self._memory(cwd, settings),
            extra_tools=tuple(connection.tools),
        )
        if connection.notice():
            session.notices.append(connection.notice())
        if self._held_back.get(cwd):
            session.notices.append(self._held_back[cwd])
        session.mcp = connection
        session.ask_permission = functools.partial(self._ask_test_permission, session)
        session.remember_workflow = functools.partial(self._remember_workflow, session)
        active = store.load_workflow(session_id, cwd)
        if active is not None:
            from ide.workflows.mode import ActiveRun

            run = ActiveRun.model_validate(active)
            session.interrupted = run if run.resumable else None
        self._sessions[session_id] = session
        return session

    async def _remember_workflow(self, session: Session, active: ActiveRun) -> None:
        store = self._store(session.settings)
        await asyncio.to_thread(store.save_workflow, session.id, session.cwd, active.model_dump(mode="json"))

    async def _ask_test_permission(self, session: Session, title: str, command: str) -> bool:
        """Ask the client before the tests run (a workflow's test stage, LATS evaluating an answer):
        allow once, allow always, or no."""
        if session.tests_allowed:
            return True
        try:
            response = await self.conn.request_permission(
                session_id=session.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=f"arbor-tests-{uuid.uuid4().hex[:8]}",
                    title=title,
                    kind="execute",
                    status="pending",
                    raw_input={
                        "command": command,
                        "where": "a scratch git worktree with the proposed changes",
                    },
                ),
                options=[
                    PermissionOption(option_id="allow", name="Run the tests", kind="allow_once"),
                    PermissionOption(option_id="always", name="Always run the tests", kind="allow_always"),
                    PermissionOption(option_id="deny", name="Do not run them", kind="reject_once"),
                ],
            )
        except RequestError as exc:
            log.info("client cannot be asked to run the tests (%s): not running them", exc)
            return False
        choice = getattr(response.outcome, "option_id", None)
        if choice == "always":
            session.tests_allowed = True
        return choice in ("allow", "always")

    def _index(self, cwd: str, settings: Settings) -> IndexService:
        """The workspace's index service, started (a pass in the background, then watching) on first use."""
        from ide.codeintel.index.service import IndexService

        real = os.path.realpath(cwd)
        service = self._indexes.get(real)
        if service is None:
            service = self._indexes[real] = IndexService(Path(real), settings)

            async def changed(paths: list[str], service: IndexService = service) -> None:
                note = ix.IndexChanged(cwd=real, paths=paths, status=service.status())
                await self.conn.ext_notification(ix.INDEX_CHANGED, note.model_dump(mode="json"))

            service.on_change = changed
            service.start()
        return service

    async def _memory(self, cwd: str, settings: Settings) -> MemoryStore | None:
        """The workspace's memory (shared by its sessions), or None when it is off or cannot open."""
        from ide.memory import open_memory

        if cwd not in self._memories:
            try:
                self._memories[cwd] = await asyncio.to_thread(open_memory, Path(cwd), settings)
            except (OSError, ValueError, sqlite3.Error) as exc:
                log.warning("memory is off for %s: %s", cwd, exc)
                self._memories[cwd] = None
        return self._memories[cwd]

    def _lsp_bridge(self, settings: Settings) -> LspBridge:
        """The backend's language-server pool (servers start on the first query that needs them)."""
        from ide.codeintel.lsp import LspBridge, LspPool

        key = settings.lsp.model_dump_json()
        if key not in self._lsp:
            self._lsp[key] = LspBridge(LspPool(settings.lsp), asyncio.get_running_loop())
        return self._lsp[key]

    @staticmethod
    def _modes(current: str) -> SessionModeState:
        return SessionModeState(current_mode_id=current, available_modes=list(MODES.values()))

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        cwd, settings = self._workspace(cwd)
        mode = settings.agent.architecture if settings.agent.architecture in MODES else "react"
        session_id = uuid.uuid4().hex
        self._store(settings).create(session_id, cwd, mode)
        session = await self._open(session_id, cwd, settings, mode, mcp_servers)
        mcp = {
            "connected": session.mcp.connected,
            "failed": session.mcp.failed,
            "tools": len(session.extra_tools),
        }
        return NewSessionResponse(
            session_id=session_id, modes=self._modes(mode), field_meta={META_KEY: {"mcp": mcp}}
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: Any = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        cwd, settings = self._workspace(cwd)
        store = self._store(settings)
        record = store.get(session_id, cwd)
        if record is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "message": f"no session {session_id} for workspace {cwd}"}
            )
        session = self._sessions.get(session_id)
        if session is None:
            from ide.changes import ChangeError

            session = await self._open(session_id, cwd, settings, record.mode, mcp_servers)
            snapshot = store.load_review(session_id, cwd)
            if snapshot is not None:
                try:
                    session.restore_review(snapshot)
                except ChangeError as exc:
                    log.warning("could not restore the pending review of %s: %s", session_id, exc)
        for payload in store.events(session_id, cwd):
            if TREE_RECORD in payload:
                if self._client_wants("tree"):
                    params = {"session_id": session_id, "events": payload[TREE_RECORD]}
                    await self.conn.ext_notification(TREE_NOTIFICATION, params)
                continue
            notification = SessionNotification.model_validate({"sessionId": session_id, "update": payload})
            await self.conn.session_update(session_id=session_id, update=notification.update)
        await self._offer_commands(session)
        if session.interrupted is not None and (session.turn is None or session.turn.done()):
            run = session.interrupted
            note = (
                f"The workflow {run.workflow} for “{run.task[:80]}” stopped before it finished. "
                "Send /resume to go on from its last finished step."
            )
            await self.conn.session_update(
                session_id=session_id, update=update_agent_message(text_block(note))
            )
        return LoadSessionResponse(modes=self._modes(session.mode))

    async def _offer_commands(self, session: Session) -> None:
        """Tell the client our slash commands (once per session and connection)."""
        if session.commands_sent:
            return
        from ide.backend.session import commands_update

        session.commands_sent = True
        await self.conn.session_update(session_id=session.id, update=commands_update())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        settings = self._base_settings or load_settings(None).settings
        if cwd is not None:
            cwd, settings = self._workspace(cwd)
        records = self._store(settings).list(cwd)
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
        session = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params(
                {
                    "modeId": mode_id,
                    "message": f"there is no mode {mode_id!r}; modes: {', '.join(MODES)}",
                }
            )
        session.mode = mode_id
        self._store(session.settings).update(session_id, session.cwd, mode=mode_id)

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "message": f"unknown session {session_id}; call session/load first"}
            )
        return session

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.turn is not None and not session.turn.done():
            raise RequestError.invalid_request(
                {"sessionId": session_id, "message": "a prompt turn is already running in this session"}
            )
        text = _prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt is empty"})
        store = self._store(session.settings)
        from ide.llm import ModelError

        turn_number = store.next_turn(session_id, session.cwd)
        # The question is saved before the turn runs, and the turn's updates at every finished tool call,
        # so a backend killed mid-turn still replays what the user asked and what the agent had done.
        user = update_user_message(text_block(text)).model_dump(mode="json", by_alias=True, exclude_none=True)
        store.append_events(session_id, session.cwd, turn_number, [user])
        store.update(session_id, session.cwd, title=text.strip().splitlines()[0][:80])
        recorded: list[dict[str, Any]] = []

        def flush() -> None:
            store.append_events(session_id, session.cwd, turn_number, recorded)
            recorded.clear()

        async def emit(update: BaseModel) -> None:
            recorded.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))
            if getattr(update, "session_update", None) == "tool_call_update":
                flush()  # before the client hears of it, so what it saw is on disk
            await self.conn.session_update(session_id=session_id, update=update)

        async def emit_tree(events: list[TreeEvent]) -> None:
            batch = [event.model_dump(mode="json", exclude_defaults=True) for event in events]
            recorded.append({TREE_RECORD: batch})
            if self._client_wants("tree"):
                await self.conn.ext_notification(
                    TREE_NOTIFICATION, {"session_id": session_id, "events": batch}
                )

        session.cancel_requested = False
        mode_before = session.mode

        async def turn() -> TurnResult:
            # Inside the task, so a cancel that arrives while the commands are sent still stops the turn.
            await self._offer_commands(session)
            while session.notices:
                await emit(update_agent_thought(text_block(session.notices.pop(0) + "\n")))
            return await session.run_turn(text, emit, emit_tree)

        def context_fill(role: str, tokens: int, window: int) -> None:
            if self._client_wants("tree"):  # Arbor's window; other clients have no use for it
                fill = md.ContextFill(session_id=session_id, role=role, tokens=tokens, window=window)
                pending = asyncio.ensure_future(
                    self.conn.ext_notification(md.CONTEXT_NOTIFICATION, fill.model_dump())
                )
                self._background.add(pending)
                pending.add_done_callback(self._background.discard)

        session.router.on_context = context_fill
        session.turn = asyncio.create_task(turn())
        try:
            result = await session.turn
            if session.changeset.changed_paths():
                await self._offer_review(session)
        except asyncio.CancelledError:
            if not session.cancel_requested:
                session.turn.cancel()  # the request itself was cancelled: the connection is closing
                raise
            # What the agent proposed before the user stopped it (a search's best branch so far) is
            # offered for review like any turn's edits, never dropped and never written unasked.
            flush()
            if session.changeset.changed_paths():
                await self._offer_review(session)
            await self._save_review(session)
            return PromptResponse(stop_reason="cancelled")
        except ModelError as exc:
            await self._save_review(session)
            log.warning("turn failed: %s", exc)
            await session.learn_error(text, exc.info.text())
            raise arbor_error(exc.info) from None
        except Exception as exc:
            log.exception("turn failed")
            await session.learn_error(text, f"{type(exc).__name__}: {exc}")
            raise arbor_error(
                ErrorInfo(kind="internal", message=f"The agent failed: {type(exc).__name__}: {exc}")
            ) from None
        finally:
            flush()
            if session.mode != mode_before:
                store.update(session_id, session.cwd, mode=session.mode)
        await self._save_review(session)
        return PromptResponse(
            stop_reason=result.stop_reason, field_meta={META_KEY: result.meta.model_dump(mode="json")}
        )

    async def _save_review(self, session: Session) -> None:
        """Persist the session's pending review, so a restarted backend loses none of it."""
        store = self._store(session.settings)
        # Taken on the loop thread (snapshot() copies its state); the worker thread only writes it out.
        snapshot = session.review_snapshot()
        await asyncio.to_thread(store.save_review, session.id, session.cwd, snapshot)

    def _client_wants(self, feature: str) -> bool:
        """True when the client asked for an Arbor extension in ``_meta.arbor`` ("review", "tree")."""
        meta = (self._client_caps.field_meta or {}) if self._client_caps else {}
        return bool(isinstance(meta.get(META_KEY), dict) and meta[META_KEY].get(feature))

    async def _offer_review(self, session: Session) -> None:
        """At the end of a turn that edited files: hand the batch to the client for review.

        Arbor's window (and `arbor run`) get the hunks in ``_arbor/changeset``. Any other client is asked
        once, with the diffs, whether to apply the batch; yes writes through ``fs/write_text_file`` when
        the client offers it, else through our own apply (checkpoint, atomic writes, commit). Meta files
        (Arbor's settings, git attributes, CI, hooks) are asked about on their own, with why they matter.
        """
        view = session.review.view()
        if self._client_wants("review"):
            await self.conn.ext_notification(rv.CHANGESET_NOTIFICATION, view.model_dump(mode="json"))
            return
        plain = [f for f in view.files if f.meta is None]
        meta = [f for f in view.files if f.meta is not None]
        for files in (plain, meta):
            if files and not await self._ask_to_apply(session, files, meta=files is meta):
                return

    async def _ask_to_apply(self, session: Session, files: list[rv.FileChangeView], *, meta: bool) -> bool:
        """Ask a plain ACP client whether to apply ``files``; False when it cannot be asked."""
        diffs = []
        for file in files:
            old, new = session.changeset.diff_texts(file.path)
            if len(old or "") + len(new or "") <= DIFF_INLINE_CAP:
                diffs.append(tool_diff_content(str(Path(session.cwd) / file.path), new or "", old))
        added = sum(f.additions for f in files)
        removed = sum(f.deletions for f in files)
        title = f"Apply changes to {len(files)} file(s) (+{added} −{removed})?"
        if meta:
            why = "; ".join(f"{f.path}: {f.meta}" for f in files)
            title = f"Also apply the agent's edits to files that change what runs? {why}"
        try:
            response = await self.conn.request_permission(
                session_id=session.id,
                tool_call=ToolCallUpdate(
                    tool_call_id=f"arbor-review-{uuid.uuid4().hex[:8]}",
                    title=title,
                    kind="edit",
                    status="pending",
                    content=diffs,
                ),
                options=[
                    PermissionOption(option_id="apply", name="Apply these changes", kind="allow_once"),
                    PermissionOption(option_id="discard", name="Discard them", kind="reject_once"),
                ],
            )
        except RequestError as exc:
            # A client that cannot be asked keeps the batch pending: nothing written, nothing lost.
            log.info("client cannot review the change set (%s); it stays pending", exc)
            return False
        outcome = response.outcome
        approved = (
            getattr(outcome, "outcome", None) == "selected" and getattr(outcome, "option_id", "") == "apply"
        )
        fs = self._client_caps.fs if self._client_caps else None
        plain_writes = all(f.status in ("added", "modified") and not f.binary for f in files)
        if approved and fs is not None and fs.write_text_file and plain_writes:
            for file in files:
                _old, new = session.changeset.diff_texts(file.path)
                await self.conn.write_text_file(
                    session_id=session.id, path=str(Path(session.cwd) / file.path), content=new or ""
                )
            approved = False  # written by the client: drop the batch from our change set
        decision = "accepted" if approved else "rejected"
        paths = [f.path for f in files]
        session.review.decide(rv.DecideParams(session_id=session.id, decision=decision, paths=paths))
        await asyncio.to_thread(session.review.apply, None)
        return True

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.turn is None or session.turn.done():
            return
        session.cancel_requested = True
        session.turn.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        from ide.changes import ChangeError

        handler = {
            rv.CHANGESET: self._review_changeset,
            rv.DECIDE: self._review_decide,
            rv.APPLY: self._review_apply,
            rv.ROLLBACK: self._review_rollback,
            rv.HISTORY: self._review_history,
            BRANCH_DIFF: self._branch_diff,
            ix.INDEX_STATUS: self._index_status,
            ix.INDEX_OUTLINE: self._index_outline,
            ix.INDEX_SEARCH: self._index_search,
            **{name: functools.partial(self._lsp_query, name) for name in lp.LSP_METHODS},
            wf.WORKFLOWS_LIST: self._workflows_list,
            wf.WORKFLOWS_SELECT: self._workflows_select,
            mp.MEMORY_SEARCH: self._memory_search,
            mp.MEMORY_DELETE: self._memory_delete,
            mp.MEMORY_EXPORT: self._memory_export,
            mp.MEMORY_KEEP: self._memory_keep,
            md.MODEL_PROBE: self._model_probe,
            md.MODEL_PROBES_CACHED: self._model_probes_cached,
        }.get(method)
        if handler is None:
            raise RequestError.method_not_found(f"_{method}")
        try:
            result = await handler(params)
        except ValidationError as exc:
            raise RequestError.invalid_params({"errors": exc.errors(include_url=False)}) from None
        except ChangeError as exc:
            # Classified, so every client (the window, arbor run) shows the reason, not "Invalid params".
            raise arbor_error(ErrorInfo(kind="bad_request", message=str(exc))) from None
        return result.model_dump(mode="json")

    async def _model_probe(self, params: dict[str, Any]) -> BaseModel:
        """Send each model the workspace uses one tool-call and one structured request ("Test model")."""
        from ide.llm import ModelRouter
        from ide.llm.probe import ProbeCache, probe_all

        request = md.ProbeParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        router = ModelRouter(settings, base_dir=Path(cwd))
        probes = await probe_all(router, ProbeCache(settings.resolved_data_dir()))
        return md.ProbeResult(probes=probes, fresh=True)

    async def _model_probes_cached(self, params: dict[str, Any]) -> BaseModel:
        """What earlier probes found about the models the workspace uses (the window warns before a turn)."""
        from ide.llm import ModelRouter
        from ide.llm.probe import ProbeCache, cache_key, roles_by_model

        request = md.ProbeParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        router = ModelRouter(settings, base_dir=Path(cwd))
        known = await asyncio.to_thread(ProbeCache(settings.resolved_data_dir()).read)
        found = [known.get(cache_key(router, model)) for model in roles_by_model(router)]
        return md.ProbeResult(probes=[probe for probe in found if probe is not None])

    async def _memory_search(self, params: dict[str, Any]) -> BaseModel:
        request = mp.MemorySearchParams.model_validate(params)
        memory = self._session(request.session_id).memory
        if memory is None:
            return mp.MemoryList(message="Memory is off for this workspace (memory.enabled = false).")
        namespaces = [request.namespace] if request.namespace else None
        reviewed = False if request.unreviewed_only else None
        items = await asyncio.to_thread(
            memory.search, request.query, namespaces, request.limit, reviewed=reviewed
        )
        counted = await self._memory_counts(memory)
        return counted.model_copy(
            update={"entries": [mp.MemoryEntry.model_validate(item.as_dict()) for item in items]}
        )

    async def _memory_delete(self, params: dict[str, Any]) -> BaseModel:
        request = mp.MemoryDeleteParams.model_validate(params)
        memory = self._session(request.session_id).memory
        if memory is None or not await asyncio.to_thread(memory.delete, request.id):
            raise RequestError.invalid_params({"message": f"there is no memory entry #{request.id}"})
        return await self._memory_counts(memory)

    async def _memory_keep(self, params: dict[str, Any]) -> BaseModel:
        request = mp.MemoryKeepParams.model_validate(params)
        memory = self._session(request.session_id).memory
        if memory is None or not await asyncio.to_thread(memory.keep, request.id):
            raise RequestError.invalid_params({"message": f"there is no memory entry #{request.id}"})
        return await self._memory_counts(memory)

    @staticmethod
    async def _memory_counts(memory: MemoryStore) -> BaseModel:
        return mp.MemoryList(
            counts=await asyncio.to_thread(memory.counts),
            unreviewed=await asyncio.to_thread(memory.unreviewed),
        )

    async def _memory_export(self, params: dict[str, Any]) -> BaseModel:
        import json

        request = mp.MemoryExportParams.model_validate(params)
        memory = self._session(request.session_id).memory
        if memory is None or not os.path.isabs(request.path):
            raise RequestError.invalid_params({"message": "memory is off, or the path is not absolute"})
        entries = await asyncio.to_thread(memory.export)
        try:
            await asyncio.to_thread(Path(request.path).write_text, json.dumps(entries, indent=2))
        except OSError as exc:
            raise RequestError.invalid_params({"message": f"cannot write {request.path}: {exc}"}) from None
        return mp.MemoryExported(path=request.path, entries=len(entries))

    async def _workflows_list(self, params: dict[str, Any]) -> BaseModel:
        request = wf.WorkflowsParams.model_validate(params)
        return await self._workflow_list(self._session(request.session_id))

    async def _workflows_select(self, params: dict[str, Any]) -> BaseModel:
        """The picker's choice: the same as ``/workflow NAME`` (and the session goes to the workflow mode)."""
        request = wf.SelectWorkflowParams.model_validate(params)
        session = self._session(request.session_id)
        listing = await self._workflow_list(session)
        if request.name != wf.AUTO and request.name not in {w.name for w in listing.workflows}:
            known = ", ".join(w.name for w in listing.workflows)
            raise RequestError.invalid_params(
                {"message": f"there is no workflow {request.name!r}; there are: {known}"}
            )
        if session.choose_workflow(request.name):
            self._store(session.settings).update(session.id, session.cwd, mode="workflow")
        return listing.model_copy(update={"selected": session.workflow, "mode": session.mode})

    async def _workflow_list(self, session: Session) -> wf.WorkflowList:
        from ide.workflows.fusion import describe_reranker
        from ide.workflows.loader import load_catalog

        catalog = await asyncio.to_thread(load_catalog, Path(session.cwd))
        return wf.WorkflowList(
            workflows=[
                wf.WorkflowInfo(
                    name=w.name,
                    description=w.metadata.description,
                    workflow_type=w.metadata.workflow_type,
                    path=str(catalog.origins[w.name]),
                    stages=[
                        wf.StageInfo(
                            id=s.key,
                            name=s.name,
                            required=s.required,
                            agents=[a.agent for a in s.parallel_agents],
                        )
                        for s in w.stages
                    ],
                )
                for w in catalog.workflows.values()
            ],
            selected=session.workflow,
            mode=session.mode,
            problems=[str(problem) for problem in catalog.problems],
            reranker=describe_reranker(session.settings),
            notices=catalog.notices,
        )

    async def _review_changeset(self, params: dict[str, Any]) -> BaseModel:
        request = rv.ChangeSetParams.model_validate(params)
        return self._session(request.session_id).review.view()

    async def _review_decide(self, params: dict[str, Any]) -> BaseModel:
        request = rv.DecideParams.model_validate(params)
        session = self._session(request.session_id)
        view = session.review.decide(request)
        await self._save_review(session)
        return view

    async def _review_apply(self, params: dict[str, Any]) -> BaseModel:
        request = rv.ApplyParams.model_validate(params)
        session = self._session(request.session_id)
        if session.turn is not None and not session.turn.done():
            raise RequestError.invalid_request({"message": "wait for the turn to end before applying"})
        result = await asyncio.to_thread(session.review.apply, request.message)
        await self._save_review(session)
        return result

    def _batches(self, cwd: str) -> Any:
        from ide.changes import BatchStore

        cwd, settings = self._workspace(cwd)
        return BatchStore(self._store(settings).workspace_dir(cwd))

    async def _review_rollback(self, params: dict[str, Any]) -> BaseModel:
        from ide.changes import rollback_batch

        request = rv.RollbackParams.model_validate(params)
        return await asyncio.to_thread(
            rollback_batch, Path(request.cwd), self._batches(request.cwd), request.batch_id
        )

    async def _review_history(self, params: dict[str, Any]) -> BaseModel:
        request = rv.HistoryParams.model_validate(params)
        batches = self._batches(request.cwd).history(request.cwd, limit=request.limit)
        return rv.HistoryResult(batches=batches)

    async def _branch_diff(self, params: dict[str, Any]) -> BaseModel:
        """The proposed changes of one search branch, read-only (for the tree view's inspector)."""
        from ide.changes import Review

        request = BranchDiffParams.model_validate(params)
        session = self._session(request.session_id)
        branch = session.branch(request.changeset_id)
        if branch is None:
            raise RequestError.invalid_params(
                {
                    "message": f"branch {request.changeset_id} is not held by this backend: it keeps the "
                    "branches of a live session's last runs only"
                }
            )
        view = Review(branch, session_id=session.id, title="branch", store=session.batches)
        return await asyncio.to_thread(view.view)

    async def _index_status(self, params: dict[str, Any]) -> BaseModel:
        request = ix.IndexStatusParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        return self._index(cwd, settings).status()

    async def _index_outline(self, params: dict[str, Any]) -> BaseModel:
        """The definitions of one file, as the index holds them (the window's Outline dock)."""
        request = ix.OutlineParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        try:
            return await asyncio.to_thread(self._index(cwd, settings).outline, request.path)
        except ValueError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None

    async def _index_search(self, params: dict[str, Any]) -> BaseModel:
        request = ix.SymbolSearchParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        return await asyncio.to_thread(self._index(cwd, settings).search, request.query, request.limit)

    async def _lsp_query(self, method: str, params: dict[str, Any]) -> BaseModel:
        """F12, Shift+F12 and hover for the window; a missing server is a message, not an error."""
        from ide.codeintel.lsp import LspError, LspUnavailable
        from ide.tools.lsp import proposed_documents

        request = lp.PositionParams.model_validate(params)
        cwd, settings = self._workspace(request.cwd)
        root, path = Path(cwd), Path(request.path)
        session = self._sessions.get(request.session_id or "")
        documents = proposed_documents(root, session.changeset if session is not None else None)
        pool = self._lsp_bridge(settings).pool
        try:
            if method == lp.LSP_HOVER:
                return lp.HoverResult(
                    text=await pool.hover(root, path, request.line, request.column, documents)
                )
            query = pool.definition if method == lp.LSP_DEFINITION else pool.references
            found = await query(root, path, request.line, request.column, documents)
        except (LspUnavailable, LspError) as exc:
            empty = lp.HoverResult if method == lp.LSP_HOVER else lp.LocationsResult
            return empty(message=str(exc))
        texts = await asyncio.to_thread(_line_texts, [(loc.path, loc.line) for loc in found], documents)
        return lp.LocationsResult(
            locations=[
                lp.LspLocation(path=str(loc.path), line=loc.line, column=loc.column, text=text)
                for loc, text in zip(found, texts, strict=True)
            ]
        )

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignoring extension notification _%s", method)

    async def close(self) -> None:
        """Stop running turns and close the checkpoint databases."""
        for session in self._sessions.values():
            if session.turn is not None and not session.turn.done():
                session.cancel_requested = True
                session.turn.cancel()
        for service in self._indexes.values():
            await service.close()
        for bridge in self._lsp.values():
            await bridge.pool.close()
        self._indexes.clear()
        for conn, _saver in self._checkpointers.values():
            with contextlib.suppress(Exception):
                await conn.close()
        self._checkpointers.clear()
