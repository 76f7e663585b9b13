"""Arbor's ``_arbor/*`` extension methods, one module per feature, found by :func:`registry`.

Each module of this package exports ``HANDLERS``, a tuple of :class:`Handler` — a method declared in
``ide.protocol`` (:class:`~ide.protocol.method.Method`) and ``async handler(backend, params)`` that gets
the params validated as the declaration's params type and returns its result type. It may export
``NOTIFICATIONS`` (the :class:`~ide.protocol.method.Notification` s its feature sends) and ``HOOKS``
(:class:`Hooks`: what the feature does when a turn ends, is cancelled, a session is loaded, or the index
changes). ``initialize`` advertises exactly what the registry holds, ``ext_method`` dispatches through it and
the ACP agent calls the hooks through it, so the agent knows no feature and a new feature is one new module.

A handler sees the agent as :class:`Backend` and each live session as :class:`SessionApi`: what it may use
of them, and nothing else.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import FileSystemCapabilities

    from ide.backend.runs import ArmedFork, Kept, LiveRun, RunInfo
    from ide.backend.services import Services
    from ide.changes import ChangeSet, Review
    from ide.changes.shadow import Shadow
    from ide.memory.store import MemoryStore
    from ide.protocol.index import IndexChanged
    from ide.protocol.method import Method
    from ide.settings import Settings
    from ide.workflows.mode import ActiveRun

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


class SessionApi(Protocol):
    """What a handler may use of a live session (``ide.backend.session.Session`` implements it)."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def mode(self) -> str: ...

    @property
    def review(self) -> Review:
        """The session's pending review; it owns :attr:`changeset`."""
        ...

    @property
    def changeset(self) -> ChangeSet:
        """The overlay the agent's edits go into (what its reads see)."""
        ...

    @property
    def memory(self) -> MemoryStore | None:
        """The workspace's memory writing as this session (None: memory is off)."""
        ...

    @property
    def shadow(self) -> Shadow | None:
        """A foreign agent's shadow workspace, when the session reviews what it changed there."""
        ...

    @property
    def running(self) -> bool:
        """A turn of Arbor's agent runs in the session."""
        ...

    @property
    def cancel_requested(self) -> bool:
        """The client cancelled the turn being answered (a question it asks meanwhile was cancelled)."""
        ...

    @property
    def workflow(self) -> str:
        """The workflow the workflow mode runs (auto: the orchestrator picks)."""
        ...

    @property
    def interrupted(self) -> ActiveRun | None:
        """A workflow run that stopped before it finished (/resume goes on with it)."""
        ...

    async def save_review(self) -> None:
        """Keep the pending review in the session store, so a restarted backend still has it."""
        ...

    def branch(self, changeset_id: str) -> ChangeSet | None:
        """A branch change set of one of the session's last tree searches (or its own change set)."""
        ...

    def choose_workflow(self, name: str) -> bool:
        """Run ``name`` (or ``auto``) in the workflow mode from now on, kept in the session store; True when
        the session's mode changed to the workflow mode."""
        ...

    async def runs(self) -> list[RunInfo]:
        """Every run of the session, oldest first: stored with its history (a restored session's too), and
        the live one."""
        ...

    async def kept(self, run_id: str) -> Kept | None:
        """What one of the session's runs left to continue from: its branches, the state after its nodes,
        its notes (None: not kept any more: the store keeps the last ``KEPT_RUN_STATES`` runs')."""
        ...

    @property
    def live_run(self) -> LiveRun | None:
        """The run of the turn now running (its id, architecture and steering), once it records."""
        ...

    def arm_fork(self, fork: ArmedFork | None) -> None:
        """Make the session's next prompt continue from a node, its text the hint (None: disarm)."""
        ...

    def use_changes(self, changeset: ChangeSet) -> None:
        """Make a copy of ``changeset`` the pending change set, in a review with no decisions yet."""
        ...

    def drop_shadow(self) -> Shadow | None:
        """Take the shadow off the session (its review stays); the caller removes it."""
        ...


class Backend(Protocol):
    """What a handler may use of the ACP agent that serves it."""

    services: Services

    @property
    def conn(self) -> Client: ...

    def session(self, session_id: str) -> SessionApi:
        """The live session, or an Invalid params error naming it."""
        ...

    def find_session(self, session_id: str) -> SessionApi | None: ...

    def sessions_in(self, cwd: str) -> list[SessionApi]:
        """The live sessions over the workspace ``cwd`` (one Roll back concerns them all)."""
        ...

    async def open_session(
        self, cwd: str, settings: Settings, title: str, *, shadow: Shadow | None = None
    ) -> SessionApi:
        """A new stored session titled ``title`` that no client has prompted (it holds a change set that
        comes by other means: another agent's edits, or the ``shadow`` workspace it works in)."""
        ...

    def workspace(self, cwd: str) -> tuple[str, Settings]:
        """``cwd`` checked (absolute, a directory) and its settings, or an Invalid params error."""
        ...

    def client_wants(self, feature: str) -> bool:
        """True when the client asked for an Arbor extension in ``_meta.arbor`` ("review", "tree")."""
        ...

    def client_fs(self) -> FileSystemCapabilities | None:
        """The client's ``fs`` capability from initialize, if it offered one."""
        ...


@dataclass(frozen=True)
class Handler(Generic[P, R]):
    """A handler registered against its declaration: ``Handler(ix.INDEX_STATUS, status)``."""

    method: Method[P, R]
    run: Callable[[Backend, P], Awaitable[R]]

    async def answer(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to ``params``; params that do not fit the declaration raise pydantic's
        ``ValidationError`` (the agent answers it as Invalid params)."""
        result = await self.run(backend, self.method.params.model_validate(params))
        return result.model_dump(mode="json")


SessionHook = Callable[["Backend", "SessionApi"], Awaitable[None]]


@dataclass(frozen=True)
class Hooks:
    """What a feature does at moments of the core's life; the agent calls every module's hooks in turn."""

    turn_end: SessionHook | None = None
    """A turn ended as asked (not cancelled, not failed); the session's change set holds its edits."""
    cancel: SessionHook | None = None
    """A turn was cancelled: its change set stays pending (the prompt's answer lists the files)."""
    session_load: SessionHook | None = None
    """A client loaded the session (``session/load``): its history was replayed and the slash commands
    offered; what the feature has to tell about the session goes last."""
    index_changed: Callable[[Backend, IndexChanged], Awaitable[None]] | None = None
    """A workspace's index changed (a pass finished, or the watcher re-indexed files)."""


@dataclass(frozen=True)
class Registry:
    handlers: dict[str, Handler[Any, Any]]
    notifications: tuple[str, ...]
    hooks: tuple[Hooks, ...]

    @property
    def advertised(self) -> list[str]:
        """Every ``_arbor/*`` method and notification this backend serves or sends (without the ``_``)."""
        return [str(name) for name in (*self.handlers, *self.notifications)]

    async def turn_ended(self, backend: Backend, session: SessionApi) -> None:
        for hooks in self.hooks:
            if hooks.turn_end is not None:
                await hooks.turn_end(backend, session)

    async def turn_cancelled(self, backend: Backend, session: SessionApi) -> None:
        for hooks in self.hooks:
            if hooks.cancel is not None:
                await hooks.cancel(backend, session)

    async def session_loaded(self, backend: Backend, session: SessionApi) -> None:
        for hooks in self.hooks:
            if hooks.session_load is not None:
                await hooks.session_load(backend, session)

    async def index_changed(self, backend: Backend, change: IndexChanged) -> None:
        for hooks in self.hooks:
            if hooks.index_changed is not None:
                await hooks.index_changed(backend, change)


@functools.cache
def registry() -> Registry:
    """The handlers, notifications and hooks of every module in this package."""
    handlers: dict[str, Handler[Any, Any]] = {}
    notifications: list[str] = []
    hooks: list[Hooks] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for handler in getattr(module, "HANDLERS", ()):
            if handler.method in handlers:
                raise RuntimeError(f"_{handler.method} is handled twice (in {info.name} and before)")
            handlers[handler.method] = handler
        notifications.extend(getattr(module, "NOTIFICATIONS", ()))
        if hasattr(module, "HOOKS"):
            hooks.append(module.HOOKS)
    return Registry(handlers, tuple(notifications), tuple(hooks))
