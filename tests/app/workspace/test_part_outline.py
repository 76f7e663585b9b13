"""The code index in the window: progress in the status bar, the Outline dock, Ctrl+T symbol search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.workspace.part_outline import OutlineDock
from ide.app.workspace.part_symbols import SymbolSearchPart
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

SHAPES = '''"""Shapes."""


class Circle:
    """A round shape."""

    def area(self) -> float:
        return 3.14 * self.r * self.r

    def grow(self, by: float) -> None:
        self.r += by


def make_circle(r: float) -> Circle:
    return Circle()
'''


@pytest.fixture
def workspace(git_workspace: Path) -> Path:
    (git_workspace / "pkg" / "shapes.py").write_text(SHAPES)
    return git_workspace


def test_status_outline_and_symbol_search(qtbot: Any, make_window: WindowFactory, workspace: Path) -> None:
    window = make_window(workspace)
    wait_ready(qtbot, window)
    qtbot.waitUntil(
        lambda: window.part(OutlineDock).progress.label.text().startswith("Index:"), timeout=TURN_TIMEOUT_MS
    )
    assert window.part(OutlineDock).progress.label.text() == "Index: 4 of 5 files · 5 symbols"

    shapes = workspace / "pkg" / "shapes.py"
    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shapes)
    rows = [item.text(0) for item in window.part(OutlineDock).panel.items()]
    assert rows == ["C  Circle", "m  area", "m  grow", "ƒ  make_circle"]
    circle = window.part(OutlineDock).panel.tree.topLevelItem(0)
    assert circle.childCount() == 2
    assert "A round shape." in circle.toolTip(0)
    assert window.part(OutlineDock).panel.message.isHidden()

    grow = circle.child(1)
    window.part(OutlineDock).panel.tree.itemClicked.emit(grow, 0)
    qtbot.waitUntil(
        lambda: window.viewer.editor.textCursor().blockNumber() + 1 == 10, timeout=TURN_TIMEOUT_MS
    )

    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(workspace / "README.md")
    assert window.part(OutlineDock).panel.message.text() == "file-level entry"
    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(workspace / "debug.log")  # ignored by .gitignore
    assert (
        window.part(OutlineDock).panel.message.text()
        == "debug.log is excluded (.gitignore or workspace.exclude)"
    )
    assert window.part(OutlineDock).panel.items() == []

    window.part(SymbolSearchPart).action.trigger()
    dialog = window.part(SymbolSearchPart).dialog
    assert dialog.isVisible()
    with qtbot.waitSignal(window.docks["symbols"].symbolsFound, timeout=TURN_TIMEOUT_MS):
        qtbot.keyClicks(dialog.edit, "mkcirc")  # fuzzy: initials of make_circle
    qtbot.waitUntil(lambda: dialog.list.count() > 0, timeout=TURN_TIMEOUT_MS)
    assert dialog.list.item(0).text() == (
        "make_circle    function · pkg/shapes.py:14    def make_circle(r: float) -> Circle"
    )
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS) as shown:
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)
    assert shown.args == [str(shapes)]
    assert not dialog.isVisible()
    assert window.viewer.editor.textCursor().blockNumber() + 1 == 14

    window.part(SymbolSearchPart).action.trigger()
    assert dialog.isVisible()
    assert dialog.edit.selectedText() == "mkcirc"  # the last query, ready to type over
    qtbot.keyClick(dialog.edit, Qt.Key.Key_Escape)
    assert not dialog.isVisible()


def test_a_stale_answer_does_not_replace_what_the_user_typed_since(
    qtbot: Any, make_window: WindowFactory, workspace: Path
) -> None:
    from ide.protocol.index import SymbolHit, SymbolSearchResult

    window = make_window(workspace)
    dialog = window.part(SymbolSearchPart).dialog
    dialog.edit.setText("circle")
    hit = SymbolHit(name="greet", qualname="greet", kind="function", path=str(workspace), line=1, score=1)
    dialog.set_results("gre", SymbolSearchResult(hits=[hit]))
    assert dialog.list.count() == 0
    dialog.set_results(
        "circle", SymbolSearchResult(hits=[hit], state="indexing", message="indexing 3 / 9 files")
    )
    assert dialog.list.count() == 1
    assert dialog.state.text() == "1 symbol — indexing 3 / 9 files"


def test_the_status_bar_shows_indexing_progress_then_the_totals_or_why_it_failed(qtbot: Any) -> None:
    from ide.app.workspace.symbols import IndexProgress
    from ide.protocol.index import IndexStatus

    progress = IndexProgress()
    qtbot.addWidget(progress)
    progress.show()
    progress.set_status(IndexStatus(state="indexing", files_done=1234, files_total=15000))
    assert progress.label.text() == "Indexing 1,234 / 15,000 files"
    assert progress.bar.isVisible()
    assert (progress.bar.value(), progress.bar.maximum()) == (1234, 15000)

    progress.set_status(IndexStatus(state="ready", files=15000, symbols=210345, references=900000))
    assert progress.label.text() == "Index: 15,000 files · 210,345 symbols"
    counts = "15,000 indexed of 15,020 files, 20 skipped (18 not code, 2 binary)"
    progress.set_status(IndexStatus(state="ready", files=15000, scanned=15020, symbols=210345, counts=counts))
    assert progress.label.text() == "Index: 15,000 of 15,020 files · 210,345 symbols"
    assert progress.label.toolTip().startswith(counts)
    assert not progress.bar.isVisible()

    progress.set_status(IndexStatus(state="failed", message="the index database is locked"))
    assert progress.label.text() == "Index failed: the index database is locked"
    assert not progress.bar.isVisible()
    long = "cannot create /ro/.arbor/index.db: read-only file system " * 3
    progress.set_status(IndexStatus(state="failed", message=long))
    assert progress.label.text().endswith("…")
    assert progress.label.toolTip() == long


def test_the_outline_follows_edits_to_the_open_file(
    qtbot: Any, make_window: WindowFactory, workspace: Path
) -> None:
    window = make_window(workspace)
    wait_ready(qtbot, window)
    qtbot.waitUntil(
        lambda: window.part(OutlineDock).progress.label.text().startswith("Index:"), timeout=TURN_TIMEOUT_MS
    )
    shapes = workspace / "pkg" / "shapes.py"
    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(shapes)
    assert len(window.part(OutlineDock).panel.items()) == 4

    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        shapes.write_text(SHAPES + "\n\ndef make_square(side: float) -> float:\n    return side * side\n")
    assert [item.text(0) for item in window.part(OutlineDock).panel.items()][-1] == "ƒ  make_square"
    assert window.part(OutlineDock).progress.label.text() == "Index: 4 of 5 files · 6 symbols"


def test_a_file_outside_the_workspace_opens_read_only_with_a_plain_outline_note(
    qtbot: Any, make_window: WindowFactory, workspace: Path, tmp_path: Path
) -> None:
    library = tmp_path / "site-packages" / "lib.py"
    library.parent.mkdir()
    library.write_text("def helper():\n    return 1\n")
    window = make_window(workspace)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.docks["outline"].outlineReceived, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(workspace / "pkg" / "shapes.py")
    with qtbot.waitSignal(window.viewer.fileShown, timeout=TURN_TIMEOUT_MS):
        window.viewer.show_file(library)  # where F12 into a library lands
    assert window.viewer.editor.isReadOnly() and "def helper" in window.viewer.editor.toPlainText()
    qtbot.waitUntil(lambda: not window.part(OutlineDock).panel.message.isHidden(), timeout=TURN_TIMEOUT_MS)
    assert window.part(OutlineDock).panel.message.text() == "Outside the workspace: no outline."
    assert window.part(OutlineDock).panel.items() == []
    assert "refused" not in window.statusBar().currentMessage()


def test_counts_of_one_are_singular(qtbot: Any, tmp_path: Path) -> None:
    from ide.app.workspace.symbols import IndexProgress, SymbolSearch
    from ide.protocol.index import IndexStatus, SymbolHit, SymbolSearchResult

    progress = IndexProgress()
    qtbot.addWidget(progress)
    progress.set_status(IndexStatus(state="ready", files=1, symbols=1))
    assert progress.label.text() == "Index: 1 file · 1 symbol"
    search = SymbolSearch(tmp_path)
    qtbot.addWidget(search)
    search.edit.setText("greet")
    hit = SymbolHit(
        name="greet", qualname="greet", kind="function", path=str(tmp_path / "a.py"), line=1, score=1
    )
    search.set_results("greet", SymbolSearchResult(hits=[hit]))
    assert search.state.text() == "1 symbol"
    search.set_results("greet", SymbolSearchResult(hits=[hit, hit]))
    assert search.state.text() == "2 symbols"
