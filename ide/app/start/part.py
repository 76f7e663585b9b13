"""The start page's part: shows :class:`~ide.app.start.page.StartPage` in the window's centre while the
conversation is empty, keeps its model card and recent sessions current, and carries out what it offers —
a model switched in this window's backend, the recorded sample tree, the scripted demo, an eval report,
an earlier session.

It leaves the centre to the code viewer at the first file opened, prompt sent or session reopened, and
never appears for ``arbor --open`` (:meth:`StartPart.leave` before the window shows). View → Start Page,
or a click on the model's status element, brings it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog

from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import Chat, EvalReports, ModelChecks, SearchTrees
from ide.app.parts.needs import Requires
from ide.app.sessions.part import when
from ide.app.start.demo import NOT_SHIPPED, SAMPLE_TREE, holds_sample_project, sample_dir
from ide.app.start.demo_window import DemoRun, SampleContinuation
from ide.app.start.page import StartPage
from ide.client.agentproc import AgentChoice
from ide.client.sessions import SessionSummary

if TYPE_CHECKING:
    from ide.protocol.model import ModelHealth
    from ide.protocol.tree import TreeEvent

MODEL_ENV = ("ARBOR_MODEL", "ARBOR_LLM_", "OLLAMA_", "OPENAI_")
"""What of this window's backend environment says which model answers (and where its server is): what a
continuation of the sample in a demo window takes along."""
KEEP_MODEL = 'To keep it for every window, put [llm] model = "{spec}"{url} in config.toml (README: Models).'


class StartPart(Part):
    """The start page in the centre, and what its buttons do."""

    spec = Spec("start", order=90)
    chat = Requires(Chat)
    trees = Requires(SearchTrees)
    reports = Requires(EvalReports)
    models = Requires(ModelChecks)

    demoOpened = Signal(object)
    """The MainWindow a demo opened (shown, its backend starting)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.page = StartPage(ctx.workspace.name)
        self.demos: list[DemoRun] = []
        """The demos started from this page, each with its window (for scripts and tests)."""
        self._probe_next_session = False
        self.samples = sample_dir()
        self.page.set_sample_available(self.samples is not None, NOT_SHIPPED)
        self.report_dialog: QFileDialog | None = None
        """The Open eval report dialog, made at its first use (a QFileDialog costs more than the page)."""

        ctx.centre.addWidget(self.page)
        ctx.centre.setCurrentWidget(self.page)
        self.action = ctx.action("view", "Start &Page", self.show_page)

        page, bridge = self.page, self.bridge
        page.ollamaModelChosen.connect(lambda name: self.use_model({"ARBOR_MODEL": f"ollama:{name}"}))
        page.openaiTestRequested.connect(self._test_openai)
        page.testRequested.connect(lambda: self.models.test_models(report=False))
        page.sampleRequested.connect(self.open_sample)
        page.demoRequested.connect(lambda: self.run_demo())
        page.reportRequested.connect(self.open_report_dialog)
        page.sessionRequested.connect(self._open_session)
        self.models.healthChanged.connect(self._show_health)
        self.models.probesChanged.connect(page.set_probes)
        bridge.agentChanged.connect(lambda _meta: self._show_model())
        ctx.status.healthClicked.connect(self.show_page)
        ctx.viewer.fileShown.connect(lambda _path: self.leave())
        ctx.window.promptSent.connect(lambda _text: self.leave())

    @property
    def shown(self) -> bool:
        """The page is what the centre shows."""
        return self.ctx.centre.currentWidget() is self.page

    def leave(self) -> None:
        """Give the centre to the code viewer."""
        self.ctx.centre.setCurrentWidget(self.ctx.viewer)

    def show_page(self) -> None:
        """Show the page in the centre (View → Start Page, the model's status element)."""
        self.ctx.centre.setCurrentWidget(self.page)
        self.refresh_sessions()

    def on_session_ready(self, session_id: str, replayed: bool) -> None:
        self._show_model()
        self.refresh_sessions()
        if replayed and self.chat.panel.views():
            self.leave()  # a reopened conversation is the work now
        if self._probe_next_session:
            self._probe_next_session = False
            self.models.test_models(report=False)

    def on_turn_finished(self, stop_reason: str, meta: object) -> None:
        self.refresh_sessions()

    def _show_model(self) -> None:
        meta = self.bridge.agent_meta
        self.page.set_model(meta.model if meta is not None else None, self.bridge.agent_name)

    def _show_health(self, health: ModelHealth | None) -> None:
        self.page.set_health(health, self.models.note)  # the status bar's words: one state, said once
        if health is not None:
            reach = next((check for check in health.checks if check.name == "model server reachable"), None)
            self.page.set_ollama_models(health.available, reach.detail if reach is not None else "")

    def use_model(self, env: dict[str, str]) -> bool:
        """Restart this window's backend (Arbor's own) with ``env`` on top of its environment: a model
        for this window only; the page says how to keep it. False when the agent is not Arbor's."""
        choice = self.bridge.choice
        if not choice.is_arbor:
            self.page.set_model_note(f"The agent {choice.name} chooses its own model.")
            return False
        self.bridge.switch(AgentChoice(choice.name, choice.command, {**choice.env, **env}))
        url = env.get("ARBOR_LLM_OPENAI_BASE_URL")
        self.page.set_model_note(
            f"Restarting the backend with {env['ARBOR_MODEL']} for this window. "
            + KEEP_MODEL.format(spec=env["ARBOR_MODEL"], url=f', openai_base_url = "{url}"' if url else "")
        )
        return True

    def _test_openai(self, url: str, model: str) -> None:
        env = {"ARBOR_MODEL": f"openai:{model}", "ARBOR_LLM_OPENAI_BASE_URL": url}
        self._probe_next_session = self.use_model(env)

    def open_report_dialog(self) -> None:
        """Ask for an eval report (the page's Open an eval report…) and show it in the Eval dock."""
        if self.report_dialog is None:
            from ide.protocol.eval import REPORT_FILE  # reports load after the first frame

            dialog = QFileDialog(self.ctx.window, "Open eval report", str(self.ctx.workspace))
            dialog.setObjectName("startReportDialog")
            dialog.setNameFilters([f"Eval reports ({REPORT_FILE})", "JSON (*.json)", "All files (*)"])
            dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
            dialog.fileSelected.connect(lambda path: self.reports.open_report(Path(path)))
            self.report_dialog = dialog
        self.report_dialog.open()

    def open_sample(self) -> bool:
        """Open the recorded LATS sample in the Search tree dock. Continue from here on its nodes opens a
        demo window on a copy of its project (:meth:`continue_sample`), unless this window's workspace
        holds that project already."""
        if self.samples is None:
            return False
        if not holds_sample_project(self.samples, self.ctx.workspace):
            self.trees.continue_elsewhere(SAMPLE_TREE, self.continue_sample)
        return self.trees.open_file(self.samples / SAMPLE_TREE)

    def continue_sample(
        self, events: list[TreeEvent], node_id: str, hint: str, mode: str | None
    ) -> DemoRun | None:
        """Continue the recorded sample from ``node_id`` in a demo window of its own (a throwaway copy of its
        project), with this window's model, the hint and the mode (None: the run's own)."""
        choice, meta = self.bridge.choice, self.bridge.agent_meta
        env = {key: value for key, value in choice.env.items() if key.startswith(MODEL_ENV)}
        if "ARBOR_MODEL" not in env and meta is not None and choice.is_arbor:
            env["ARBOR_MODEL"] = meta.model
        return self.run_demo(SampleContinuation(events, node_id, hint, mode, env))

    def run_demo(self, continuation: SampleContinuation | None = None) -> DemoRun | None:
        """Start the scripted demo turn in a window of its own (or ``continuation`` of the sample)."""
        if self.samples is None:
            return None
        demo = DemoRun(self.samples, self, continuation)
        demo.failed.connect(lambda message: self.page.sample_note.setText(message))
        demo.failed.connect(lambda _message: self.page.sample_note.show())
        demo.opened.connect(self.demoOpened)
        self.demos.append(demo)
        demo.start()
        return demo

    def refresh_sessions(self) -> None:
        """Ask for the workspace's sessions (the page lists the earlier ones)."""
        self.bridge.list_sessions(self._show_sessions, lambda _info: self.page.set_sessions([]))

    def _show_sessions(self, found: list[SessionSummary]) -> None:
        current = self.bridge.session_id
        earlier = [s for s in found if s.title is not None and s.session_id != current]
        self.page.set_sessions(
            [(s.session_id, f"{' '.join((s.title or '').split())} · {when(s.updated_at)}") for s in earlier]
        )

    def _open_session(self, session_id: str) -> None:
        if not self.bridge.open_session(session_id):
            self.ctx.message("A session can be opened when the agent is ready (no turn running).", 5000)
