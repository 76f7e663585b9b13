"""One declaration per ``_arbor/*`` method: its name, what it takes and what it answers, written once.

Each feature's protocol module declares its requests as :class:`Method` and its notifications as
:class:`Notification`. The backend registers a handler against the declaration and gets the params
validated (``ide.backend.extensions``); the window's ``BackendBridge.request`` and
``ide.client.agentconn.ask``
take the declaration and hand back the answer read as its result type, so no caller restates a type.

A declaration *is* its wire name (a ``str``, without the leading underscore the SDK adds), so whatever
only names a method — the list ``initialize`` advertises, a test sending raw JSON — uses it as it is.

A request also carries its time limit: how long a client waits for the answer before it tells its caller
that none came (``ide.client.agentconn.within``). ACP's own requests are declared the same way, with their
limits, in :mod:`ide.protocol.standard`.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)
N = TypeVar("N", bound=BaseModel)


QUERY_TIMEOUT_S = 60.0
"""The limit of a query (index, outline, review, memory, LSP…): a request declared without its own."""


class Request(str):
    """A request by its name, with how long a client waits for its answer (``timeout_s``; None: as long
    as it takes, as a turn does, which Stop ends)."""

    timeout_s: float | None

    def __new__(cls, name: str, timeout_s: float | None) -> Request:
        declared = super().__new__(cls, name)
        declared.timeout_s = timeout_s
        return declared

    @property
    def wire_name(self) -> str:
        """The method's name in the JSON-RPC message (what a client that got no answer names)."""
        return str(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.timeout_s))


class Method(Request, Generic[P, R]):
    """An ``_arbor/*`` request: ``Method("arbor/index/status", IndexStatusParams, IndexStatus)``, a query
    (:data:`QUERY_TIMEOUT_S`) unless it says how long its work may take: ``timeout_s=600.0``."""

    params: type[P]
    result: type[R]

    def __new__(
        cls, name: str, params: type[P], result: type[R], timeout_s: float | None = QUERY_TIMEOUT_S
    ) -> Method[P, R]:
        declared = str.__new__(cls, name)
        declared.params, declared.result, declared.timeout_s = params, result, timeout_s
        return declared

    @property
    def wire_name(self) -> str:
        return f"_{self}"  # the SDK sends an extension method with a leading underscore

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.params, self.result, self.timeout_s))


class Notification(str, Generic[N]):
    """A notification the backend sends: ``Notification("arbor/changeset", ChangeSetView)``."""

    payload: type[N]

    def __new__(cls, name: str, payload: type[N]) -> Notification[N]:
        declared = super().__new__(cls, name)
        declared.payload = payload
        return declared

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.payload))
