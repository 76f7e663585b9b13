"""An agent that asks to authenticate before it opens a session (tests/support/auth_agent.py, a real ACP
agent on the official SDK): the window's dialog lists its methods, and each path ends in a session — an
env var stored in the agent's ``[agents]`` env of config.toml (or used for this run only, for an agent
given as a command), ``authenticate`` for the agent's own method, the command of a terminal method run and
Retry — or, on Cancel, in a stopped agent the chat tells of. Refusals are said in the dialog; no secret
reaches the log, the chat or the status bar."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QGroupBox, QLabel, QLineEdit

from ide.app.chat.part import ChatDock
from ide.app.sessions.auth import AuthDialog
from ide.app.sessions.part_agents import AgentPicker
from ide.app.sessions.part_auth import AgentAuth
from ide.app.window import MainWindow
from ide.client import auth
from ide.client.agentproc import AgentChoice
from ide.settings import load_settings, user_config_path
from tests.support.window import (
    BACKEND_START_TIMEOUT_MS,
    ECHO_AGENT,
    TURN_TIMEOUT_MS,
    WindowFactory,
    wait_ready,
)

pytestmark = pytest.mark.window

AUTH_AGENT = Path(__file__).parents[2] / "support" / "auth_agent.py"
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


def command(state: Path) -> list[str]:
    return [sys.executable, str(AUTH_AGENT), str(state)]


def asked(qtbot: Any, window: MainWindow) -> AuthDialog:
    """The auth dialog, once the agent asked."""
    part = window.part(AgentAuth)
    qtbot.waitUntil(
        lambda: part.dialog is not None and part.dialog.isVisible(), timeout=BACKEND_START_TIMEOUT_MS
    )
    assert part.dialog is not None
    return part.dialog


def failed(qtbot: Any, dialog: AuthDialog) -> str:
    """What the dialog says went wrong, once it says it."""
    qtbot.waitUntil(lambda: not dialog.busy and dialog.status.isVisible(), timeout=TURN_TIMEOUT_MS)
    return dialog.status.text()


def chat_text(window: MainWindow) -> str:
    panel = window.part(ChatDock).panel
    panel.flush()
    return "\n".join(view.plain_text() for view in panel.views())


def events(state: Path) -> list[str]:
    import json

    lines = (state / "record.jsonl").read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


def test_the_dialog_lists_each_method_and_the_agents_own_sign_in_opens_the_session(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    (state / "refuse").write_text("")
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    assert window.bridge.state == "starting" and window.bridge.session_id is None
    assert "backend waiting for sign-in" in window.status.state.text()
    assert dialog.windowTitle() == "Sign in to auth_agent"
    assert dialog.findChild(QLabel, "authMessage").text().startswith("It said: Sign in first")
    boxes = [box.title() for box in dialog.findChildren(QGroupBox)]
    assert boxes == ["API key", "Sign in with a browser", "Log in in a terminal"]
    key, region = dialog.fields["api-key"]["AUTH_AGENT_KEY"], dialog.fields["api-key"]["AUTH_AGENT_REGION"]
    assert key.echoMode() == QLineEdit.EchoMode.Password and region.echoMode() == QLineEdit.EchoMode.Normal

    # The agent refuses the sign-in: said in the dialog, which stays.
    dialog.buttons["sign-in:browser"].click()
    assert failed(qtbot, dialog) == "The agent did not sign in: the browser sign-in was cancelled"
    assert dialog.isVisible() and dialog.buttons["sign-in:browser"].isEnabled()

    (state / "refuse").unlink()
    dialog.buttons["sign-in:browser"].click()
    wait_ready(qtbot, window)
    assert not dialog.isVisible() and window.bridge.session_id
    assert "backend ready" in window.status.state.text()
    assert events(state)[-3:] == ["authenticate", "authenticate", "session/new"]
    window.send_prompt("hello")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)


def test_a_key_for_a_configured_agent_is_stored_in_its_env_and_the_agent_started_again_with_it(
    qtbot: Any,
    make_window: WindowFactory,
    git_workspace: Path,
    state: Path,
    user_config: Callable[[str], Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    program, *args = command(state)
    echo, *echo_args = ECHO_AGENT
    config = user_config(
        f"# mine\n[agents.authy]\ncommand = {program!r}\nargs = {args!r}\n"
        f"\n[agents.echo]\ncommand = {echo!r}\nargs = {echo_args!r}\n".replace("'", '"')
    )
    entry = load_settings(git_workspace).settings.agents["authy"]
    window = make_window(git_workspace, agent=AgentChoice.from_settings("authy", entry))
    dialog = asked(qtbot, window)
    assert window.bridge.choice.works_in_shadow  # a configured foreign agent, as the Agent menu starts it
    where = dialog.findChild(QLabel, "authWhere_api-key").text()
    assert "[agents.authy] env" in where and str(user_config_path()) in where

    # A required field left empty is said; nothing is stored.
    dialog.buttons["save:api-key"].click()
    assert failed(qtbot, dialog) == "Fill in AUTH_AGENT_KEY first."
    assert "env" not in tomllib.loads(config.read_text())["agents"]["authy"]

    # A key the agent refuses: stored, the agent started again with it, and it still asks.
    dialog.fields["api-key"]["AUTH_AGENT_KEY"].setText("wrong")
    dialog.buttons["save:api-key"].click()
    assert failed(qtbot, dialog) == "The agent did not sign in: the key in AUTH_AGENT_KEY was refused"
    assert window.part(AgentAuth).dialog is dialog

    dialog.fields["api-key"]["AUTH_AGENT_KEY"].setText(SECRET)
    dialog.fields["api-key"]["AUTH_AGENT_REGION"].setText("eu")
    dialog.buttons["save:api-key"].click()
    wait_ready(qtbot, window)
    assert not dialog.isVisible() and dialog.values("api-key") == {
        "AUTH_AGENT_KEY": "",
        "AUTH_AGENT_REGION": "",
    }
    saved = tomllib.loads(config.read_text())["agents"]["authy"]
    assert saved == {
        "command": program,
        "args": args,
        "env": {"AUTH_AGENT_KEY": SECRET, "AUTH_AGENT_REGION": "eu"},
    }
    assert config.read_text().startswith("# mine\n") and oct(config.stat().st_mode & 0o777) == "0o600"
    # The agent got the key in its environment (its record of each start).
    import json

    starts = [json.loads(line) for line in (state / "record.jsonl").read_text().splitlines()]
    assert [s["key"] for s in starts if s["event"] == "start"] == [None, "wrong", SECRET]
    # Started with the key, it was asked to authenticate with the method, then for the session.
    assert [(s["event"], s.get("method")) for s in starts[-3:]] == [
        ("start", None),
        ("authenticate", "api-key"),
        ("session/new", None),
    ]
    # The key is nowhere the user or a log sees.
    assert SECRET not in caplog.text and SECRET not in chat_text(window)
    assert SECRET not in window.statusBar().currentMessage()
    assert (
        "Stored AUTH_AGENT_KEY, AUTH_AGENT_REGION in [agents.authy] env"
        in window.statusBar().currentMessage()
    )

    # Away and back through Agent → Use Agent: the entry as stored now, key included, and no dialog.
    picker = window.part(AgentPicker)
    assert picker.switch("echo")
    qtbot.waitUntil(lambda: window.bridge.choice.name == "echo", timeout=TURN_TIMEOUT_MS)
    wait_ready(qtbot, window)
    assert picker.switch("authy")
    qtbot.waitUntil(lambda: window.bridge.choice.name == "authy", timeout=TURN_TIMEOUT_MS)
    wait_ready(qtbot, window)
    assert (
        window.bridge.choice.env["AUTH_AGENT_KEY"] == SECRET and not window.part(AgentAuth).dialog.isVisible()
    )


def test_an_agent_given_as_a_command_takes_the_value_for_this_run_only(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    assert "save:api-key" not in dialog.buttons
    assert "can only be stored for a named agent" in dialog.findChild(QLabel, "authWhere_api-key").text()
    dialog.fields["api-key"]["AUTH_AGENT_KEY"].setText(SECRET)
    dialog.buttons["use:api-key"].click()
    wait_ready(qtbot, window)
    assert not user_config_path().exists()
    assert window.bridge.choice.env == {"AUTH_AGENT_KEY": SECRET}


def test_a_terminal_method_says_the_command_to_run_and_retry_opens_the_session(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    line = dialog.commands["login"].toPlainText()
    assert line.startswith("AUTH_AGENT_LOGIN=terminal ") and line.endswith(f"{state} --login")
    dialog.buttons["copy:login"].click()
    assert QGuiApplication.clipboard().text() == line

    # Retry before the login: the agent still asks, and the dialog says so.
    dialog.buttons["retry:login"].click()
    assert failed(qtbot, dialog).startswith("auth_agent still asks you to sign in: Sign in first")

    done = subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert done.returncode == 0 and "Signed in." in done.stdout, done.stderr
    dialog.buttons["retry:login"].click()
    wait_ready(qtbot, window)
    assert not dialog.isVisible()
    # Each Retry connects to the agent anew (ACP v1: a client reconnects after a terminal login).
    assert events(state) == ["start", "session/new"] * 3


def test_cancel_leaves_the_agent_stopped_and_the_chat_says_so(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    with qtbot.waitSignal(window.bridge.stopped, timeout=TURN_TIMEOUT_MS):
        dialog.reject()
    assert window.bridge.state == "stopped" and window.bridge.pid is None
    text = chat_text(window)
    assert "auth_agent was not started: it asks you to sign in first (Sign in first" in text
    assert "Traceback" not in text
    assert not window.part(ChatDock).panel.send_button.isEnabled()

    # The window stays usable: Restart Backend asks again.
    window.restart_backend()
    again = asked(qtbot, window)
    assert again is not dialog
    again.fields["api-key"]["AUTH_AGENT_KEY"].setText(SECRET)
    again.buttons["use:api-key"].click()
    wait_ready(qtbot, window)


def test_what_an_agent_says_is_shown_as_text_and_no_methods_is_said(qtbot: Any, qsettings_dir: Path) -> None:
    needed = auth.AuthNeeded("odd", ("odd-agent",), (), "<b>bold</b> <a href='javascript:x'>here</a>")
    dialog = AuthDialog(needed, storable=False, config="/c/config.toml")
    qtbot.addWidget(dialog)
    message = dialog.findChild(QLabel, "authMessage")
    assert message.textFormat() == Qt.TextFormat.PlainText and "<b>bold</b>" in message.text()
    assert dialog.findChild(QLabel, "authNoMethods") is not None and not dialog.buttons


def test_cancel_while_the_agent_signs_in_does_not_wait_for_it(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    (state / "hang").write_text("")
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    dialog.buttons["sign-in:browser"].click()
    qtbot.waitUntil(lambda: "authenticate" in events(state), timeout=TURN_TIMEOUT_MS)
    assert (
        dialog.busy and not dialog.buttons["sign-in:browser"].isEnabled() and dialog.cancel_button.isEnabled()
    )
    with qtbot.waitSignal(window.bridge.stopped, timeout=TURN_TIMEOUT_MS):  # not authenticate's 300 s
        dialog.reject()
    assert window.bridge.state == "stopped"
    assert "auth_agent was not started" in chat_text(window)


def test_an_agent_that_dies_while_signing_in_is_said_in_the_dialog(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, state: Path
) -> None:
    (state / "die").write_text("")
    window = make_window(tmp_path, command=command(state))
    dialog = asked(qtbot, window)
    dialog.buttons["sign-in:browser"].click()
    qtbot.waitUntil(lambda: "exited" in dialog.status.text(), timeout=TURN_TIMEOUT_MS)
    said = dialog.status.text()
    assert said.startswith("auth_agent exited (code 3) before it opened a session")
    assert "Traceback" not in said and not dialog.busy and dialog.buttons["use:api-key"].isEnabled()
    assert window.bridge.state == "stopped"
    dialog.buttons["sign-in:browser"].click()
    assert dialog.status.text() == "The agent is not running any more: Cancel, then Agent → Restart Backend."
    # A key for this run starts it again.
    (state / "die").unlink()
    dialog.fields["api-key"]["AUTH_AGENT_KEY"].setText(SECRET)
    dialog.buttons["use:api-key"].click()
    wait_ready(qtbot, window)


def test_another_agent_picked_while_the_dialog_is_open_closes_it_and_keeps_running(
    qtbot: Any,
    make_window: WindowFactory,
    tmp_path: Path,
    state: Path,
    user_config: Callable[[str], Path],
) -> None:
    echo, *echo_args = ECHO_AGENT
    user_config(f"[agents.echo]\ncommand = {echo!r}\nargs = {echo_args!r}\n".replace("'", '"'))
    window = make_window(tmp_path, command=command(state), env={})
    dialog = asked(qtbot, window)
    assert window.part(AgentPicker).switch("echo")
    qtbot.waitUntil(lambda: window.bridge.choice.name == "echo", timeout=TURN_TIMEOUT_MS)
    wait_ready(qtbot, window)
    assert not dialog.isVisible() and "Signed in" not in window.statusBar().currentMessage()
    dialog.reject()  # a late Cancel (the dialog was closed by then) stops nothing
    assert window.bridge.state == "ready" and "was not started" not in chat_text(window)
