"""Arbor's ``_arbor/*`` extension methods, one module per feature, found by :func:`registry`.

Each module of this package exports ``HANDLERS`` (method name → ``async handler(backend, params)``
returning a pydantic model) and may export ``NOTIFICATIONS`` (the ``_arbor/*`` notifications its feature
sends). ``initialize`` advertises exactly what the registry holds and ``ext_method`` dispatches through
it, so what is advertised and what is served cannot drift. A new feature is one new module here.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import FileSystemCapabilities

    from ide.backend.services import Services
    from ide.backend.session import Session
    from ide.settings import Settings


class Backend(Protocol):
    """What a handler may use of the ACP agent that serves it."""

    services: Services

    @property
    def conn(self) -> Client: ...

    def session(self, session_id: str) -> Session:
        """The live session, or an Invalid params error naming it."""
        ...

    def find_session(self, session_id: str) -> Session | None: ...

    async def open_review_session(self, cwd: str, settings: Settings, title: str) -> Session:
        """A new session that only holds a change set for review (another agent's edits)."""
        ...

    def workspace(self, cwd: str) -> tuple[str, Settings]:
        """``cwd`` checked (absolute, a directory) and its settings, or an Invalid params error."""
        ...

    async def save_review(self, session: Session) -> None: ...

    def client_wants(self, feature: str) -> bool:
        """True when the client asked for an Arbor extension in ``_meta.arbor`` ("review", "tree")."""
        ...

    def client_fs(self) -> FileSystemCapabilities | None:
        """The client's ``fs`` capability from initialize, if it offered one."""
        ...


Handler = Callable[[Backend, dict[str, Any]], Awaitable[BaseModel]]


@dataclass(frozen=True)
class Registry:
    handlers: dict[str, Handler]
    notifications: tuple[str, ...]

    @property
    def advertised(self) -> list[str]:
        """Every ``_arbor/*`` method and notification this backend serves or sends (without the ``_``)."""
        return [*self.handlers, *self.notifications]


@functools.cache
def registry() -> Registry:
    """The handlers and notifications of every module in this package."""
    handlers: dict[str, Handler] = {}
    notifications: list[str] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for method, handler in getattr(module, "HANDLERS", {}).items():
            if method in handlers:
                raise RuntimeError(f"_{method} is handled twice (in {info.name} and before)")
            handlers[method] = handler
        notifications.extend(getattr(module, "NOTIFICATIONS", ()))
    return Registry(handlers, tuple(notifications))
