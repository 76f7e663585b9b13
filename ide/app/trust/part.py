"""Workspace trust: the status bar's "Restricted" button, Agent → Workspace Trust…, and the question asked
before the backend starts when the workspace's config asks for settings that wait for trust."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QToolButton

from ide.app.parts.base import AppContext, Part, Spec

if TYPE_CHECKING:
    from ide.app.trust.dialog import TrustDialog


class Trust(Part):
    """Asks, records the answer, reloads the settings and restarts the backend when trust changed."""

    spec = Spec("trust", order=80)

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._then_start = False
        self.button = QToolButton()
        self.button.setObjectName("trustButton")
        self.button.setToolTip(
            "This workspace's .arbor/config.toml asks for settings Arbor holds back until you trust it"
        )
        self.button.clicked.connect(self.ask)
        ctx.window.statusBar().insertPermanentWidget(0, self.button)
        self.action = ctx.action("agent", "Workspace &Trust…", self.ask)
        self.button.setVisible(False)
        self.action.setEnabled(False)
        ctx.with_settings(lambda _settings: self._show())  # once read, after the first frame

    @cached_property
    def dialog(self) -> TrustDialog:
        """What the workspace's config asks for, to trust or keep restricted: made when first asked (or
        read), never for the first frame."""
        from ide.app.trust.dialog import TrustDialog

        dialog = TrustDialog(self.ctx.window)
        dialog.decided.connect(self._on_decided)
        return dialog

    def start(self) -> bool:
        """A workspace whose config asks for settings that need trust, and whose user has not answered for
        exactly these settings, is asked first; the backend starts with the answer."""
        if self._holds_start():
            self._then_start = True
            self.dialog.ask(self.ctx.resolved)
            return False
        return True

    def _holds_start(self) -> bool:
        from ide.settings import trust_store  # with the settings, after the first frame

        resolved = self.ctx.resolved
        if resolved is None or not resolved.trust_keys or resolved.trusted:
            return False
        answered = trust_store().decision(self.ctx.workspace)
        return answered is None or answered.digest != resolved.digest

    def ask(self) -> None:
        """Show what the workspace's config asks for and let the user trust it or keep it restricted."""
        if self.ctx.resolved is not None and self.ctx.resolved.trust_keys:
            self.dialog.ask(self.ctx.resolved)

    def _on_decided(self, trusted: bool) -> None:
        from ide.settings import trust_store

        ctx, resolved = self.ctx, self.ctx.resolved
        if resolved is None or resolved.digest is None:
            return
        trust_store().record(ctx.workspace, resolved.digest, trusted=trusted)
        changed = trusted != resolved.trusted
        ctx.reload_settings()
        self._show()
        if self._then_start:
            self._then_start = False
            self.bridge.start()
        elif changed:
            ctx.window.restart_backend()  # the backend reads them anew

    def _show(self) -> None:
        resolved = self.ctx.resolved
        held = resolved.held_back if resolved is not None else []
        self.button.setVisible(bool(held))
        self.button.setText(f"Restricted: {len(held)} setting(s) held back")
        self.action.setEnabled(resolved is not None and bool(resolved.trust_keys))
