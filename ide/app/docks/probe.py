"""The model up front: a health check as a session opens (the status bar's dot, the banner when a turn
would fail); Agent → Test Model probes every model the workspace uses; a warning before the first turn
about one that cannot call tools (from what an earlier test found)."""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtWidgets import QMessageBox

from ide.app.acp_client import BackendState
from ide.app.docks.base import AppContext, Part, Spec
from ide.protocol import ErrorInfo, ErrorKind
from ide.protocol.model import (
    MODEL_HEALTH,
    MODEL_PROBE,
    MODEL_PROBES_CACHED,
    HealthParams,
    ModelHealth,
    ProbeParams,
    ProbeResult,
)

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
    """The Test Model action, its report dialog, and the banner's warning about a model that cannot act."""

    spec = Spec("probe", order=70)
    exposes: ClassVar[dict[str, str]] = {"test_model_action": "action", "probe_dialog": "dialog"}

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._report = False
        self.dialog = QMessageBox(ctx.window)
        self.dialog.setObjectName("probeReport")
        self.dialog.setWindowTitle("Test model")
        self.dialog.setIcon(QMessageBox.Icon.Information)
        self.action = ctx.action("agent", "Test &Model", self.test_models)
        self.action.setToolTip(
            "Send each model one real tool-call request and one structured request, and show how it did"
        )
        self.health: ModelHealth | None = None
        """What the last health check (or a turn's model error) said about the default model."""

    def request(self, refresh: bool) -> bool:
        """A fresh probe (a real request per model) or the cached results; False if nothing was sent."""
        params = ProbeParams(cwd=str(self.ctx.workspace), refresh=refresh)
        method = MODEL_PROBE if refresh else MODEL_PROBES_CACHED
        return self.bridge.request(method, params, self._on_probes)

    def test_models(self) -> None:
        """Probe every model the workspace uses; the answer opens a report."""
        if self.request(refresh=True):
            self._report = True
            self.ctx.message("Testing the models: one tool-call and one structured request each…")

    def check_health(self) -> bool:
        """Ask whether the default model can answer (its server, the model, tools); False if not sent."""
        params = HealthParams(cwd=str(self.ctx.workspace))
        return self.bridge.request(MODEL_HEALTH, params, self._on_health)

    def on_session_ready(self, *_: object) -> None:
        self.action.setEnabled(self.bridge.supports(MODEL_PROBE))
        self.request(refresh=False)  # what an earlier test found: warn before the first turn
        if not self.bridge.supports(MODEL_HEALTH) or not self.check_health():
            self.ctx.status.set_model_health(None, "This agent does not report whether its model can answer.")

    def on_state(self, state: str) -> None:
        if state == BackendState.STOPPED:
            self.health = None
            self.ctx.status.set_model_health(None, "The backend is not running.")

    def _on_health(self, health: ModelHealth) -> None:
        self.health = health
        self.ctx.status.set_model_health(health)
        if health.level == "error":
            failed = next((check.name for check in health.checks if check.ok is False), "")
            self.ctx.banner.show_error(
                ErrorInfo(
                    kind=ERROR_KINDS.get(failed, "settings"),
                    message=f"The model {health.model} cannot answer: {health.reason}",
                    fix=health.fix,
                )
            )
        elif health.level == "warning" and self.ctx.banner.kind is None:
            self.ctx.banner.show_notice(f"The model {health.model}: {health.reason}", health.fix or "")

    def on_error(self, info: ErrorInfo) -> None:
        if info.kind not in MODEL_FAILURES:
            return
        model = self.health.model if self.health else getattr(self.bridge.agent_meta, "model", "the model")
        self.health = ModelHealth(model=model, level="error", reason=info.message, fix=info.fix)
        self.ctx.status.set_model_health(self.health)

    def _on_probes(self, result: ProbeResult) -> None:
        lines = [probe.describe() for probe in result.probes]
        blocked = [probe for probe in result.probes if "default" in probe.roles and probe.cannot_act]
        if blocked:
            probe = blocked[0]
            self.ctx.banner.show_notice(
                f"{probe.model} did not call a tool when Arbor tested it, so the agent cannot act with it "
                f"({probe.verdict()[1]}).",
                "Pick a model that calls tools (README: Models), or run Agent → Test Model again.",
            )
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
