"""The Eval dock: an ``arbor eval`` report read back — model and budgets, the summary per mode against the
retry baseline, a chart, every run, and any run's search tree opened in the Search tree dock.

It opens ``report.json`` or the ``--out`` directory holding it (Open Report…, here or in the File menu),
remembers the last one in QSettings and opens it again in the next window, and reloads it whenever
``arbor eval`` saves it again, so a running evaluation can be watched. A file that is not a report is
explained in the dock (the :class:`~ide.protocol.eval.ReportError` text), never a traceback. It reads files
only: the backend is not involved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileSystemWatcher, QSettings, QTimer, Signal
from PySide6.QtWidgets import QFileDialog

from ide.app.parts.base import BOTTOM_ON_DEMAND, AppContext, Built, Dock, Spec
from ide.app.parts.capabilities import EvalReports, SearchTrees
from ide.app.parts.needs import Requires

if TYPE_CHECKING:
    from ide.app.eval.panel import EvalPanel
    from ide.protocol.eval import EvalRun

LAST_REPORT_KEY = "eval/lastReport"
RELOAD_DELAY_MS = 150
"""A burst of file events (the write of the temporary file, then its rename) becomes one reload."""


class EvalDock(Dock):
    """The Eval panel, tabbed with the review and the search tree; it reads report files itself."""

    spec = Spec("eval", title="Eval", place=BOTTOM_ON_DEMAND, order=45)
    panel = Built["EvalPanel"]()
    provides = (EvalReports,)
    trees = Requires(SearchTrees)

    reportLoaded = Signal(object)
    """The EvalReport just shown (opened or reloaded after the file changed)."""
    reportFailed = Signal(str)
    """The message shown when a report could not be read."""

    deferred = True  # shown when it has a report to show

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.source: Path | None = None
        """The report file shown (``report.json``), or None."""
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(lambda _path: self._reload_soon())
        self.watcher.directoryChanged.connect(lambda _path: self._reload_soon())
        self._reload_timer = QTimer(self)
        self._reload_timer.setSingleShot(True)
        self._reload_timer.setInterval(RELOAD_DELAY_MS)
        self._reload_timer.timeout.connect(self.reload)
        ctx.action("file", "Open &Eval Report…", self._open_dialog)

    def build(self) -> EvalPanel:
        from ide.app.eval.panel import EvalPanel  # its chart and tables load with it, after the first frame

        panel = EvalPanel()
        panel.openRequested.connect(self._open_dialog)
        panel.treeRequested.connect(self.open_tree)
        return panel

    def start(self) -> bool:
        """The last report opened comes back (quietly: a report that has gone just leaves the dock empty)."""
        last = QSettings().value(LAST_REPORT_KEY)
        if isinstance(last, str) and last and Path(last).is_file():
            self.open_report(Path(last), show=False)
        return True

    def open_report(self, path: Path, *, show: bool = True) -> bool:
        """Open ``report.json`` or the directory holding it, and watch it; False (the dock says why) if it
        is not a report."""
        from ide.protocol.eval import REPORT_FILE, ReportError, load_report  # after the first frame

        path = Path(path)
        file = path / REPORT_FILE if path.is_dir() else path
        try:
            report = load_report(file)
        except ReportError as exc:
            self._unwatch()
            self.source = None
            self.panel.clear(f"Cannot open the report: {exc}", error=True)
            self.reportFailed.emit(str(exc))
            if show:
                self.show()
            return False
        self.source = file.resolve()
        self._watch()
        store = QSettings()
        store.setValue(LAST_REPORT_KEY, str(self.source))
        store.sync()
        self.panel.show_report(report, self.source)
        self.reportLoaded.emit(report)
        if show:
            self.show()
        return True

    def reload(self) -> None:
        """Read the shown report again; if it cannot be read now, the last good one stays, with the reason."""
        if self.source is None:
            return
        from ide.protocol.eval import ReportError, load_report

        self._watch()  # a replaced file (atomic save) is a new file to the watcher
        try:
            report = load_report(self.source)
        except ReportError as exc:
            self.panel.show_error(f"Cannot reload the report (showing the last one read): {exc}")
            self.reportFailed.emit(str(exc))
            return
        if report == self.panel.report:
            self.panel.show_message("")  # saved again unchanged (or the chart beside it was written)
            return
        self.panel.show_report(report, self.source)
        self.reportLoaded.emit(report)

    def open_tree(self, run: EvalRun) -> bool:
        """Show ``run``'s search tree in the Search tree dock; the dock says so when there is none."""
        if self.source is None:
            return False
        where = f"{run.task} · {run.mode} · attempt {run.attempt}"
        if run.tree_file is None:
            self.panel.show_message(f"{where} recorded no search tree.")
            return False
        # With the panel, after the first frame.
        from ide.app.eval.files import RunFileError, run_file
        from ide.app.eval.format import run_check

        try:  # a report is input: its paths stay inside its folder
            tree = run_file(self.source.parent, run.tree_file, "tree")
        except RunFileError as exc:
            self.panel.show_error(f"{where}: {exc}")
            return False
        self.panel.show_message("")
        # A tab beside the runs, browsed one by one; the check's verdict marks what the tree claimed.
        return self.trees.open_file(tree, maximise=False, check=run_check(run))

    def _watch(self) -> None:
        """Watch the report file and its directory (the atomic save replaces the file)."""
        assert self.source is not None
        self._unwatch()
        paths = [str(self.source.parent)]
        if self.source.exists():
            paths.append(str(self.source))
        self.watcher.addPaths(paths)

    def _unwatch(self) -> None:
        watched = self.watcher.files() + self.watcher.directories()
        if watched:
            self.watcher.removePaths(watched)

    def _reload_soon(self) -> None:
        if self.source is not None:
            self._reload_timer.start()

    def _open_dialog(self) -> None:
        from ide.protocol.eval import REPORT_FILE

        start = str(self.source.parent) if self.source is not None else str(self.ctx.workspace)
        path, _ = QFileDialog.getOpenFileName(
            self.ctx.window,
            "Open eval report",
            start,
            f"Eval reports ({REPORT_FILE});;JSON (*.json);;All files (*)",
        )
        if path:
            self.open_report(Path(path))
