"""The main window: wires the panels to the backend bridge and remembers its layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QPoint, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ide.app.acp_client import BackendBridge, BackendState
from ide.app.banner import Banner
from ide.app.chat import ChatPanel, resolve_location
from ide.app.memory import MemoryPanel
from ide.app.outline import OutlinePanel
from ide.app.permission import PermissionDialog
from ide.app.review import ReviewPane
from ide.app.status import BackendStatus
from ide.app.symbols import IndexProgress, LocationPicker, SymbolSearch
from ide.app.tree_view import SearchTreeView
from ide.app.trust import TrustDialog
from ide.app.viewer import CodeViewer
from ide.app.workspace import WorkspacePanel
from ide.protocol import ErrorInfo, TurnMeta
from ide.protocol.index import (
    INDEX_OUTLINE,
    INDEX_SEARCH,
    INDEX_STATUS,
    IndexChanged,
    IndexStatus,
    IndexStatusParams,
    OutlineParams,
    OutlineResult,
    SymbolSearchParams,
    SymbolSearchResult,
)
from ide.protocol.lsp import (
    LSP_DEFINITION,
    LSP_HOVER,
    LSP_REFERENCES,
    HoverResult,
    LocationsResult,
    PositionParams,
)
from ide.protocol.memory import (
    MEMORY_DELETE,
    MEMORY_EXPORT,
    MEMORY_KEEP,
    MEMORY_SEARCH,
    MemoryDeleteParams,
    MemoryExportParams,
    MemoryKeepParams,
    MemoryList,
    MemorySearchParams,
)
from ide.protocol.model import MODEL_PROBE, ProbeResult
from ide.protocol.review import (
    APPLY,
    DECIDE,
    ApplyParams,
    ChangeSetView,
    DecideParams,
    HistoryParams,
    RollbackParams,
)
from ide.protocol.tree import (
    BRANCH_DIFF,
    TREE_FILE_SUFFIX,
    BranchDiffParams,
    SearchTree,
    TreeEvent,
    TreeFileError,
)
from ide.protocol.workflow import WORKFLOWS_LIST, WorkflowList
from ide.settings import ResolvedSettings, Settings, SettingsError, load_settings, trust_store

DEFAULT_SIZE = (1280, 800)
DEFAULT_DOCK_WIDTHS = (270, 470)
GEOMETRY_KEY = "window/geometry"
STATE_KEY = "window/state"
# Bump when docks are added or renamed so an old saved layout is not forced onto new panels.
STATE_VERSION = 5
INDEX_POLL_MS = 300
"""How often the status bar asks for the index's progress while it is being built."""

STOP_REASONS = {
    "max_tokens": "The model hit its output token limit; the answer may be cut short.",
    "max_turn_requests": "The agent used all the model calls one turn may make (agent.max_steps).",
    "refusal": "The model refused to answer.",
}


class MainWindow(QMainWindow):
    """Workspace tree (left dock), code viewer under the banner (centre), chat (right dock), status bar."""

    closed = Signal()

    def __init__(
        self,
        workspace: Path,
        *,
        backend_command: list[str] | None = None,
        backend_env: dict[str, str] | None = None,
        settings: Settings | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace.resolve()
        self.setObjectName("mainWindow")
        self.setWindowTitle(f"{self.workspace.name} — Arbor")
        settings_error: SettingsError | None = None
        self.resolved: ResolvedSettings | None = None
        """The workspace's settings with what waits for trust (None when settings were given)."""
        if settings is None:
            try:
                self.resolved = load_settings(self.workspace)
                settings = self.resolved.settings
            except SettingsError as exc:
                settings_error = exc
                settings = Settings()
        self.settings = settings
        self._saved_updates: list[Any] | None = None
        self._saved_trees: dict[str, SearchTree] | None = None
        self._branch_requests: dict[str, tuple[str, str]] = {}
        """Change set id → (node id, run id) of branch diffs asked for and not answered yet."""
        self._replaying = False

        self.bridge = BackendBridge(self.workspace, backend_command, backend_env, parent=self)
        self.banner = Banner()
        self.viewer = CodeViewer(settings.workspace.max_file_bytes)
        self.viewer.set_workspace(self.workspace)
        central = QWidget()
        central.setObjectName("centralArea")
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        layout.addWidget(self.viewer, 1)
        self.setCentralWidget(central)

        self.workspace_panel = WorkspacePanel(self.workspace, settings.workspace)
        self.chat = ChatPanel()
        self.chat.workspace = self.workspace
        self.workspace_dock = self._dock("Workspace", "workspaceDock", self.workspace_panel)
        self.chat_dock = self._dock("Chat", "chatDock", self.chat)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.workspace_dock)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.chat_dock)
        self.review = ReviewPane()
        self.review_dock = self._dock("Review", "reviewDock", self.review)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.review_dock)
        self.review_dock.hide()  # shown when there is something to review
        self.tree_view = SearchTreeView()
        self.tree_dock = self._dock("Search tree", "treeDock", self.tree_view)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.tree_dock)
        self.tabifyDockWidget(self.review_dock, self.tree_dock)
        self.tree_dock.hide()  # shown when a run starts

        self.outline = OutlinePanel()
        self.outline_dock = self._dock("Outline", "outlineDock", self.outline)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.outline_dock)
        self.splitDockWidget(self.workspace_dock, self.outline_dock, Qt.Orientation.Vertical)
        self.memory_panel = MemoryPanel()
        self.memory_dock = self._dock("Memory", "memoryDock", self.memory_panel)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.memory_dock)
        self.tabifyDockWidget(self.chat_dock, self.memory_dock)
        self.chat_dock.raise_()
        self.symbol_search = SymbolSearch(self.workspace, self)
        self.location_picker = LocationPicker(self.workspace, self)
        self._hover_pos: dict[tuple[str, int, int], QPoint] = {}
        self.index_progress = IndexProgress()
        self._index_poll = QTimer(self)
        self._index_poll.setSingleShot(True)
        self._index_poll.setInterval(INDEX_POLL_MS)
        self._index_poll.timeout.connect(self.request_index_status)
        self._index_state: str | None = None

        self.status = BackendStatus()
        self.trust_dialog = TrustDialog(self)
        self._probe_report = False
        self.probe_dialog = QMessageBox(self)
        self.probe_dialog.setObjectName("probeReport")
        self.probe_dialog.setWindowTitle("Test model")
        self.probe_dialog.setIcon(QMessageBox.Icon.Information)
        self._trust_then_start = False
        self.trust_button = QToolButton()
        self.trust_button.setObjectName("trustButton")
        self.trust_button.setToolTip(
            "This workspace's .arbor/config.toml asks for settings Arbor holds back until you trust it"
        )
        self.trust_button.clicked.connect(self.ask_trust)
        self.statusBar().addPermanentWidget(self.trust_button)
        self.statusBar().addPermanentWidget(self.index_progress)
        self.statusBar().addPermanentWidget(self.status, 1)
        self.statusBar().setSizeGripEnabled(False)
        self._build_menus()
        self._connect()
        self.trust_dialog.decided.connect(self._on_trust_decided)
        self._show_trust()
        self._restore_layout()
        if settings_error is not None:
            self.banner.show_error(
                ErrorInfo(kind="settings", message=str(settings_error), fix="Fix the setting, then reopen.")
            )

    def start(self) -> None:
        """List the workspace and start the backend (needs the qasync loop installed).

        A workspace whose .arbor/config.toml asks for settings that need trust, and whose user has not
        answered for exactly these settings, is asked first; the backend starts with the answer.
        """
        self.workspace_panel.refresh()
        resolved = self.resolved
        if resolved is not None and resolved.trust_keys and not resolved.trusted:
            answered = trust_store().decision(self.workspace)
            if answered is None or answered.digest != resolved.digest:
                self._trust_then_start = True
                self.trust_dialog.ask(resolved)
                return
        self.bridge.start()

    def test_models(self) -> None:
        """Agent → Test Model: probe every model the workspace uses; the answer opens a report."""
        if self.bridge.probe_request(refresh=True):
            self._probe_report = True
            self.statusBar().showMessage("Testing the models: one tool-call and one structured request each…")

    def _on_probes(self, result: ProbeResult) -> None:
        lines = [probe.describe() for probe in result.probes]
        blocked = [probe for probe in result.probes if "default" in probe.roles and probe.cannot_act]
        if blocked:
            probe = blocked[0]
            self.banner.show_notice(
                f"{probe.model} did not call a tool when Arbor tested it, so the agent cannot act with it "
                f"({probe.verdict()[1]}).",
                "Pick a model that calls tools (README: Models), or run Agent → Test Model again.",
            )
        recovered = [probe.model for probe in result.probes if probe.tool_calls == "recovered"]
        if recovered:
            self.status.model.setToolTip(
                self.status.model.toolTip() + f"\n{', '.join(recovered)}: sends tool calls as text; Arbor "
                "recovers them"
            )
        if self._probe_report and result.fresh:
            self._probe_report = False
            self.statusBar().clearMessage()
            self.probe_dialog.setText("\n".join(lines) or "No model answered the test.")
            self.probe_dialog.open()

    def ask_trust(self) -> None:
        """Show what the workspace's config asks for and let the user trust it or keep it restricted."""
        if self.resolved is not None and self.resolved.trust_keys:
            self.trust_dialog.ask(self.resolved)

    def _on_trust_decided(self, trusted: bool) -> None:
        resolved = self.resolved
        if resolved is None or resolved.digest is None:
            return
        trust_store().record(self.workspace, resolved.digest, trusted=trusted)
        changed = trusted != resolved.trusted
        try:
            self.resolved = load_settings(self.workspace)
            self.settings = self.resolved.settings
        except SettingsError as exc:
            self.banner.show_error(
                ErrorInfo(kind="settings", message=str(exc), fix="Fix the setting, then reopen.")
            )
        self._show_trust()
        if self._trust_then_start:
            self._trust_then_start = False
            self.bridge.start()
        elif changed:
            self.restart_backend()  # the backend reads the trusted settings when it opens the session

    def _show_trust(self) -> None:
        resolved = self.resolved
        held = resolved.held_back if resolved is not None else []
        self.trust_button.setVisible(bool(held))
        self.trust_button.setText(f"Restricted: {len(held)} setting(s) held back")
        self.trust_action.setEnabled(resolved is not None and bool(resolved.trust_keys))

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        return dock

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        refresh = QAction("&Refresh Files", self)
        refresh.setShortcut(QKeySequence(QKeySequence.StandardKey.Refresh))
        refresh.triggered.connect(self.workspace_panel.refresh)
        file_menu.addAction(refresh)
        open_tree = QAction("Open &Search Tree…", self)
        open_tree.triggered.connect(self._open_tree_dialog)
        file_menu.addAction(open_tree)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Quit))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

        view_menu = self.menuBar().addMenu("&View")
        view_menu.addAction(self.workspace_dock.toggleViewAction())
        view_menu.addAction(self.chat_dock.toggleViewAction())
        view_menu.addAction(self.review_dock.toggleViewAction())
        view_menu.addAction(self.tree_dock.toggleViewAction())
        view_menu.addAction(self.outline_dock.toggleViewAction())
        view_menu.addAction(self.memory_dock.toggleViewAction())

        go_menu = self.menuBar().addMenu("&Go")
        self.symbol_action = QAction("Go to &Symbol…", self)
        self.symbol_action.setShortcut(QKeySequence("Ctrl+T"))
        self.symbol_action.triggered.connect(self.open_symbol_search)
        go_menu.addAction(self.symbol_action)
        self.definition_action = QAction("Go to &Definition", self)
        self.definition_action.setShortcut(QKeySequence("F12"))
        self.definition_action.triggered.connect(lambda: self.ask_language_server(LSP_DEFINITION))
        go_menu.addAction(self.definition_action)
        self.references_action = QAction("Find &References", self)
        self.references_action.setShortcut(QKeySequence("Shift+F12"))
        self.references_action.triggered.connect(lambda: self.ask_language_server(LSP_REFERENCES))
        go_menu.addAction(self.references_action)

        agent_menu = self.menuBar().addMenu("&Agent")
        self.stop_action = QAction("&Stop Turn", self)
        self.stop_action.setShortcut(QKeySequence("Ctrl+."))
        self.stop_action.triggered.connect(self.bridge.cancel)
        agent_menu.addAction(self.stop_action)
        self.restart_action = QAction("&Restart Backend", self)
        self.restart_action.triggered.connect(self.restart_backend)
        agent_menu.addAction(self.restart_action)
        self.test_model_action = QAction("Test &Model", self)
        self.test_model_action.setToolTip(
            "Send each model one real tool-call request and one structured request, and show how it did"
        )
        self.test_model_action.triggered.connect(self.test_models)
        agent_menu.addAction(self.test_model_action)
        self.trust_action = QAction("Workspace &Trust…", self)
        self.trust_action.triggered.connect(self.ask_trust)
        agent_menu.addAction(self.trust_action)

    def _connect(self) -> None:
        bridge = self.bridge
        bridge.stateChanged.connect(self._on_state)
        bridge.agentChanged.connect(self._show_agent)
        bridge.sessionReady.connect(self._on_session_ready)
        bridge.replayStarting.connect(self._on_replay_starting)
        bridge.replayFailed.connect(self._on_replay_failed)
        bridge.sessionUpdate.connect(self.chat.apply_update)
        bridge.turnFinished.connect(self._on_turn_finished)
        bridge.errorRaised.connect(self._on_error)
        bridge.backendDied.connect(self._on_backend_died)
        self.banner.restartRequested.connect(self.restart_backend)
        self.chat.promptSubmitted.connect(self.send_prompt)
        self.chat.modeChosen.connect(self.bridge.set_mode)
        self.chat.workflowChosen.connect(self.bridge.workflows_request)
        self.permission_dialog = PermissionDialog(self)
        bridge.permission_handler = self.permission_dialog.ask
        bridge.workflowsReceived.connect(self._on_workflows)
        self.memory_panel.searchRequested.connect(self._search_memory)
        self.memory_panel.deleteRequested.connect(self._delete_memory)
        self.memory_panel.keepRequested.connect(self._keep_memory)
        self.memory_panel.unreviewedChanged.connect(self._show_memory_to_review)
        self.memory_panel.exportRequested.connect(self._export_memory)
        bridge.memoryReceived.connect(self.memory_panel.set_entries)
        bridge.memoryChanged.connect(self._on_memory_changed)
        bridge.turnFinished.connect(lambda *_args: self._search_memory_again())
        bridge.contextFilled.connect(lambda fill: self.status.set_context(fill.tokens, fill.window))
        bridge.probesReceived.connect(self._on_probes)
        bridge.memoryExported.connect(
            lambda done: self.statusBar().showMessage(
                f"Exported {done.entries} memories to {done.path}", 10000
            )
        )
        bridge.modeChanged.connect(self._on_mode_changed)
        self.chat.stopRequested.connect(bridge.cancel)
        self.chat.locationActivated.connect(self._open_location)
        self.workspace_panel.fileActivated.connect(self.viewer.show_file)

        review = self.review
        bridge.sessionUpdate.connect(review.apply_update)
        bridge.changesetReceived.connect(review.set_changeset)
        bridge.applied.connect(review.show_apply_result)
        bridge.rolledBack.connect(review.show_rollback_result)
        bridge.historyReceived.connect(review.set_history)
        bridge.reviewFailed.connect(review.revert)
        review.decideRequested.connect(self._review_decide)
        review.applyRequested.connect(self._review_apply)
        review.rollbackRequested.connect(self._review_rollback)
        review.historyRequested.connect(self._review_history)
        review.feedbackRequested.connect(self.send_prompt)
        review.changesShown.connect(self._show_review)

        self.viewer.fileShown.connect(self.request_outline)
        self.outline.lineActivated.connect(self._open_location)
        self.symbol_search.queryChanged.connect(self._search_symbols)
        self.symbol_search.symbolChosen.connect(self._open_location)
        bridge.indexStatus.connect(self._on_index_status)
        bridge.indexChanged.connect(self._on_index_changed)
        bridge.outlineReceived.connect(self._on_outline)
        bridge.symbolsFound.connect(self._on_symbols)
        bridge.indexFailed.connect(self._on_index_failed)
        bridge.lspAnswered.connect(self._on_lsp_answer)
        self.location_picker.locationChosen.connect(self._open_location)
        self.viewer.editor.hoverRequested.connect(self._request_hover)

        bridge.treeEvents.connect(self._on_tree_events)
        self.tree_view.runStarted.connect(self._on_run_started)
        self.tree_view.branchDiffRequested.connect(self.request_branch_diff)
        bridge.branchDiffReceived.connect(self._show_branch_diff)
        bridge.branchDiffFailed.connect(self._branch_diff_failed)

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a new turn and show it in the chat (ignored unless the backend is ready)."""
        if self.bridge.send_prompt(text):
            if self.banner.kind not in (None, "settings"):
                self.banner.dismiss()  # what the last turn reported no longer applies
            self.chat.add_user_message(text)

    def restart_backend(self) -> None:
        """Restart the backend and restore the conversation (the banner's Restart button)."""
        self.banner.set_restartable(False)
        self.bridge.restart()

    def _on_state(self, state: str) -> None:
        self.status.set_state(state)
        self.chat.set_backend_state(state)
        stopped = state == BackendState.STOPPED
        self.stop_action.setEnabled(state == BackendState.BUSY)
        if stopped:
            self.tree_view.set_branch_diff_supported(False)
        if self.banner.isVisible():
            self.banner.set_restartable(stopped)
        if state == BackendState.READY and self.banner.kind == "died":
            self.banner.dismiss()

    def _show_agent(self, *_: Any) -> None:
        self.status.set_agent(self.bridge.agent_meta, self.bridge.agent_name, self.bridge.mode)

    def _search_memory(self, query: str, namespace: str, unreviewed_only: bool = False) -> None:
        if self.bridge.session_id is not None and self.bridge.supports(MEMORY_SEARCH):
            params = MemorySearchParams(
                session_id=self.bridge.session_id,
                query=query,
                namespace=namespace or None,
                unreviewed_only=unreviewed_only,
            )
            self.bridge.memory_request(MEMORY_SEARCH, params)

    def _search_memory_again(self) -> None:
        """After a turn the memory may have learned something, or the agent stored a note to review."""
        self.memory_panel.refresh()

    def _delete_memory(self, memory_id: int) -> None:
        if self.bridge.session_id is not None:
            params = MemoryDeleteParams(session_id=self.bridge.session_id, id=memory_id)
            self.bridge.memory_request(MEMORY_DELETE, params)

    def _keep_memory(self, memory_id: int) -> None:
        if self.bridge.session_id is not None:
            params = MemoryKeepParams(session_id=self.bridge.session_id, id=memory_id)
            self.bridge.memory_request(MEMORY_KEEP, params)

    def _show_memory_to_review(self, count: int) -> None:
        """The dock's title (its tab's, when tabbed with the chat) counts the agent's notes to review."""
        self.memory_dock.setWindowTitle(f"Memory ({count} to review)" if count else "Memory")

    def _on_memory_changed(self, result: MemoryList) -> None:
        """A keep or delete went through: new counts, and the same search again to show the change."""
        self.memory_panel.set_counts(result)
        self.memory_panel.refresh()

    def _export_memory(self, path: str | None = None) -> None:
        if self.bridge.session_id is None:
            return
        if path is None:
            path, _filter = QFileDialog.getSaveFileName(
                self, "Export memory", "arbor-memory.json", "JSON (*.json)"
            )
        if path:
            self.bridge.memory_request(
                MEMORY_EXPORT, MemoryExportParams(session_id=self.bridge.session_id, path=path)
            )

    def _on_workflows(self, listing: WorkflowList) -> None:
        self.chat.set_workflows(listing)
        if listing.mode and listing.mode != self.bridge.mode:
            # Picking a workflow switches the session to the workflow mode, as /workflow NAME does.
            self.bridge.mode = listing.mode
            self._on_mode_changed(listing.mode)
        if listing.problems:
            self.statusBar().showMessage(f"Workflow files not loaded: {listing.problems[0]}", 15000)

    def _on_mode_changed(self, _mode: str) -> None:
        self.chat.set_modes(self.bridge.modes, self.bridge.mode)
        self._show_agent()

    def _on_session_ready(self, session_id: str, replayed: bool) -> None:
        self._show_agent()
        self.chat.set_modes(self.bridge.modes, self.bridge.mode)
        self.review.set_interactive(self.bridge.supports(DECIDE) and self.bridge.supports(APPLY))
        self.review.set_session(session_id, str(self.workspace))
        self.tree_view.set_branch_diff_supported(self.bridge.supports(BRANCH_DIFF))
        if self.review.interactive:
            self.bridge.review_changeset(session_id)
        if self.bridge.supports(WORKFLOWS_LIST):
            self.bridge.workflows_request()
        self.memory_panel.setEnabled(self.bridge.supports(MEMORY_SEARCH))
        self.memory_panel.refresh()
        self.test_model_action.setEnabled(self.bridge.supports(MODEL_PROBE))
        self.bridge.probe_request(refresh=False)  # what an earlier test found: warn before the first turn
        self._saved_updates = None
        self._saved_trees = None
        self._replaying = False
        if replayed:
            self.chat.flush()
        self.request_index_status()
        if self.viewer.current_path is not None:
            self.request_outline(str(self.viewer.current_path))

    # -- code index: status bar progress, Outline dock, Ctrl+T ---------------------------------------

    def request_index_status(self) -> None:
        """Ask for the index's state (this starts indexing the workspace if nothing has)."""
        if not self.bridge.index_request(INDEX_STATUS, IndexStatusParams(cwd=str(self.workspace))):
            self.index_progress.label.setText("")
            if not self.bridge.supports(INDEX_STATUS) and self.bridge.state != BackendState.STOPPED:
                self.outline.show_message("This agent has no code index: no outline or symbol search.")

    def _on_index_status(self, status: IndexStatus) -> None:
        self.index_progress.set_status(status)
        was, self._index_state = self._index_state, status.state
        if status.state == "indexing":
            self._index_poll.start()
        elif was == "indexing" and self.viewer.current_path is not None:
            self.request_outline(str(self.viewer.current_path))  # the outline may have waited for it

    def _on_index_changed(self, change: IndexChanged) -> None:
        if Path(change.cwd) != self.workspace:
            return
        self._on_index_status(change.status)
        current = self.viewer.current_path
        if current is not None and str(current.resolve()) in change.paths:
            self.request_outline(str(current))  # the open file was edited (or the agent's change applied)

    def request_outline(self, path: str) -> None:
        """Ask for the outline of ``path`` (the file the viewer shows)."""
        sent = self.bridge.index_request(INDEX_OUTLINE, OutlineParams(cwd=str(self.workspace), path=path))
        if not sent and self.bridge.supports(INDEX_OUTLINE):
            self.outline.show_message("The outline appears when the backend is running.")

    def _on_outline(self, result: OutlineResult) -> None:
        current = self.viewer.current_path
        if current is not None and Path(result.path) == current.resolve():
            self.outline.set_outline(result)

    def open_symbol_search(self) -> None:
        """Ctrl+T: the symbol search popup."""
        if not self.bridge.supports(INDEX_SEARCH):
            self.banner.show_notice(
                "Symbol search needs Arbor's code index, which this backend does not serve."
                if self.bridge.state != BackendState.STOPPED
                else "Symbol search needs the backend, which is not running."
            )
            return
        self.symbol_search.open_search()

    def _search_symbols(self, query: str) -> None:
        params = SymbolSearchParams(cwd=str(self.workspace), query=query, limit=50)
        if not self.bridge.index_request(INDEX_SEARCH, params):
            self.symbol_search.show_error("The backend is not running.")

    def _on_symbols(self, params: SymbolSearchParams, result: SymbolSearchResult) -> None:
        self.symbol_search.set_results(params.query, result)

    def _on_index_failed(self, method: str, message: str) -> None:
        if method == INDEX_OUTLINE:
            self.outline.show_message(message)
        elif method == INDEX_SEARCH:
            self.symbol_search.show_error(message)
        elif method == INDEX_STATUS:
            self.index_progress.show_failure(message)
        else:  # a language-server request (F12, Shift+F12, hover)
            self.statusBar().showMessage(message, 8000)

    # -- language servers: F12, Shift+F12, hover -----------------------------------------------------

    def ask_language_server(self, method: str, line: int | None = None, column: int | None = None) -> bool:
        """Definition or references at the viewer's cursor (or the given position)."""
        path = self.viewer.current_path
        if path is None or self.viewer.message is not None:
            self.statusBar().showMessage("Open a file and put the cursor on a name first.", 4000)
            return False
        if line is None or column is None:
            line, column = self.viewer.editor.position()
        params = PositionParams(
            cwd=str(self.workspace),
            path=str(path.resolve()),
            line=line,
            column=column,
            session_id=self.bridge.session_id,
        )
        if not self.bridge.index_request(method, params):
            self.statusBar().showMessage(
                "Language servers need Arbor's backend, which is not available.", 4000
            )
            return False
        return True

    def _request_hover(self, line: int, column: int, global_pos: QPoint) -> None:
        path = self.viewer.current_path
        if path is None:
            return
        self._hover_pos = {(str(path.resolve()), line, column): global_pos}
        self.ask_language_server(LSP_HOVER, line, column)

    def _on_lsp_answer(
        self, method: str, params: PositionParams, result: LocationsResult | HoverResult
    ) -> None:
        if isinstance(result, HoverResult):
            where = self._hover_pos.pop((params.path, params.line, params.column), None)
            if where is not None and (result.text or result.message):
                QToolTip.showText(where, result.text or result.message or "", self.viewer.editor)
            return
        if result.message:
            self.statusBar().showMessage(result.message, 8000)
        elif not result.locations:
            what = "definition" if method == LSP_DEFINITION else "references"
            self.statusBar().showMessage(f"No {what} found at {params.line}:{params.column}.", 4000)
        elif method == LSP_DEFINITION and len(result.locations) == 1:
            (only,) = result.locations
            self._open_location(only.path, only.line, only.column)
        else:
            title = "Definitions" if method == LSP_DEFINITION else "References"
            self.location_picker.show_locations(title, result.locations)

    def _on_replay_starting(self) -> None:
        # Keep what the chat showed: if the replay fails, the old transcript comes back.
        self._saved_updates = self.chat.clear()
        self.review.clear()  # the replayed tool calls rebuild it
        self._saved_trees = self.tree_view.clear()  # so do the replayed tree events
        self._replaying = True

    def _on_replay_failed(self, message: str) -> None:
        if self._saved_updates is not None:
            self.chat.clear()
            self.chat.replay(self._saved_updates)
            self._saved_updates = None
        if self._saved_trees is not None:
            self.tree_view.clear()
            self.tree_view.restore(self._saved_trees)
            self._saved_trees = None
        self._replaying = False
        self.banner.show_notice(
            f"The previous conversation could not be restored: {message}",
            "A new session was started; the messages above are from the old one and the agent no longer "
            "remembers them.",
        )

    def _on_turn_finished(self, stop_reason: str, meta: TurnMeta | None) -> None:
        self.status.set_turn(meta)
        self.chat.flush()
        explanation = STOP_REASONS.get(stop_reason)
        if explanation:
            self.banner.show_notice(explanation)

    def _on_backend_died(self, code: int, stderr_tail: str) -> None:
        self.banner.show_backend_died(code, stderr_tail, had_session=self.bridge.session_id is not None)

    def _on_error(self, info: ErrorInfo) -> None:
        self.banner.show_error(info, restartable=self.bridge.state == BackendState.STOPPED)

    def _open_location(self, path: str, line: int, column: int = 1) -> None:
        target = resolve_location(self.workspace, path)
        if self.viewer.current_path == target and line and self.viewer.message is None:
            self.viewer.editor.go_to(line, column)  # already on screen: just move
        else:
            self.viewer.show_file(target, line or None)
        self.workspace_panel.select(target)

    def _review_decide(self, params: DecideParams) -> None:
        if not self.bridge.review_decide(params):
            self.review.revert()
            self._review_unavailable()

    def _review_apply(self, params: ApplyParams) -> None:
        if not self.bridge.review_apply(params):
            self._review_unavailable()

    def _review_rollback(self, params: RollbackParams) -> None:
        if not self.bridge.review_rollback(params):
            self._review_unavailable()

    def _review_history(self, params: HistoryParams) -> None:
        self.bridge.review_history(params)  # a refresh nobody asked for needs no banner

    def _review_unavailable(self) -> None:
        self.banner.show_notice(
            "The review could not be sent: the backend is not running.",
            "Restart it from the Agent menu; the change set is kept by the session.",
        )

    def _show_review(self, files: int) -> None:
        if files and self.review_dock.isHidden():
            self.review_dock.show()
            self.resizeDocks([self.review_dock], [int(self.height() * 0.45)], Qt.Orientation.Vertical)
        if files:
            self.review_dock.raise_()

    def _on_tree_events(self, events: list[TreeEvent]) -> None:
        self.tree_view.add_events(events)

    def _on_run_started(self, key: str) -> None:
        # A restored session's runs come back quietly; a run that starts now is shown.
        if not self._replaying:
            self.show_tree()

    def show_tree(self) -> None:
        """Show and raise the search-tree dock."""
        if self.tree_dock.isHidden():
            self.tree_dock.show()
            self.resizeDocks([self.tree_dock], [int(self.height() * 0.45)], Qt.Orientation.Vertical)
        self.tree_dock.raise_()

    def request_branch_diff(self, changeset_id: str, node_id: str, run_id: str) -> None:
        """Ask the backend for a search branch's changes, to show read-only in the review pane."""
        session_id = self.bridge.session_id
        if session_id is None or not self.bridge.branch_diff(
            BranchDiffParams(session_id=session_id, changeset_id=changeset_id)
        ):
            self.tree_view.show_message("Cannot show the branch diff: the backend is not running.")
            return
        self._branch_requests[changeset_id] = (node_id, run_id)

    def _show_branch_diff(self, params: BranchDiffParams, changeset: ChangeSetView) -> None:
        node_id, run_id = self._branch_requests.pop(params.changeset_id, (params.changeset_id, "?"))
        if params.session_id != self.bridge.session_id:
            return  # asked in a session that has ended since
        self.review.show_branch(
            changeset,
            f"Branch {node_id} of run {run_id[:12]} — read-only; the run's chosen branch is what you review",
        )
        if self.review_dock.isHidden():
            self.review_dock.show()
            self.resizeDocks([self.review_dock], [int(self.height() * 0.45)], Qt.Orientation.Vertical)
        self.review_dock.raise_()

    def _branch_diff_failed(self, params: BranchDiffParams, message: str) -> None:
        node_id, _run = self._branch_requests.pop(params.changeset_id, (params.changeset_id, ""))
        self.tree_view.show_message(f"Branch diff of {node_id}: {message}")

    def open_tree_file(self, path: Path) -> bool:
        """Open a ``.arbor-tree.jsonl`` file in the search-tree dock; the banner explains a bad file."""
        try:
            self.tree_view.open_file(path)
        except TreeFileError as exc:
            self.banner.show_notice(
                f"Cannot open the search tree: {exc}",
                f"A {TREE_FILE_SUFFIX} file holds one tree event (JSON) per line, as Export writes them.",
            )
            return False
        self.show_tree()
        return True

    def _open_tree_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open search tree",
            str(self.workspace),
            f"Search trees (*{TREE_FILE_SUFFIX});;All files (*)",
        )
        if path:
            self.open_tree_file(Path(path))

    def _restore_layout(self) -> None:
        store = QSettings()
        geometry = store.value(GEOMETRY_KEY)
        state = store.value(STATE_KEY)
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(*DEFAULT_SIZE)
        # Dock sizes only take once the window has a layout, so the default is applied at first show.
        self._default_docks = not (isinstance(state, QByteArray) and self.restoreState(state, STATE_VERSION))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._default_docks:
            self._default_docks = False
            self.resizeDocks(
                [self.workspace_dock, self.chat_dock], list(DEFAULT_DOCK_WIDTHS), Qt.Orientation.Horizontal
            )

    def save_layout(self) -> None:
        """Remember geometry and dock layout for the next window."""
        store = QSettings()
        store.setValue(GEOMETRY_KEY, self.saveGeometry())
        store.setValue(STATE_KEY, self.saveState(STATE_VERSION))
        store.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_layout()
        self.bridge.stop()
        super().closeEvent(event)
        self.closed.emit()
