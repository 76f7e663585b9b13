"""The status bar's context fill: how full the turn's latest model request is of the model's window."""

from __future__ import annotations

from ide.app.docks.base import AppContext, Part, Spec
from ide.protocol.model import CONTEXT_NOTIFICATION, ContextFill


class ContextFillPart(Part):
    """Shows each ``_arbor/context`` notification of the current session in the status bar."""

    spec = Spec("context", order=75)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        ctx.bridge.on_notification(CONTEXT_NOTIFICATION, self._show)

    def _show(self, fill: ContextFill) -> None:
        self.ctx.status.set_context(fill.tokens, fill.window)
