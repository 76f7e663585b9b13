"""Arbor's ``_arbor/*`` extension methods, one module per feature, found by :func:`registry`.

Each module of this package exports ``HANDLERS``, a tuple of :class:`Handler` — a method declared in
``ide.protocol`` (:class:`~ide.protocol.method.Method`) and ``async handler(backend, params)`` that gets
the params validated as the declaration's params type and returns its result type. It may export
``NOTIFICATIONS`` (the :class:`~ide.protocol.method.Notification` s its feature sends) and ``HOOKS``
(:class:`Hooks`: what the feature does when a turn ends, is cancelled, or the index changes).
``initialize`` advertises exactly what the registry holds, ``ext_method`` dispatches through it and the
ACP agent calls the hooks through it, so the agent knows no feature and a new feature is one new module.
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

    from ide.backend.services import Services
    from ide.backend.session import Session
    from ide.protocol.index import IndexChanged
    from ide.protocol.method import Method
    from ide.settings import Settings

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


class Backend(Protocol):
    """What a handler may use of the ACP agent that serves it."""

    services: Services

    @property
    def conn(self) -> Client: ...

    def session(self, session_id: str) -> Session:
        """The live session, or an Invalid params error naming it."""
        ...

    def find_session(self, session_id: str) -> Session | None: ...

    def sessions_in(self, cwd: str) -> list[Session]:
        """The live sessions over the workspace ``cwd`` (one Roll back concerns them all)."""
        ...

    async def open_session(self, cwd: str, settings: Settings, title: str) -> Session:
        """A new stored session titled ``title`` that no client has prompted (it holds a change set that
        comes by other means: another agent's edits)."""
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


SessionHook = Callable[["Backend", "Session"], Awaitable[None]]


@dataclass(frozen=True)
class Hooks:
    """What a feature does at moments of the core's life; the agent calls every module's hooks in turn."""

    turn_end: SessionHook | None = None
    """A turn ended as asked (not cancelled, not failed); the session's change set holds its edits."""
    cancel: SessionHook | None = None
    """A turn was cancelled: its change set stays pending (the prompt's answer lists the files)."""
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

    async def turn_ended(self, backend: Backend, session: Session) -> None:
        for hooks in self.hooks:
            if hooks.turn_end is not None:
                await hooks.turn_end(backend, session)

    async def turn_cancelled(self, backend: Backend, session: Session) -> None:
        for hooks in self.hooks:
            if hooks.cancel is not None:
                await hooks.cancel(backend, session)

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
