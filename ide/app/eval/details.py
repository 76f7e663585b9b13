"""The Eval dock's run details, beside the runs: the selected run's outcome, and for another agent's run
(``arbor eval --agent``) the changes it made — its unified diff, drawn by the Review dock's diff editor —
and its transcript as plain monospace text; a run's full check output in a third tab.

The files are the report's, read with :mod:`ide.app.eval.files`: a path that leads out of the report's
folder is refused and a missing or unreadable file said, each in the tab it would fill.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from ide.app.eval.files import MAX_DIFF_BYTES, RunFileError, parse_unified, read_run_file, readable_text
from ide.app.eval.format import mode_label, plain_tip, reason_line, run_status, run_tokens, seconds_text
from ide.app.review.diff_editor import LEX_MAX_CHARS, DiffEditor, lex_rows
from ide.app.review.diffs import Row, unified_rows
from ide.app.workspace.highlight import Span
from ide.app.workspace.viewer import CodeEditor
from ide.protocol.eval import EvalAgent, EvalRun, is_agent_mode
from ide.protocol.hidden import show_hidden
from ide.protocol.review import FileChangeView

NO_RUN = "Select a run to see its details."
ARBOR_RUN = "Arbor's own modes record a search tree instead: Open Tree (or a double-click) shows it."
CUT_NOTE = "\n[cut: the file is longer than the window shows]"
DIFF_TAB, TRANSCRIPT_TAB, CHECK_TAB = 0, 1, 2
LEX_FILES = 12
"""The diff's files coloured by syntax, at most (the rest plain, as a long file is in the Review dock)."""


def file_heading(file: FileChangeView) -> str:
    """A file's header row in the diff: its path, what happened to it and its counts."""
    moved = f"{show_hidden(file.old_path)} → " if file.old_path else ""
    return f"{moved}{show_hidden(file.path)}  ({file.status}, +{file.additions} −{file.deletions})"


def diff_rows(files: list[FileChangeView]) -> tuple[list[Row], list[list[Span]]]:
    """Every file's rows after its own header row, hunks numbered across files; the syntax spans of each
    row, for the first :data:`LEX_FILES` files that fit in ``LEX_MAX_CHARS`` together (lexing more, or
    looking up more lexers, would hold the UI thread)."""
    rows: list[Row] = []
    spans: list[list[Span]] = []
    hunks = 0
    budget = LEX_MAX_CHARS
    for index, file in enumerate(files):
        own = unified_rows(file)
        for row in own:
            row.hunk += hunks
        rows.append(Row("hunk", file_heading(file), hunks))
        spans.append([])
        rows.extend(own)
        size = sum(len(row.text) for row in own)
        lexes = size <= budget and index < LEX_FILES
        lexed = lex_rows(Path(file.path).name, own, prefixed=True) if lexes else None
        budget -= size if lexed is not None else 0
        spans.extend(lexed if lexed is not None and len(lexed) == len(own) else [[] for _ in own])
        hunks += max(1, len(file.hunks))
    return rows, spans


class _Page(QStackedWidget):
    """A view, or a message in its place."""

    def __init__(self, view: QWidget) -> None:
        super().__init__()
        self.view = view
        self.message = QLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # paths from the report are input
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setMargin(12)
        self.addWidget(view)
        self.addWidget(self.message)

    def say(self, text: str) -> None:
        self.message.setText(text)
        self.setCurrentWidget(self.message)

    def showing_message(self) -> bool:
        return self.currentWidget() is self.message


class RunDetails(QWidget):
    """Interface: :meth:`show_run`; what it shows: :meth:`diff_text`, :meth:`transcript_text`,
    :meth:`check_text`, each tab's :attr:`diff_page` … ``message`` when there is none."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("evalRunDetails")
        self.title = QLabel(NO_RUN)
        self.title.setObjectName("evalRunTitle")
        self.title.setWordWrap(True)
        self.outcome = QLabel()
        self.outcome.setObjectName("mutedLabel")
        self.outcome.setWordWrap(True)
        for label in (self.title, self.outcome):
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff = DiffEditor("both")
        self.diff.setObjectName("evalRunDiff")
        self.diff.current_hunk = -2  # nothing is being decided here: no hunk marked as the current one
        self.transcript = CodeEditor()
        self.transcript.setObjectName("evalRunTranscript")
        self.transcript.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.check = CodeEditor()
        self.check.setObjectName("evalRunCheck")
        self.check.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.diff_page = _Page(self.diff)
        self.transcript_page = _Page(self.transcript)
        self.check_page = _Page(self.check)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.diff_page, "Diff")
        self.tabs.addTab(self.transcript_page, "Transcript")
        self.tabs.addTab(self.check_page, "Check")
        for tab, tip in (
            (DIFF_TAB, "Another agent's run: the changes it made, as the Review dock shows them"),
            (TRANSCRIPT_TAB, "Another agent's run: what it said and did"),
            (CHECK_TAB, "Why the run was not solved: the check's output, the budget, the error"),
        ):
            self.tabs.setTabToolTip(tab, tip)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.outcome)
        layout.addWidget(self.tabs, 1)
        self.run: EvalRun | None = None
        self.show_run(None, None)

    def show_run(self, run: EvalRun | None, folder: Path | None, agent: EvalAgent | None = None) -> None:
        """Show ``run`` of the report in ``folder`` (None: no run selected); ``agent`` is the report's
        entry for an agent's run, for its command line."""
        self.run = run
        if run is None or folder is None:
            self.title.setText(NO_RUN)
            self.outcome.clear()
            self.outcome.setToolTip("")
            for page in (self.diff_page, self.transcript_page, self.check_page):
                page.say(NO_RUN)
            return
        self.title.setText(f"{run.task} · {mode_label(run.mode)} · attempt {run.attempt} — {run_status(run)}")
        tokens = f"{run_tokens(run)} tokens" if run.metered else "tokens not counted"
        figures = [tokens, seconds_text(run.wall_s)]
        if run.reason:
            figures.append(reason_line(run.reason))
        self.outcome.setText(" · ".join(figures))
        self.outcome.setToolTip(plain_tip(agent.command) if agent is not None else "")
        self._show_check(run)
        if not is_agent_mode(run.mode):
            self.diff_page.say(ARBOR_RUN)
            self.transcript_page.say(ARBOR_RUN)
            if self.tabs.currentIndex() != CHECK_TAB and run.reason:
                self.tabs.setCurrentIndex(CHECK_TAB)
            return
        self._show_diff(run, folder)
        self._show_transcript(run, folder)
        if self.tabs.currentIndex() == DIFF_TAB and run.diff_file is None:
            self.tabs.setCurrentIndex(TRANSCRIPT_TAB)
        elif self.tabs.currentIndex() == CHECK_TAB or (
            self.tabs.currentIndex() == TRANSCRIPT_TAB and run.diff_file is not None and not run.reason
        ):
            self.tabs.setCurrentIndex(DIFF_TAB)

    def _show_check(self, run: EvalRun) -> None:
        if run.reason:
            self.check.setPlainText(readable_text(run.reason))
            self.check_page.setCurrentWidget(self.check)
        elif run.solved:
            self.check_page.say("The task's check passed.")
        else:
            self.check_page.say("The run gave no reason.")

    def _show_diff(self, run: EvalRun, folder: Path) -> None:
        if run.diff_file is None:
            self.diff_page.say(f"{mode_label(run.mode)} changed no file in this run.")
            return
        try:
            text, cut = read_run_file(folder, run.diff_file, "diff", MAX_DIFF_BYTES)
        except RunFileError as exc:
            self.diff_page.say(f"Cannot show the diff: {exc}")
            return
        files = parse_unified(text)
        if not files:
            self.diff_page.say(f"Its diff file {run.diff_file} holds no change.")
            return
        rows, spans = diff_rows(files)
        if cut:
            rows.append(Row("note", CUT_NOTE.strip()))
            spans.append([])
        self.diff.set_rows(rows, spans, 1)
        self.diff_page.setCurrentWidget(self.diff)

    def _show_transcript(self, run: EvalRun, folder: Path) -> None:
        if run.transcript_file is None:
            self.transcript_page.say("This run kept no transcript.")
            return
        try:
            text, cut = read_run_file(folder, run.transcript_file, "transcript")
        except RunFileError as exc:
            self.transcript_page.say(f"Cannot show the transcript: {exc}")
            return
        self.transcript.setPlainText(readable_text(text) + (CUT_NOTE if cut else ""))
        self.transcript_page.setCurrentWidget(self.transcript)

    def diff_text(self) -> str:
        """The diff shown (empty when a message stands in its place)."""
        return "" if self.diff_page.showing_message() else self.diff.toPlainText()

    def transcript_text(self) -> str:
        return "" if self.transcript_page.showing_message() else self.transcript.toPlainText()

    def check_text(self) -> str:
        return "" if self.check_page.showing_message() else self.check.toPlainText()
