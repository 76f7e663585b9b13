"""The Workspace panel and the code viewer, on a real git repository and on a plain directory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.workspace.files import list_workspace_files, read_for_viewer
from ide.app.workspace.panel import build_tree
from ide.app.workspace.part import WorkspaceDock
from ide.app.workspace.part_outline import OutlineDock
from ide.settings import WorkspaceSettings
from tests.support.git import git
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def test_tree_lists_git_files_but_not_ignored_ones(qtbot, make_window: WindowFactory, git_workspace: Path):
    (git_workspace / "notes.txt").write_text("untracked but not ignored\n")
    window = make_window(git_workspace, start=False)  # the tree needs no backend
    panel = window.part(WorkspaceDock).panel
    with qtbot.waitSignal(panel.loaded, timeout=10_000):
        panel.refresh()

    assert "debug.log" not in panel.files  # ignored by .gitignore
    assert {"README.md", "pkg/greet.py", "pkg/__init__.py", "notes.txt"} <= set(panel.files)
    top_level = [panel.model.index(row, 0).data() for row in range(panel.model.rowCount())]
    assert top_level[0] == "pkg"  # directories first
    assert "debug.log" not in top_level


def test_clicking_a_file_shows_it_highlighted_with_line_numbers(
    qtbot, make_window: WindowFactory, git_workspace: Path
):
    window = make_window(git_workspace, start=False)
    panel = window.part(WorkspaceDock).panel
    with qtbot.waitSignal(panel.loaded, timeout=10_000):
        panel.refresh()
    index = panel.model.index_of("pkg/greet.py")
    assert index.isValid()
    panel.tree.expand(index.parent())
    rect = panel.tree.visualRect(index)

    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000) as shown:
        qtbot.mouseClick(panel.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())

    assert shown.args == [str(git_workspace / "pkg" / "greet.py")]
    editor = window.viewer.editor
    assert editor.isReadOnly()
    assert editor.toPlainText().startswith("def greet(name):")
    assert editor.line_number_width() > 0
    qtbot.waitUntil(lambda: _has_colour(editor), timeout=5000)


def _has_colour(editor) -> bool:
    block = editor.document().firstBlock()
    return bool(block.layout().formats())  # the highlighter's spans for 'def greet'


def test_viewer_shows_a_message_for_binary_and_oversized_files(
    qtbot, make_window: WindowFactory, git_workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("ARBOR_WORKSPACE_MAX_FILE_BYTES", "2000")
    (git_workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (git_workspace / "big.txt").write_text("x" * 5000)
    window = make_window(git_workspace, start=False)

    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000):
        window.viewer.show_file(git_workspace / "logo.png")
    assert "binary" in (window.viewer.message or "")

    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000):
        window.viewer.show_file(git_workspace / "big.txt")
    assert "over the 2.0 KB viewer limit" in (window.viewer.message or "")

    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000):
        window.viewer.show_file(git_workspace / "README.md", line=3)
    assert window.viewer.message is None
    assert window.viewer.editor.textCursor().blockNumber() == 2


def test_outside_git_the_walk_skips_excluded_directories(tmp_path: Path):
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")

    assert list_workspace_files(root, WorkspaceSettings()) == ["src/main.py"]


def test_tree_puts_directories_first_and_reads_crlf_as_lines(tmp_path: Path):
    tree = build_tree(["b.txt", "a/z.py", "A.md", "a/b/c.py"])
    assert [child.name for child in tree.children] == ["a", "A.md", "b.txt"]
    assert [child.name for child in tree.children[0].children] == ["b", "z.py"]

    crlf = tmp_path / "dos.txt"
    crlf.write_bytes(b"one\r\ntwo\r\n")
    assert read_for_viewer(crlf, 1000).text == "one\ntwo\n"


def test_the_workspace_count_agrees_with_the_index_by_naming_its_secrets(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    # Flask's tests/test_apps/.env: tracked, so the tree lists it, but a secret the index never reads.
    (git_workspace / "tests").mkdir()
    (git_workspace / "tests" / ".env").write_text("FOO=env\n")
    git(git_workspace, "add", "-A")
    git(git_workspace, "commit", "-qm", "env")
    window = make_window(git_workspace)
    panel = window.part(WorkspaceDock).panel
    with qtbot.waitSignal(panel.loaded, timeout=10_000):
        panel.refresh()
    wait_ready(qtbot, window)
    label = window.part(OutlineDock).progress.label
    qtbot.waitUntil(lambda: label.text().startswith("Index:"), timeout=TURN_TIMEOUT_MS)
    listed = len(panel.files)
    assert panel._count.text() == f"{listed} files · 1 secret"
    assert "secrets (workspace.secrets: tests/.env)" in panel._count.toolTip()
    scanned = re.match(r"Index: [\d,]+ of ([\d,]+) files", label.text())
    assert scanned is not None and int(scanned.group(1)) == listed - 1, label.text()


def test_a_yaml_file_is_highlighted_without_an_error(qtbot, make_window: WindowFactory, git_workspace: Path):
    """YAML's lexer names its own tokens (Literal.Scalar.Plain): the style had no entry for them, and
    highlighting raised KeyError in the window."""
    workflow = git_workspace / "workflow.yaml"
    workflow.write_text("name: review\nstages:\n  - id: plan\n    retries: 2\n    note: plain text\n")
    window = make_window(git_workspace, start=False)
    with qtbot.waitSignal(window.viewer.fileShown, timeout=5000):
        window.viewer.show_file(workflow)
    editor = window.viewer.editor
    assert editor.toPlainText().startswith("name: review")
    qtbot.waitUntil(lambda: _has_colour(editor), timeout=5000)
