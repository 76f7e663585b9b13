"""The window's one link to the backend: a QObject owning ``arbor acp`` and the SDK's client connection.

Everything ACP happens here, on the qasync loop; widgets only see Qt signals and call a handful of
methods that schedule work and return at once. The backend is a child process with stdio pipes: its
stdout/stdin carry JSON-RPC, its stderr is drained continuously into a bounded tail (a chatty backend
must never block on a full pipe), and its exit is watched so a crash shows up at once.

The SDK is imported lazily, on a worker thread, while the backend process starts: building its pydantic
schema takes most of a second, which would otherwise sit between launching Arbor and its first paint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError
from PySide6.QtCore import QObject, Signal, SignalInstance

from ide import self_command
from ide.agentproc import STOP_GRACE_S, StderrTail, drain_stderr, signal_group, spawn_agent, stop_agent
from ide.app.background import run_blocking, spawn
from ide.protocol import ERROR_CODE, META_KEY, AgentMeta, ErrorInfo, TurnMeta, error_info_from_data
from ide.protocol.index import (
    INDEX_CHANGED,
    INDEX_OUTLINE,
    INDEX_SEARCH,
    INDEX_STATUS,
    IndexChanged,
    IndexStatus,
    OutlineResult,
    SymbolSearchResult,
)
from ide.protocol.lsp import (
    LSP_DEFINITION,
    LSP_HOVER,
    LSP_METHODS,
    LSP_REFERENCES,
    HoverResult,
    LocationsResult,
)
from ide.protocol.memory import MEMORY_DELETE, MEMORY_EXPORT, MEMORY_KEEP, MemoryExported, MemoryList
from ide.protocol.model import (
    CONTEXT_NOTIFICATION,
    MODEL_PROBE,
    MODEL_PROBES_CACHED,
    ContextFill,
    ProbeParams,
    ProbeResult,
)
from ide.protocol.review import (
    APPLY,
    CHANGESET,
    CHANGESET_NOTIFICATION,
    DECIDE,
    HISTORY,
    ROLLBACK,
    ApplyParams,
    ApplyResult,
    ChangeSetParams,
    ChangeSetView,
    DecideParams,
    HistoryParams,
    HistoryResult,
    RollbackParams,
    RollbackResult,
)
from ide.protocol.tree import BRANCH_DIFF, TREE_NOTIFICATION, BranchDiffParams, TreeEventBatch
from ide.protocol.workflow import (
    WORKFLOWS_LIST,
    WORKFLOWS_SELECT,
    SelectWorkflowParams,
    WorkflowList,
    WorkflowsParams,
)

T = TypeVar("T", bound="BaseModel")

if TYPE_CHECKING:
    from acp import RequestError
    from acp.core import ClientSideConnection
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate, UserMessageChunk
    from pydantic import BaseModel

log = logging.getLogger(__name__)

BACKEND_COMMAND_ENV = "ARBOR_BACKEND_COMMAND"
INITIALIZE_TIMEOUT_S = 60.0


class BackendState(StrEnum):
    """Where the backend is in its life; the status bar shows it and the chat enables buttons by it."""

    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPED = "stopped"


def default_backend_command() -> list[str]:
    """``ARBOR_BACKEND_COMMAND`` (shell-quoted) if set, else ``python -m ide acp`` of this interpreter."""
    override = os.environ.get(BACKEND_COMMAND_ENV, "").strip()
    if override:
        return shlex.split(override)
    return self_command("acp")


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


def load_sdk() -> None:
    """Import the ACP SDK (blocking, ~1 s the first time); the bridge runs it on a worker thread."""
    import acp.schema  # noqa: F401


PermissionHandler = Callable[[str, "ToolCallUpdate", list["PermissionOption"]], Awaitable[str | None]]
"""Decides a permission request: the chosen option id, or None to refuse."""


class _ClientCallbacks:
    """What the agent may call on us. Deliberately not a subclass of ``acp.Client``: the Protocol's stub
    methods would answer fs/terminal requests with null instead of "method not found"."""

    def __init__(self, bridge: BackendBridge, generation: int) -> None:
        self._bridge = bridge
        self._generation = generation

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # No await before the emit: notifications are handled as tasks in arrival order, and the
        # prompt response must not overtake the updates that preceded it.
        self._bridge._on_session_update(self._generation, session_id, update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        return await self._bridge._on_permission(session_id, tool_call, options)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._bridge._on_notification(self._generation, method, params)


class BackendBridge(QObject):
    """Owns one backend process at a time and its ACP session, and reports everything as signals.

    Methods (:meth:`start`, :meth:`restart`, :meth:`send_prompt`, :meth:`cancel`, :meth:`stop`) return
    immediately; the work runs as tasks on the qasync loop.
    """

    stateChanged = Signal(str)
    """A :class:`BackendState` value."""
    agentChanged = Signal(object)
    """The backend's :class:`AgentMeta` after initialize (None for an ACP agent that is not Arbor)."""
    sessionReady = Signal(str, bool)
    """Session id, and True when it was restored with ``session/load`` (its history was replayed)."""
    replayStarting = Signal()
    """``session/load`` is about to replay the history: views should forget what they show."""
    replayFailed = Signal(str)
    """The previous session could not be restored (message); a new session follows."""
    sessionUpdate = Signal(object)
    """One ``session/update`` payload (an ``acp.schema`` update model) of the current session."""
    turnFinished = Signal(str, object)
    """Stop reason and the turn's :class:`TurnMeta` (None when the agent sent none)."""
    errorRaised = Signal(object)
    """An :class:`ErrorInfo` the user should read: a failed turn, a refused session, a failed start."""
    backendDied = Signal(int, str)
    """The process ended without being asked: exit code (negative: killed by that signal), stderr tail."""
    stopped = Signal()
    """The process is gone and reaped, whether it was asked to stop or died."""
    changesetReceived = Signal(object)
    """The session's :class:`ChangeSetView`: pushed after a turn, or the answer to a review request."""
    applied = Signal(object)
    """The :class:`ApplyResult` of :meth:`review_apply`."""
    rolledBack = Signal(object)
    """The :class:`RollbackResult` of :meth:`review_rollback`."""
    historyReceived = Signal(object)
    """The :class:`HistoryResult` of :meth:`review_history`."""
    reviewFailed = Signal(str)
    """A review request (its method) failed; :attr:`errorRaised` carries why. Views drop guesses."""
    modeChanged = Signal(str)
    """The session's mode (agent architecture) is now this id."""
    treeEvents = Signal(object)
    """A ``list[TreeEvent]`` of the current session's search tree (``_arbor/tree``), live or replayed."""
    branchDiffReceived = Signal(object, object)
    """The :class:`BranchDiffParams` of :meth:`branch_diff` and the branch's :class:`ChangeSetView`."""
    branchDiffFailed = Signal(object, str)
    """(BranchDiffParams, message) when the backend could not give the branch's changes."""
    indexStatus = Signal(object)
    """IndexStatus of the workspace's code index (``_arbor/index/status``)."""
    outlineReceived = Signal(object)
    """OutlineResult of one file (``_arbor/index/outline``)."""
    symbolsFound = Signal(object, object)
    """(SymbolSearchParams, SymbolSearchResult) of a Ctrl+T search (``_arbor/index/search``)."""
    indexFailed = Signal(str, str)
    """(method, message) when an index or language-server request was refused or unreadable."""
    indexChanged = Signal(object)
    """IndexChanged: the backend re-indexed files (a pass finished, or the watcher saw edits)."""
    lspAnswered = Signal(str, object, object)
    memoryReceived = Signal(object)
    """A MemoryList: a search result."""
    memoryChanged = Signal(object)
    """A MemoryList with the counts after a delete or keep (its own signal, so an answer to a search still
    in flight is never taken for it)."""
    memoryExported = Signal(object)
    """A MemoryExported after an export."""
    workflowsReceived = Signal(object)
    contextFilled = Signal(object)
    """A ContextFill: how full the turn's latest model request is of the model's window."""
    probesReceived = Signal(object)
    """A ProbeResult: what a real request showed about each model (fresh, or from the cache)."""
    """The session's workflows, its pick and the reranker in use (WorkflowList), after a list or select."""
    """(method, PositionParams, LocationsResult or HoverResult) of F12, Shift+F12 or a hover."""

    def __init__(
        self,
        workspace: Path,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.workspace = workspace.resolve()
        self.command = list(command) if command else default_backend_command()
        self._env = dict(env) if env is not None else None
        self.state = BackendState.STOPPED
        self.agent_meta: AgentMeta | None = None
        self.agent_name: str | None = None
        self.session_id: str | None = None
        self.mode: str | None = None
        self.modes: list[tuple[str, str, str]] = []
        """The agent's session modes: (id, name, description)."""
        self.can_load_session = False
        self.process: asyncio.subprocess.Process | None = None
        self.stderr = StderrTail()
        self._conn: ClientSideConnection | None = None
        self._generation = 0
        self._stopping = False
        self._lifecycle: asyncio.Task[None] | None = None
        self._turn: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._connections: dict[int, ClientSideConnection] = {}
        self.permission_handler: PermissionHandler | None = None

    @property
    def pid(self) -> int | None:
        """Process id of the running backend, if any."""
        return self.process.pid if self.process is not None and self.process.returncode is None else None

    def start(self) -> asyncio.Task[None]:
        """Spawn the backend, initialize it and open a new session."""
        return self._run_lifecycle(lambda: self._start(resume=None))

    def restart(self) -> asyncio.Task[None]:
        """Stop whatever runs, spawn again and restore the current session (replaying it), else a new one."""
        return self._run_lifecycle(self._restart)

    def stop(self) -> asyncio.Task[None]:
        """Ask the backend to exit (EOF, then SIGTERM, then SIGKILL); no death is reported."""
        return self._run_lifecycle(self._stop)

    def send_prompt(self, text: str) -> bool:
        """Start a turn with ``text``; False (and nothing sent) unless the backend is ready."""
        if self.state != BackendState.READY or self._conn is None or self.session_id is None:
            return False
        self._set_state(BackendState.BUSY)
        self._turn = spawn(self._prompt(self._generation, self._conn, self.session_id, text), name="prompt")
        return True

    def cancel(self) -> None:
        """Ask the agent to end the running turn; it answers the prompt with stop reason ``cancelled``."""
        if self.state == BackendState.BUSY and self._conn is not None and self.session_id is not None:
            spawn(self._send_cancel(self._conn, self.session_id), name="cancel")

    def supports(self, method: str) -> bool:
        """Whether the backend advertised the ``_arbor/*`` extension ``method`` (without the underscore)."""
        return self.agent_meta is not None and method in self.agent_meta.extensions

    def review_decide(self, params: DecideParams) -> bool:
        """Record decisions on hunks; the new state arrives as :attr:`changesetReceived`."""
        return self._review_request(DECIDE, params, ChangeSetView, self.changesetReceived)

    def review_apply(self, params: ApplyParams) -> bool:
        """Write the accepted hunks; the outcome arrives as :attr:`applied`."""
        return self._review_request(APPLY, params, ApplyResult, self.applied)

    def review_rollback(self, params: RollbackParams) -> bool:
        """Restore an applied batch's files; the outcome arrives as :attr:`rolledBack`."""
        return self._review_request(ROLLBACK, params, RollbackResult, self.rolledBack)

    def review_history(self, params: HistoryParams) -> bool:
        """List applied batches; they arrive as :attr:`historyReceived`."""
        return self._review_request(HISTORY, params, HistoryResult, self.historyReceived)

    def review_changeset(self, session_id: str) -> bool:
        """Ask for the session's current change set; it arrives as :attr:`changesetReceived`."""
        return self._review_request(
            CHANGESET, ChangeSetParams(session_id=session_id), ChangeSetView, self.changesetReceived
        )

    def branch_diff(self, params: BranchDiffParams) -> bool:
        """Ask for one search branch's changes (``_arbor/tree/branch``); they arrive as
        :attr:`branchDiffReceived`, a refusal as :attr:`branchDiffFailed`. False (nothing sent) when the
        backend is not running or does not serve it."""
        if self._conn is None or not self.supports(BRANCH_DIFF):
            return False
        spawn(self._branch_diff(self._generation, self._conn, params), name=f"_{BRANCH_DIFF}")
        return True

    async def _ask(
        self,
        generation: int,
        conn: ClientSideConnection,
        method: str,
        params: BaseModel,
        result_type: type[T],
    ) -> T | ErrorInfo | None:
        """Call ``_method`` and read its answer: the result, an ErrorInfo for a refusal or an unreadable
        answer, or None when the answer no longer matters (backend died or was restarted meanwhile)."""
        from acp import RequestError

        answer: T | ErrorInfo
        try:
            answer = result_type.model_validate(await conn.ext_method(method, params.model_dump(mode="json")))
        except RequestError as exc:
            answer = error_from_request(exc)
        except ValidationError as exc:
            log.warning("malformed answer to _%s: %s", method, exc)
            answer = ErrorInfo(
                kind="internal",
                message=f"The backend answered _{method} with data this window cannot read.",
                fix="The window and the backend may be different Arbor versions; reinstall both.",
            )
        except ConnectionError:
            return None  # the watcher reports the backend's death
        return answer if generation == self._generation else None

    async def _branch_diff(
        self, generation: int, conn: ClientSideConnection, params: BranchDiffParams
    ) -> None:
        answer = await self._ask(generation, conn, BRANCH_DIFF, params, ChangeSetView)
        if isinstance(answer, ErrorInfo):
            self.branchDiffFailed.emit(params, answer.message)
        elif answer is not None:
            self.branchDiffReceived.emit(params, answer)

    def index_request(self, method: str, params: BaseModel) -> bool:
        """Ask the code index (status, outline or search) or a language server (definition, references,
        hover); the answer arrives as :attr:`indexStatus`, :attr:`outlineReceived`, :attr:`symbolsFound`
        or :attr:`lspAnswered`. False (nothing sent) when the backend is not running or lacks it."""
        if self._conn is None or not self.supports(method):
            return False
        spawn(self._index_call(self._generation, self._conn, method, params), name=f"_{method}")
        return True

    async def _index_call(
        self, generation: int, conn: ClientSideConnection, method: str, params: BaseModel
    ) -> None:
        result_type, done = {
            INDEX_STATUS: (IndexStatus, self.indexStatus),
            INDEX_OUTLINE: (OutlineResult, self.outlineReceived),
            INDEX_SEARCH: (SymbolSearchResult, self.symbolsFound),
            LSP_DEFINITION: (LocationsResult, self.lspAnswered),
            LSP_REFERENCES: (LocationsResult, self.lspAnswered),
            LSP_HOVER: (HoverResult, self.lspAnswered),
        }[method]
        answer = await self._ask(generation, conn, method, params, result_type)
        if isinstance(answer, ErrorInfo):
            self.indexFailed.emit(method, answer.message)
        elif answer is None:
            return
        elif method in LSP_METHODS:
            done.emit(method, params, answer)
        elif method == INDEX_SEARCH:
            done.emit(params, answer)
        else:
            done.emit(answer)

    def probe_request(self, refresh: bool) -> bool:
        """Ask what each model of the workspace can do: a fresh probe ("Test model", a real request
        per model) or the cached results; the answer comes as :attr:`probesReceived`."""
        method = MODEL_PROBE if refresh else MODEL_PROBES_CACHED
        if self._conn is None or not self.supports(method):
            return False
        params = ProbeParams(cwd=str(self.workspace), refresh=refresh)
        spawn(self._probe(self._generation, self._conn, method, params), name=f"_{method}")
        return True

    async def _probe(
        self, generation: int, conn: ClientSideConnection, method: str, params: ProbeParams
    ) -> None:
        answer = await self._ask(generation, conn, method, params, ProbeResult)
        if isinstance(answer, ErrorInfo):
            self.errorRaised.emit(answer)
        elif answer is not None:
            self.probesReceived.emit(answer)

    def memory_request(self, method: str, params: BaseModel) -> bool:
        """Search, keep, delete from or export the workspace's memory; answers come as
        :attr:`memoryReceived` (search), :attr:`memoryChanged` (keep, delete) or :attr:`memoryExported`."""
        result_type, done = (
            (MemoryExported, self.memoryExported)
            if method == MEMORY_EXPORT
            else (MemoryList, self.memoryChanged)
            if method in (MEMORY_DELETE, MEMORY_KEEP)
            else (MemoryList, self.memoryReceived)
        )
        return self._review_request(method, params, result_type, done)

    def workflows_request(self, select: str | None = None) -> bool:
        """List the session's workflows, or pick one (``auto``: the orchestrator picks) exactly as the
        ``/workflow NAME`` command does; the answer arrives as :attr:`workflowsReceived`."""
        if self.session_id is None:
            return False
        if select is None:
            params: BaseModel = WorkflowsParams(session_id=self.session_id)
            return self._review_request(WORKFLOWS_LIST, params, WorkflowList, self.workflowsReceived)
        params = SelectWorkflowParams(session_id=self.session_id, name=select)
        return self._review_request(WORKFLOWS_SELECT, params, WorkflowList, self.workflowsReceived)

    def _review_request(
        self, method: str, params: BaseModel, result_type: type[BaseModel], done: SignalInstance
    ) -> bool:
        """Send ``_method`` if the backend serves it; False (nothing sent) otherwise."""
        if self._conn is None or not self.supports(method):
            return False
        spawn(
            self._ext_request(self._generation, self._conn, method, params, result_type, done),
            name=f"_{method}",
        )
        return True

    async def _ext_request(
        self,
        generation: int,
        conn: ClientSideConnection,
        method: str,
        params: BaseModel,
        result_type: type[BaseModel],
        done: SignalInstance,
    ) -> None:
        answer = await self._ask(generation, conn, method, params, result_type)
        if isinstance(answer, ErrorInfo):
            self.errorRaised.emit(answer)
            self.reviewFailed.emit(method)
        elif answer is not None:
            done.emit(answer)

    def _on_notification(self, generation: int, method: str, params: dict[str, Any]) -> None:
        """An ``_arbor/*`` notification of the current backend and session, validated, as a signal."""
        if method == INDEX_CHANGED:
            if generation == self._generation:
                try:
                    self.indexChanged.emit(IndexChanged.model_validate(params))
                except ValidationError as exc:
                    log.warning("ignoring malformed _%s: %s", method, exc)
            return
        if method == CONTEXT_NOTIFICATION:
            try:
                fill = ContextFill.model_validate(params)
            except ValidationError as exc:
                log.warning("ignoring malformed _%s: %s", method, exc)
                return
            if generation == self._generation and fill.session_id == self.session_id:
                self.contextFilled.emit(fill)
            return
        if method == CHANGESET_NOTIFICATION:
            model: type[ChangeSetView | TreeEventBatch] = ChangeSetView
        elif method == TREE_NOTIFICATION:
            model = TreeEventBatch
        else:
            log.debug("ignoring extension notification _%s", method)
            return
        if generation != self._generation:
            return
        try:
            message = model.model_validate(params)
        except ValidationError as exc:
            log.warning("ignoring malformed _%s: %s", method, exc)
            return
        if message.session_id != self.session_id:
            return
        if isinstance(message, ChangeSetView):
            self.changesetReceived.emit(message)
        elif message.events:
            self.treeEvents.emit(message.events)

    def kill(self) -> None:
        """SIGKILL the backend's process group at once (window teardown, no waiting)."""
        self._stopping = True
        self._signal_group(signal.SIGKILL)

    async def aclose(self) -> None:
        """Stop the backend and wait until it is reaped (for the end of ``run_gui`` and tests)."""
        await self.stop()

    def _run_lifecycle(self, step: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
        previous = self._lifecycle

        async def after_previous() -> None:
            # Start/stop/restart never interleave: each waits for the one before it.
            # asyncio.wait ignores how the previous step ended but still lets this task be cancelled.
            if previous is not None and not previous.done():
                await asyncio.wait({previous})
            await step()

        self._lifecycle = spawn(after_previous(), name="backend lifecycle")
        return self._lifecycle

    async def _restart(self) -> None:
        resume = self.session_id
        await self._stop()
        await self._start(resume=resume)

    async def _start(self, resume: str | None) -> None:
        self._generation += 1
        generation = self._generation
        self._stopping = False
        self.stderr = StderrTail()
        self.agent_meta = None
        self._set_state(BackendState.STARTING)
        env = {**os.environ, **self._env} if self._env is not None else None
        try:
            # Spawn first: the backend's own start-up then overlaps with loading the SDK here.
            process = await spawn_agent(self.command, env)
        except OSError as exc:
            self._set_state(BackendState.STOPPED)
            self.errorRaised.emit(
                ErrorInfo(
                    kind="internal",
                    message=f"Cannot start the backend `{shlex.join(self.command)}`: {exc.strerror or exc}",
                    fix=f"Check that Arbor is installed in this Python, or set {BACKEND_COMMAND_ENV}.",
                )
            )
            return
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        drain = spawn(drain_stderr(process.stderr, self.stderr), name="drain backend stderr")
        self._watcher = spawn(self._watch(generation, process, drain), name="watch backend")
        await run_blocking(load_sdk)
        from acp import RequestError, connect_to_agent

        if process.returncode is not None:
            return  # died while the SDK loaded; the watcher has reported it
        self._conn = conn = connect_to_agent(
            _ClientCallbacks(self, generation), process.stdin, process.stdout
        )
        self._connections[generation] = conn

        try:
            await self._handshake(generation, conn, resume)
        except RequestError as exc:
            await self._fail_start(generation, error_from_request(exc))
        except TimeoutError:
            await self._fail_start(
                generation,
                ErrorInfo(
                    kind="internal",
                    message=f"The backend did not answer within {INITIALIZE_TIMEOUT_S:.0f} s.",
                    fix="Run `arbor doctor` in a terminal to see what it is waiting for.",
                ),
            )
        except (ConnectionError, ValidationError):
            # The process died mid-handshake (or spoke garbage); the watcher reports its exit and stderr.
            if process.returncode is None:
                self._signal_group(signal.SIGKILL)

    async def _handshake(self, generation: int, conn: ClientSideConnection, resume: str | None) -> None:
        from acp import PROTOCOL_VERSION, RequestError
        from acp.schema import ClientCapabilities, Implementation

        init = await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}}),
                client_info=Implementation(name="arbor", title="Arbor", version=client_version()),
            ),
            INITIALIZE_TIMEOUT_S,
        )
        capabilities = init.agent_capabilities
        self.can_load_session = bool(capabilities and capabilities.load_session)
        raw_meta = (capabilities.field_meta or {}).get(META_KEY) if capabilities else None
        try:
            self.agent_meta = AgentMeta.model_validate(raw_meta) if raw_meta is not None else None
        except ValidationError:
            log.warning("ignoring malformed agentCapabilities._meta.%s: %r", META_KEY, raw_meta)
            self.agent_meta = None
        self.agent_name = (init.agent_info.title or init.agent_info.name) if init.agent_info else None
        self.agentChanged.emit(self.agent_meta)

        cwd = str(self.workspace)
        if resume is not None:
            if self.can_load_session:
                self.session_id = resume
                self.replayStarting.emit()
                try:
                    loaded = await conn.load_session(cwd=cwd, session_id=resume, mcp_servers=[])
                except RequestError as exc:
                    self.replayFailed.emit(error_from_request(exc).message)
                else:
                    if loaded and loaded.modes:
                        self._take_modes(loaded.modes)
                    self._ready(generation, resume, replayed=True)
                    return
            else:
                self.replayFailed.emit("The agent cannot restore sessions (no loadSession capability).")
        created = await conn.new_session(cwd=cwd, mcp_servers=[])
        self.mode, self.modes = None, []
        if created.modes:
            self._take_modes(created.modes)
        self._ready(generation, created.session_id, replayed=False)

    def _take_modes(self, state: Any) -> None:
        self.mode = state.current_mode_id
        self.modes = [(m.id, m.name, m.description or "") for m in state.available_modes]

    def set_mode(self, mode_id: str) -> bool:
        """Switch the session's mode (agent architecture) for the next turns; False unless ready.

        ``modeChanged`` follows when the agent accepted it; a refusal comes as ``errorRaised``.
        """
        if self.state != BackendState.READY or self._conn is None or self.session_id is None:
            return False
        spawn(self._set_mode(self._generation, self._conn, self.session_id, mode_id), name="set-mode")
        return True

    async def _set_mode(
        self, generation: int, conn: ClientSideConnection, session_id: str, mode_id: str
    ) -> None:
        from acp import RequestError

        try:
            await conn.set_session_mode(session_id=session_id, mode_id=mode_id)
        except RequestError as exc:
            if generation == self._generation:
                self.errorRaised.emit(error_from_request(exc))
                self.modeChanged.emit(self.mode or "")
            return
        except ConnectionError:
            return
        if generation == self._generation:
            self.mode = mode_id
            self.modeChanged.emit(mode_id)

    def _ready(self, generation: int, session_id: str, *, replayed: bool) -> None:
        if generation != self._generation:
            return
        self.session_id = session_id
        self._set_state(BackendState.READY)
        self.sessionReady.emit(session_id, replayed)

    async def _fail_start(self, generation: int, info: ErrorInfo) -> None:
        if generation != self._generation:
            return
        self.errorRaised.emit(info)
        await self._stop()

    async def _prompt(self, generation: int, conn: ClientSideConnection, session_id: str, text: str) -> None:
        from acp import RequestError, text_block

        try:
            response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
        except RequestError as exc:
            if generation == self._generation:
                self.errorRaised.emit(error_from_request(exc))
                self._set_state(BackendState.READY)
            return
        except (ConnectionError, ValidationError):
            # Usually the process died and the watcher reports it. If it still runs, its stdout closed
            # or it spoke garbage: it is of no further use, and killing it lets the watcher report that.
            if generation == self._generation and self.pid is not None and not self._stopping:
                log.warning("backend connection lost while the process runs; killing it")
                self._signal_group(signal.SIGKILL)
            return
        if generation != self._generation:
            return
        meta = _turn_meta(response.field_meta)
        self.turnFinished.emit(response.stop_reason, meta)
        if meta is not None and meta.error is not None:
            self.errorRaised.emit(meta.error)
        self._set_state(BackendState.READY)

    async def _send_cancel(self, conn: ClientSideConnection, session_id: str) -> None:
        with contextlib.suppress(ConnectionError):
            await conn.cancel(session_id=session_id)

    async def _on_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        # Without a handler (the window has no permission dialog yet) refusing is the safe answer.
        if self.permission_handler is not None:
            choice = await self.permission_handler(session_id, tool_call, options)
            if choice is not None:
                return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice, outcome="selected"))
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def _on_session_update(self, generation: int, session_id: str, update: Any) -> None:
        if generation != self._generation or session_id != self.session_id:
            return
        if getattr(update, "session_update", None) == "current_mode_update":
            self.mode = update.current_mode_id
            self.modeChanged.emit(self.mode)
        self.sessionUpdate.emit(update)

    async def _watch(
        self,
        generation: int,
        process: asyncio.subprocess.Process,
        drain: asyncio.Task[None],
    ) -> None:
        code = await process.wait()
        # The last stderr lines explain the death; a grandchild holding the pipe must not delay us.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(drain), 1.0)
        conn = self._connections.pop(generation, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        if generation != self._generation:
            return
        self._conn = None
        died = not self._stopping
        self._set_state(BackendState.STOPPED)
        if died:
            log.warning("backend exited with %s", code)
            self.backendDied.emit(code, self.stderr.text())
        self.stopped.emit()

    async def _stop(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            if self.state != BackendState.STOPPED:
                self._set_state(BackendState.STOPPED)
            return
        self._stopping = True
        # EOF on stdin is the polite way to end an ACP agent; signals follow if it lingers.
        await stop_agent(process, self._connections.get(self._generation))
        # Let the watcher finish its bookkeeping (state, signals) before a restart bumps the generation.
        if self._watcher is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._watcher), STOP_GRACE_S)

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.process is not None:
            signal_group(self.process, sig)

    def _set_state(self, state: BackendState) -> None:
        if state != self.state:
            self.state = state
            self.stateChanged.emit(state.value)


def _turn_meta(field_meta: dict[str, Any] | None) -> TurnMeta | None:
    raw = (field_meta or {}).get(META_KEY)
    if raw is None:
        return None
    try:
        return TurnMeta.model_validate(raw)
    except ValidationError:
        log.warning("ignoring malformed PromptResponse._meta.%s", META_KEY)
        return None


def local_user_message(text: str) -> UserMessageChunk:
    """The update the chat applies for a prompt the user just sent (agents replay these on load)."""
    from acp import text_block
    from acp.schema import UserMessageChunk

    return UserMessageChunk(session_update="user_message_chunk", content=text_block(text))
