"""The model up front: a health check as a session opens (the status bar's model element, with the fix when
a turn would fail, and the start page's model card); Agent → Test Model probes every model the workspace
uses; a warning before the first turn about one that cannot call tools (from what an earlier test found).
None of it covers the work: the banner is for what a turn or the backend actually did."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMessageBox

from ide.app.acp_client import BackendState
from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import ModelChecks

if TYPE_CHECKING:
    from ide.protocol import ErrorInfo, ErrorKind
    from ide.protocol.model import ModelHealth, ProbeResult

ERROR_KINDS: dict[str, ErrorKind] = {
    "model server reachable": "model_unreachable",
    "model pulled": "model_not_found",
    "provider package installed": "provider_missing",
    "API key set": "model_auth",
    "script file": "script_exhausted",
}
"""The failed health check → the kind of error a turn would raise (the banner's kind)."""
MODEL_FAILURES = frozenset({*ERROR_KINDS.values(), "no_tool_support", "model_timeout", "script_mismatch"})
"""Errors of a turn that say the model cannot answer now: its dot turns red."""


class ModelProbe(Part):
    """The Test Model action, its report dialog, and the model's health in the status bar."""

    spec = Spec("probe", order=70)
    provides = (ModelChecks,)

    healthChanged = Signal(object)
    """The default model's :class:`ModelHealth` (None: not known)."""
    probesChanged = Signal(object)
    """The ``list[ModelProbe]`` an answer of the probe gave (fresh or cached)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._report = False
        self.action = ctx.action("agent", "Test &Model", lambda: self.test_models())
        self.action.setToolTip(
            "Send each model one real tool-call request and one structured request, and show how it did"
        )
        self.health: ModelHealth | None = None
        """What the last health check (or a turn's model error) said about the default model."""
        self.note = ""
        """Why :attr:`health` is not known, as the status bar's model element says it ("" when it is)."""
        self._blocked: ModelHealth | None = None
        """What a probe found about the default model when the agent cannot act with it (a warning)."""

    @cached_property
    def dialog(self) -> QMessageBox:
        """The report of a Test Model: made when first shown (or read), never for the first frame."""
        dialog = QMessageBox(self.ctx.window)
        dialog.setObjectName("probeReport")
        dialog.setWindowTitle("Test model")
        dialog.setIcon(QMessageBox.Icon.Information)
        return dialog

    def request(self, refresh: bool) -> bool:
        """A fresh probe (a real request per model) or the cached results; False if nothing was sent."""
        from ide.protocol.model import MODEL_PROBE, MODEL_PROBES_CACHED, ProbeParams

        params = ProbeParams(cwd=str(self.ctx.workspace), refresh=refresh)
        method = MODEL_PROBE if refresh else MODEL_PROBES_CACHED
        return self.bridge.request(method, params, self._on_probes)

    def test_models(self, *, report: bool = True) -> None:
        """Probe every model the workspace uses; the answer opens a report (``report``) and reaches
        :attr:`probesChanged`."""
        if self.request(refresh=True):
            self._report = report
            self.ctx.message("Testing the models: one tool-call and one structured request each…")

    def check_health(self) -> bool:
        """Ask whether the default model can answer (its server, the model, tools); False if not sent."""
        from ide.protocol.model import MODEL_HEALTH, HealthParams

        params = HealthParams(cwd=str(self.ctx.workspace))
        return self.bridge.request(MODEL_HEALTH, params, self._on_health)

    def on_session_ready(self, *_: object) -> None:
        from ide.protocol.model import MODEL_HEALTH, MODEL_PROBE

        self.action.setEnabled(self.bridge.supports(MODEL_PROBE))
        self.request(refresh=False)  # what an earlier test found: warn before the first turn
        if not self.bridge.supports(MODEL_HEALTH) or not self.check_health():
            self._set_health(None, "This agent does not report whether its model can answer.")

    def on_state(self, state: str) -> None:
        if state == BackendState.STOPPED:
            self._set_health(None, "The backend is not running.")

    def _set_health(self, health: ModelHealth | None, note: str = "") -> None:
        self.health, self.note = health, note
        self.ctx.status.set_model_health(health, note)
        self.healthChanged.emit(health)

    def _on_health(self, health: ModelHealth) -> None:
        blocked = self._blocked
        if health.level == "ok" and blocked is not None:
            health = blocked  # the health check passed, but an earlier test saw the model never call a tool
        self._set_health(health)

    def on_error(self, info: ErrorInfo) -> None:
        from ide.protocol.model import ModelHealth

        if info.kind not in MODEL_FAILURES:
            return
        model = self.health.model if self.health else getattr(self.bridge.agent_meta, "model", "the model")
        self._set_health(ModelHealth(model=model, level="error", reason=info.message, fix=info.fix))

    def _on_probes(self, result: ProbeResult) -> None:
        from ide.protocol.model import ModelHealth

        lines = [probe.describe() for probe in result.probes]
        blocked = [probe for probe in result.probes if "default" in probe.roles and probe.cannot_act]
        if blocked:
            probe = blocked[0]
            self._blocked = ModelHealth(
                model=probe.model,
                level="warning",
                reason=f"did not call a tool when Arbor tested it, so the agent cannot act with it "
                f"({probe.verdict()[1]})",
                fix="Pick a model that calls tools (README: Models), or run Agent → Test Model again.",
            )
            if self.health is None or self.health.level == "ok":
                self._set_health(self._blocked)
        elif result.fresh:
            self._blocked = None
        self.probesChanged.emit(list(result.probes))
        recovered = [probe.model for probe in result.probes if probe.tool_calls == "recovered"]
        model = self.ctx.status.model
        if recovered:
            model.setToolTip(
                model.toolTip() + f"\n{', '.join(recovered)}: sends tool calls as text; Arbor recovers them"
            )
        if self._report and result.fresh:
            self._report = False
            self.ctx.window.statusBar().clearMessage()
            self.dialog.setText("\n".join(lines) or "No model answered the test.")
            self.dialog.open()
