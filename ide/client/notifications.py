"""Extension notifications on a client, Qt-free: each routed to its subscribers, read as its model, one that
carries a ``session_id`` only when that is the current session's — and those an agent sends of its own that
nothing handles ignored quietly (one debug line, not the SDK's traceback).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ide.protocol.method import Notification

log = logging.getLogger(__name__)

T = TypeVar("T", bound="BaseModel")


METHOD_NOT_FOUND = -32601


class QuietUnknownNotifications(logging.Filter):
    """The ACP SDK logs a traceback (on the root logger) for every notification it has no handler for.
    Agents send their own (Qwen Code: ``qwen/notify/session/prompt-suggestion``, once a turn), which a
    client may ignore: each becomes one debug line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Unhandled error while handling notification"):
            return True
        error = record.exc_info[1] if record.exc_info else None
        if getattr(error, "code", None) != METHOD_NOT_FOUND:
            return True
        method = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        log.debug("ignoring the agent's notification %s: no handler", method)
        return False


def quiet_unknown_notifications() -> None:
    """Install :class:`QuietUnknownNotifications` on the root logger, once."""
    root = logging.getLogger()
    if not any(isinstance(installed, QuietUnknownNotifications) for installed in root.filters):
        root.addFilter(QuietUnknownNotifications())


class NotificationRouter:
    """Extension notifications to their subscribers: each read as its model, one that carries a
    ``session_id`` delivered only when that is the current session's."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[tuple[type[BaseModel], Callable[[Any], None]]]] = {}

    def subscribe(self, notification: Notification[T], handler: Callable[[T], None]) -> None:
        self._subscribers.setdefault(notification, []).append((notification.payload, handler))

    def dispatch(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        from pydantic import ValidationError

        for model, handler in self._subscribers.get(method, ()):
            try:
                message = model.model_validate(params)
            except ValidationError as exc:
                log.warning("ignoring malformed _%s: %s", method, exc)
                return
            if getattr(message, "session_id", session_id) == session_id:
                handler(message)
        if method not in self._subscribers:
            log.debug("ignoring extension notification _%s", method)
