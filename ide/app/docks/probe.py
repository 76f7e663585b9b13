"""Agent → Test Model: probe every model the workspace uses; warn before the first turn about one that
cannot call tools (from what an earlier test found)."""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtWidgets import QMessageBox

from ide.app.docks.base import AppContext, Part
from ide.protocol.model import MODEL_PROBE, MODEL_PROBES_CACHED, ProbeParams, ProbeResult


class ModelProbe(Part):
    """The Test Model action, its report dialog, and the banner's warning about a model that cannot act."""

    name = "probe"
    order = 70
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
        self.bridge.sessionReady.connect(self._on_session_ready)

    def request(self, refresh: bool) -> bool:
        """A fresh probe (a real request per model) or the cached results; False if nothing was sent."""
        params = ProbeParams(cwd=str(self.ctx.workspace), refresh=refresh)
        method = MODEL_PROBE if refresh else MODEL_PROBES_CACHED
        return self.bridge.request(method, params, ProbeResult, self._on_probes)

    def test_models(self) -> None:
        """Probe every model the workspace uses; the answer opens a report."""
        if self.request(refresh=True):
            self._report = True
            self.ctx.message("Testing the models: one tool-call and one structured request each…")

    def _on_session_ready(self, *_: object) -> None:
        self.action.setEnabled(self.bridge.supports(MODEL_PROBE))
        self.request(refresh=False)  # what an earlier test found: warn before the first turn

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
