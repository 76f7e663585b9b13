"""Where the Review dock's ``_arbor/review/*`` requests go: a :class:`ReviewChannel`.

The dock starts with Arbor's own backend (the bridge, whose ``request`` has this shape). When a foreign
agent runs, its edits are held by a second connection to Arbor's backend, and the foreign-agent part
(``ide/app/docks/external.py``) hands the dock its own channel (:class:`~ide.app.external.ForeignReview`),
which knows which requests are its review session's. The dock never looks at a request to route it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from pydantic import BaseModel

from ide.protocol import ErrorInfo

T = TypeVar("T", bound=BaseModel)


class ReviewChannel(Protocol):
    """Sends one review request; its answer goes to ``on_result``, a failure to ``on_error``."""

    def request(
        self,
        method: str,
        params: BaseModel,
        result_type: type[T],
        on_result: Callable[[T], None],
        on_error: Callable[[ErrorInfo], None],
    ) -> bool:
        """False, and nothing sent, when the connection is not up."""
        ...
