"""One declaration per ``_arbor/*`` method: its name, what it takes and what it answers, written once.

Each feature's protocol module declares its requests as :class:`Method` and its notifications as
:class:`Notification`. The backend registers a handler against the declaration and gets the params
validated (``ide.backend.extensions``); the window's ``BackendBridge.request`` and ``ide.agentconn.ask``
take the declaration and hand back the answer read as its result type, so no caller restates a type.

A declaration *is* its wire name (a ``str``, without the leading underscore the SDK adds), so whatever
only names a method — the list ``initialize`` advertises, the request time limits, a test sending raw
JSON — uses it as it is.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)
N = TypeVar("N", bound=BaseModel)


class Method(str, Generic[P, R]):
    """A request: ``Method("arbor/index/status", IndexStatusParams, IndexStatus)``."""

    params: type[P]
    result: type[R]

    def __new__(cls, name: str, params: type[P], result: type[R]) -> Method[P, R]:
        declared = super().__new__(cls, name)
        declared.params, declared.result = params, result
        return declared

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.params, self.result))


class Notification(str, Generic[N]):
    """A notification the backend sends: ``Notification("arbor/changeset", ChangeSetView)``."""

    payload: type[N]

    def __new__(cls, name: str, payload: type[N]) -> Notification[N]:
        declared = super().__new__(cls, name)
        declared.payload = payload
        return declared

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.payload))
