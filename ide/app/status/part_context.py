"""The status bar's context fill: how full the turn's latest model request is of the model's window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ide.app.parts.base import Part, Spec

if TYPE_CHECKING:
    from ide.protocol.model import ContextFill


class ContextFillPart(Part):
    """Shows each ``_arbor/context`` notification of the current session in the status bar."""

    spec = Spec("context", order=75)

    def subscribe(self) -> None:
        from ide.protocol.model import CONTEXT_NOTIFICATION

        self.bridge.on_notification(CONTEXT_NOTIFICATION, self._show)

    def _show(self, fill: ContextFill) -> None:
        self.ctx.status.set_context(fill.tokens, fill.window)
