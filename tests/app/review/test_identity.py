"""The Review dock before and after Apply, with the real backend and a real git: it warns before Apply when
git has no identity (with the one-line fix), its Apply button says what it will write and that it
commits, a successful Apply clears the earlier Apply error, and the note says what stays pending."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.review.part import ReviewDock
from tests.support.git import GIT_IDENTITY, git
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


@pytest.fixture
def no_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No identity anywhere git looks: not the variables, not the (temp) global config, no system config."""
    for name in GIT_IDENTITY:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def edits_script(tmp_path: Path, workspace: Path) -> Path:
    """Three files edited: two hunks in pkg/greet.py, one in README.md, one in pkg/__init__.py."""
    (workspace / "pkg" / "greet.py").write_text(
        'def greet(name):\n    return f"Hello, {name}!"\n' + "\n" * 12 + "def bye():\n    return 'Bye'\n"
    )
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "bye")
    calls = [
        ("pkg/greet.py", "Hello", "Hi"),
        ("pkg/greet.py", "'Bye'", "'Goodbye'"),
        ("README.md", "Says hello.", "Says hi."),
    ]
    edits = [
        {"name": "edit_file", "args": {"path": p, "old_text": old, "new_text": new}} for p, old, new in calls
    ]
    edits.append({"name": "write_file", "args": {"path": "pkg/__init__.py", "content": "VERSION = 1\n"}})
    script = tmp_path / "edits.jsonl"
    script.write_text(json.dumps({"tool_calls": edits}) + "\n" + json.dumps({"content": "Done."}) + "\n")
    return script


def test_apply_warns_of_a_missing_identity_says_what_it_does_and_clears_its_error(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path, no_identity: None
) -> None:
    script = edits_script(tmp_path, git_workspace)
    window = make_window(git_workspace, env={"ARBOR_MODEL": f"scripted:{script}"})
    review = window.part(ReviewDock).client
    wait_ready(qtbot, window)
    pane = window.part(ReviewDock).pane
    checked = qtbot.waitSignal(review.identityChecked, timeout=TURN_TIMEOUT_MS)
    with checked, qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Say hi")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    warning = pane.identity_label
    assert warning.isVisible()
    assert warning.text() == (
        f"Apply will fail to commit: git has no user.name and user.email for {git_workspace}. Set them once "
        'with: git config --global user.name "Your Name" && git config --global user.email "you@example.com"'
    )
    assert pane.apply_button.text() == "Apply"  # nothing accepted yet
    assert "Nothing accepted yet" in pane.apply_button.toolTip()

    files = [file.path for file in pane.state.changeset.files]  # type: ignore[union-attr]
    for path in ("pkg/greet.py", "README.md"):
        pane.select_file(files.index(path))
        with qtbot.waitSignal(review.changesetReceived, timeout=TURN_TIMEOUT_MS):
            pane.decide_file("accepted")
    assert pane.apply_button.text() == "Apply 3 hunks in 2 files and commit"
    assert "commits them (review.commit = commit)" in pane.apply_button.toolTip()

    # The first Apply fails: no identity to commit with.
    with qtbot.waitSignal(review.failed, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    banner = window.banner
    assert banner.isVisible()
    error = banner.title.text()

    # The user sets it (in the repository's own config) and applies again: the old error goes.
    git(git_workspace, "config", "user.name", "Dev")
    git(git_workspace, "config", "user.email", "dev@example.com")
    cleared = qtbot.waitSignal(
        review.identityChecked, timeout=TURN_TIMEOUT_MS, check_params_cb=lambda t: t == ""
    )
    with cleared, qtbot.waitSignal(review.applied, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible(), f"the earlier Apply error stayed: {error}"
    assert not warning.isVisible()
    result = pane.result_label.text()
    assert result.startswith("Applied 2 files as batch")
    assert result.endswith("1 hunk in 1 file still pending.")
    assert git(git_workspace, "log", "-1", "--format=%an").strip() == "Dev"
