"""Issue 49 item 2 with the real Codex (codex-acp 0.16.0, a foreign agent in a shadow of the workspace,
against a scripted Responses API server): its ``configOptions`` become selectors in the window's chat —
its model option with every model it offers — and picking another model sends
``session/set_config_option``: the selector follows Codex's answer, and the next turn asks the model server
for that model. Without a key Codex asks to sign in: the window's dialog offers its methods, and a key
saved there is stored in its ``[agents]`` env and reaches the model server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QComboBox, QGroupBox

from ide.app.chat.part import ChatDock
from ide.app.foreign.part import ForeignAgent
from ide.app.sessions.part_auth import AgentAuth
from ide.client.agentproc import AgentChoice, resolve_agent
from ide.settings import load_settings
from tests.support.codex import CODEX_ACP, CODEX_BINARY, MODEL, codex_command
from tests.support.fake_openai import FakeOpenAI
from tests.support.git import hello_repo
from tests.support.window import (  # noqa: F401
    WindowFactory,
    make_window,
    qloop,
    qsettings_dir,
    session_qloop,
)

pytestmark = [pytest.mark.window, pytest.mark.timeout(240)]
CODEX_TIMEOUT_MS = 120_000
ANSWER = "Answered by the other model."
KEY = "sk-test-typed-in-the-dialog-0123"


@pytest.fixture
def codex_peers(node_peers: Path) -> Path:
    if not (node_peers / CODEX_ACP).exists() or not (node_peers / CODEX_BINARY).exists():
        pytest.skip(
            "codex-acp's launcher or its linux-x64 binary (an optional npm dependency) is not installed: "
            "run npm install in tests/interop on linux x64"
        )
    return node_peers


def test_codexs_model_option_is_a_selector_and_picking_a_model_reaches_codex(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    codex_peers: Path,
    tmp_path: Path,
    qtbot: Any,
) -> None:
    workspace = hello_repo(tmp_path)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)  # Codex stops at start without its home
    with FakeOpenAI(side=lambda _body: {"content": ANSWER}) as server:
        agent = resolve_agent(codex_command(codex_peers, server.url), {})
        window = make_window(workspace, agent=dataclasses.replace(agent, env={"HOME": str(home)}))
        backend = window.part(ForeignAgent).review  # type: ignore[attr-defined]
        try:
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=CODEX_TIMEOUT_MS)
            assert window.bridge.agent_meta is None  # a foreign agent: all of its options are shown
            bar = window.part(ChatDock).panel.options
            qtbot.waitUntil(lambda: "model" in bar.selectors, timeout=CODEX_TIMEOUT_MS)
            model = bar.selectors["model"]
            assert isinstance(model, QComboBox) and bar.isVisible() and model.isEnabled()
            values = [model.itemData(i) for i in range(model.count())]
            # The configured model first, then the models Codex knows (their names and count change with
            # Codex's releases; these are 0.16.0's).
            assert values[0] == MODEL and model.currentData() == MODEL
            assert len(values) > 2 and len(set(values)) == len(values)
            assert model.itemText(0) == f"Model: {MODEL}"
            assert model.toolTip() == "Choose which model Codex should use"
            option = next(o for o in window.bridge.config_options if o.id == "model")
            assert option.category == "model"

            chosen = values[-1]
            with qtbot.waitSignal(window.bridge.configOptionsChanged, timeout=CODEX_TIMEOUT_MS):
                model.setCurrentIndex(len(values) - 1)
                model.activated.emit(len(values) - 1)
            qtbot.waitUntil(lambda: bar.selectors["model"].currentData() == chosen, timeout=CODEX_TIMEOUT_MS)
            option = next(o for o in window.bridge.config_options if o.id == "model")
            assert option.current_value == chosen

            # Codex took it: the next turn asks the model server for that model.
            window.send_prompt("say hello")
            qtbot.waitUntil(lambda: bool(server.response_bodies), timeout=CODEX_TIMEOUT_MS)
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=CODEX_TIMEOUT_MS)
            assert {body.get("model") for body in server.response_bodies} == {chosen}
            assert bar.selectors["model"].currentData() == chosen
        finally:
            task = asyncio.ensure_future(backend.aclose())
            qtbot.waitUntil(task.done, timeout=15_000)


def test_codex_asks_to_sign_in_and_the_key_typed_in_the_dialog_is_stored_and_reaches_the_model_server(
    make_window: WindowFactory,  # noqa: F811 (the window tests' fixture, imported above)
    codex_peers: Path,
    tmp_path: Path,
    qtbot: Any,
    user_config: Callable[[str], Path],
) -> None:
    """Codex on OpenAI's own provider (its address moved to the fake server) without a key refuses
    ``session/new``; the dialog offers its three methods, and the OpenAI key saved there is in its
    ``[agents]`` env, Codex is started again with it and told to authenticate, and the next turn reaches
    the model server with that key."""
    workspace = hello_repo(tmp_path)
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    with FakeOpenAI(side=lambda _body: {"content": ANSWER}) as server:
        args = [str(codex_peers / CODEX_ACP), "-c", f"model={MODEL}", "-c", f"openai_base_url={server.url}"]
        config = user_config(
            "[agents.codex]\n"
            'command = "node"\n'
            f"args = {json.dumps(args)}\n"
            f"env = {{ HOME = {json.dumps(str(home))} }}\n"
        )
        entry = load_settings(workspace).settings.agents["codex"]
        window = make_window(workspace, agent=AgentChoice.from_settings("codex", entry))
        backend = window.part(ForeignAgent).review  # type: ignore[attr-defined]
        try:
            part = window.part(AgentAuth)
            qtbot.waitUntil(
                lambda: part.dialog is not None and part.dialog.isVisible(), timeout=CODEX_TIMEOUT_MS
            )
            dialog = part.dialog
            assert dialog is not None and window.bridge.session_id is None
            titles = [box.title() for box in dialog.findChildren(QGroupBox)]
            assert titles == ["Login with ChatGPT", "Use CODEX_API_KEY", "Use OPENAI_API_KEY"]
            assert set(dialog.fields) == {"codex-api-key", "openai-api-key"}
            assert "save:openai-api-key" in dialog.buttons and "sign-in:chatgpt" in dialog.buttons

            dialog.fields["openai-api-key"]["OPENAI_API_KEY"].setText(KEY)
            dialog.buttons["save:openai-api-key"].click()
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=CODEX_TIMEOUT_MS)
            assert not dialog.isVisible()
            stored = tomllib.loads(config.read_text())["agents"]["codex"]
            assert stored["env"] == {"HOME": str(home), "OPENAI_API_KEY": KEY} and stored["args"] == args

            window.send_prompt("say hello")
            qtbot.waitUntil(lambda: bool(server.response_bodies), timeout=CODEX_TIMEOUT_MS)
            qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=CODEX_TIMEOUT_MS)
            assert set(server.authorizations) == {f"Bearer {KEY}"}
        finally:
            task = asyncio.ensure_future(backend.aclose())
            qtbot.waitUntil(task.done, timeout=15_000)
