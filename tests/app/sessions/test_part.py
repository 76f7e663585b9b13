"""The Sessions dock against the real backend: past sessions listed newest first with their titles,
reopened with their chat, search tree and pending review, and New Session starting afresh."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from ide.app.chat.conversation import TextBlock
from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.sessions.part import SessionsDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from tests.support.window import ECHO_AGENT, TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

Script = Callable[[list[dict[str, Any]]], Path]

EDIT_GREET = [
    {
        "content": "",
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"},
            }
        ],
    },
    {"content": "greet now says Hi."},
]
READ_ME = [{"content": "The README says the demo says hello."}]


def chat_texts(window: MainWindow) -> list[tuple[str, str]]:
    return [
        (b.kind, b.text) for b in window.part(ChatDock).panel.conversation.blocks if isinstance(b, TextBlock)
    ]


def run_turn(qtbot: Any, window: MainWindow, text: str) -> None:
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt(text)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    window.part(ChatDock).panel.flush()


def switch(qtbot: Any, window: MainWindow, action: Callable[[], object]) -> None:
    """Open a session (reopen or new) and wait until it is ready and the list shows it as current."""
    with qtbot.waitSignal(window.bridge.sessionReady, timeout=TURN_TIMEOUT_MS):
        action()
    qtbot.waitUntil(
        lambda: window.part(SessionsDock).panel.current == window.bridge.session_id, timeout=TURN_TIMEOUT_MS
    )
    window.part(ChatDock).panel.flush()


def test_sessions_are_listed_reopened_with_chat_tree_and_review_and_new_starts_empty(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, write_script: Script, user_config: Any
) -> None:
    # The model comes from the user's config, read again for each new session: the second session
    # answers from another script than the first.
    user_config(f'[llm]\nmodel = "scripted:{write_script(EDIT_GREET)}"\n')
    window = make_window(git_workspace)
    wait_ready(qtbot, window)
    panel = window.part(SessionsDock).panel
    # Only the current session, untitled; nothing earlier.
    qtbot.waitUntil(lambda: panel.titles() == ["New session (no prompt yet)"], timeout=TURN_TIMEOUT_MS)
    assert panel.message.isVisible()

    first = window.bridge.session_id
    run_turn(qtbot, window, "Make greet say Hi")
    qtbot.waitUntil(lambda: window.part(ReviewDock).pane.files_model.rowCount() == 1, timeout=TURN_TIMEOUT_MS)
    assert len(window.part(TreeDock).view.runs) == 1
    first_run = next(iter(window.part(TreeDock).view.runs.values())).run_id
    # With the search tree open and a real conversation in the chat, the code viewer keeps its room.
    assert window.part(TreeDock).dock.isVisible()
    assert window.viewer.width() >= 0.45 * window.width()

    user_config(f'[llm]\nmodel = "scripted:{write_script(READ_ME)}"\n')
    switch(qtbot, window, window.part(SessionsDock).new)
    second = window.bridge.session_id
    assert second != first
    assert chat_texts(window) == []  # a new session: empty chat, no tree, nothing to review
    assert window.part(TreeDock).view.runs == {}
    assert window.part(ReviewDock).pane.files_model.rowCount() == 0
    run_turn(qtbot, window, "What does the README say?")
    assert chat_texts(window) == [
        ("user", "What does the README say?"),
        ("assistant", "The README says the demo says hello."),
    ]

    newest_first = ["What does the README say?", "Make greet say Hi"]
    qtbot.waitUntil(lambda: panel.titles() == newest_first, timeout=TURN_TIMEOUT_MS)
    assert panel.sessions_shown() == [second, first]
    assert not panel.message.isVisible()

    # Reopen the first session from the list (double-click / Enter): its chat, tree and review return.
    assert not panel.open_button.isEnabled()  # nothing selected yet
    panel.list.setCurrentRow(1)
    assert panel.open_button.isEnabled()
    switch(qtbot, window, lambda: qtbot.mouseClick(panel.open_button, Qt.MouseButton.LeftButton))
    assert window.bridge.session_id == first
    assert chat_texts(window) == [("user", "Make greet say Hi"), ("assistant", "greet now says Hi.")]
    qtbot.waitUntil(lambda: len(window.part(TreeDock).view.runs) == 1, timeout=TURN_TIMEOUT_MS)
    assert next(iter(window.part(TreeDock).view.runs.values())).run_id == first_run
    qtbot.waitUntil(lambda: window.part(ReviewDock).pane.files_model.rowCount() == 1, timeout=TURN_TIMEOUT_MS)
    assert (git_workspace / "pkg" / "greet.py").read_text().count("Hello") == 1, "still only pending"
    assert panel.current == first and not panel.open_button.isEnabled()

    switch(qtbot, window, window.part(SessionsDock).new)
    assert chat_texts(window) == []
    assert window.part(TreeDock).view.runs == {}
    assert window.part(ReviewDock).pane.files_model.rowCount() == 0
    assert window.bridge.session_id not in (first, second)


def test_an_agent_without_session_listing_says_so_and_still_starts_new_sessions(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window = make_window(tmp_path, command=ECHO_AGENT)
    wait_ready(qtbot, window)
    panel = window.part(SessionsDock).panel
    qtbot.waitUntil(lambda: panel.message.text() == "This agent cannot list its sessions.")
    assert panel.titles() == []
    assert panel.new_button.isEnabled() and not panel.open_button.isEnabled()
    run_turn(qtbot, window, "hello")
    assert chat_texts(window)
    first = window.bridge.session_id
    with qtbot.waitSignal(window.bridge.sessionReady, timeout=TURN_TIMEOUT_MS):
        qtbot.mouseClick(panel.new_button, Qt.MouseButton.LeftButton)
    assert window.bridge.session_id != first
    window.part(ChatDock).panel.flush()
    assert chat_texts(window) == []
