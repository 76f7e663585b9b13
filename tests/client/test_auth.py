"""An agent's authentication, Qt-free (ide/client/auth.py): its methods as ``initialize`` lists them, read
from a real agent (tests/support/auth_agent.py) and from odd JSON; "authentication required" told apart;
``authenticate`` accepted or refused; the command a terminal method asks for; an env-var method's values
stored in ``[agents.NAME].env`` of config.toml — every way the table may be written, the rest of the file
kept, the file private — or refused with nothing written."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from ide.client import agentconn, auth, sessions
from ide.client.agentconn import ClientCallbacks
from ide.client.agentproc import AgentChoice, AgentProcess
from ide.settings import AgentServerSettings, load_settings

AUTH_AGENT = Path(__file__).parents[1] / "support" / "auth_agent.py"


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[tuple[Any, Path]]:
    state = tmp_path / "state"
    state.mkdir()
    process = await AgentProcess.spawn([sys.executable, str(AUTH_AGENT), str(state)], dict(os.environ))
    agentconn.load_sdk()
    conn = agentconn.connect(process, ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None))
    yield conn, state
    await process.stop(conn)


async def new_session(conn: Any) -> sessions.OpenedSession:
    return await sessions.open_session(conn, "/", None, False, lambda: None, lambda _m: None)


async def test_the_agents_methods_come_from_initialize_and_a_session_waits_for_a_sign_in(
    agent: tuple[Any, Path],
) -> None:
    conn, state = agent
    hello = await agentconn.initialize(conn, meta={})
    methods = auth.read_methods(hello.auth_methods)
    assert [type(m) for m in methods] == [auth.EnvVarMethod, auth.AgentMethod, auth.TerminalMethod]
    key, browser, login = methods
    assert (
        isinstance(key, auth.EnvVarMethod) and key.id == "api-key" and key.link == "https://example.com/keys"
    )
    assert key.vars == (
        auth.EnvVar("AUTH_AGENT_KEY", "API key", secret=True, optional=False),
        auth.EnvVar("AUTH_AGENT_REGION", "Region", secret=False, optional=True),
    )
    assert browser == auth.AgentMethod("browser", "Sign in with a browser", "Opens your browser")
    assert isinstance(login, auth.TerminalMethod) and login.args == ("--login",)
    assert dict(login.env) == {"AUTH_AGENT_LOGIN": "terminal"}

    with pytest.raises(RequestError) as refused:
        await new_session(conn)
    assert auth.is_auth_required(refused.value)
    assert auth.error_message(refused.value).startswith("Sign in first")

    # A refused sign-in says why; an accepted one lets the session open.
    (state / "refuse").write_text("")
    assert (
        await auth.authenticate(conn, "browser")
        == "The agent did not sign in: the browser sign-in was cancelled"
    )
    (state / "refuse").unlink()
    assert await auth.authenticate(conn, "browser") is None
    assert (await new_session(conn)).session_id


async def test_the_terminal_method_is_the_agents_command_with_its_arguments_and_environment(
    agent: tuple[Any, Path],
) -> None:
    conn, state = agent
    hello = await agentconn.initialize(conn, meta={})
    login = next(m for m in auth.read_methods(hello.auth_methods) if isinstance(m, auth.TerminalMethod))
    command = [sys.executable, str(AUTH_AGENT), str(state)]
    line = auth.terminal_command(command, login)
    assert line.startswith("AUTH_AGENT_LOGIN=terminal ") and line.endswith(" --login")
    # The line as a user pastes it into a shell signs in; then the session opens.
    shell = await asyncio.create_subprocess_exec("sh", "-c", line, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(shell.communicate(), 60)
    assert shell.returncode == 0, err
    assert (await new_session(conn)).session_id


def test_odd_methods_are_read_or_left_out() -> None:
    raw: list[Any] = [
        {"id": "", "name": "no id"},
        {"type": "env_var", "id": "bad", "name": "Bad", "vars": [{"name": "NOT A NAME"}]},
        {"type": "env_var", "id": "k", "name": "Key", "vars": [{"name": "OK_KEY"}, {"name": "x-y"}]},
        {"type": "terminal", "id": "t", "name": "T", "args": ["a", 3], "env": {"GOOD": "1", "bad name": "2"}},
        {"id": "a", "name": "x" * 900},
        {"type": "agent", "id": "typed", "name": "Typed"},
        {"type": "future_kind", "id": "f", "name": "F"},
    ]
    methods = auth.read_methods(raw)
    assert [m.id for m in methods] == ["k", "t", "a", "typed"]
    key, terminal, long_name, _ = methods
    assert isinstance(key, auth.EnvVarMethod) and [v.name for v in key.vars] == ["OK_KEY"]
    assert key.vars[0].secret and key.vars[0].label == "OK_KEY"
    assert (
        isinstance(terminal, auth.TerminalMethod)
        and terminal.args == ("a",)
        and dict(terminal.env) == {"GOOD": "1"}
    )
    assert len(long_name.name) == auth.MAX_TEXT
    assert auth.read_methods(None) == []


def test_a_terminal_command_quotes_every_word_for_a_shell() -> None:
    method = auth.TerminalMethod("t", "T", "", ("--login", "two words"), {"MODE": "a b"})
    line = auth.terminal_command(["/opt/my agent/bin", "--acp"], method)
    assert line == "MODE='a b' '/opt/my agent/bin' --acp --login 'two words'"


def test_auth_required_is_told_apart_from_other_refusals() -> None:
    assert auth.is_auth_required(RequestError.auth_required())
    assert auth.error_message(RequestError.auth_required()) == "Authentication required"
    assert not auth.is_auth_required(RequestError.invalid_params({"message": "no"}))
    assert auth.error_message(RequestError.invalid_params({"details": "why"})) == "why"


def test_only_an_agents_entry_run_as_configured_is_configured() -> None:
    agents = {"codex": AgentServerSettings(command="codex-acp", args=["--x"])}
    assert auth.is_configured("codex", ["codex-acp", "--x"], agents)
    assert not auth.is_configured("codex", ["codex-acp"], agents)  # a command line named like it
    assert not auth.is_configured("other", ["codex-acp", "--x"], agents)


CONFIG = """\
# my settings
[llm]
model = "ollama:qwen"  # the local one

[agents.codex]
command = "codex-acp"
args = ["--x"]

# another agent
[agents.gemini]
command = "gemini"
"""


def stored(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def test_values_go_into_the_agents_table_and_the_rest_of_the_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    path.chmod(0o644)
    auth.store_agent_env(path, "codex", {"OPENAI_API_KEY": 'sk-"quoted"\\ é'})
    text = path.read_text()
    assert text.startswith(CONFIG.split("[agents.codex]")[0])  # comments and other tables as they were
    assert "# another agent\n[agents.gemini]" in text
    data = stored(path)
    assert data["agents"]["codex"] == {
        "command": "codex-acp",
        "args": ["--x"],
        "env": {"OPENAI_API_KEY": 'sk-"quoted"\\ é'},
    }
    assert data["agents"]["gemini"] == {"command": "gemini"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds a key now

    # A second store merges into the env written before, replacing what it names.
    auth.store_agent_env(path, "codex", {"OPENAI_API_KEY": "sk-2", "REGION": "eu"})
    assert stored(path)["agents"]["codex"]["env"] == {"OPENAI_API_KEY": "sk-2", "REGION": "eu"}
    assert path.read_text().count("env =") == 1


def test_an_env_table_or_dotted_keys_are_edited_in_place(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[agents.codex]\ncommand = "c"\n\n[agents.codex.env]\nKEEP = "1"\nKEY = "old"\n\n[llm]\n')
    auth.store_agent_env(path, "codex", {"KEY": "new", "MORE": "2"})
    assert stored(path)["agents"]["codex"]["env"] == {"KEEP": "1", "KEY": "new", "MORE": "2"}
    assert "llm" in stored(path)

    path.write_text('[agents."my agent"]\ncommand = "c"\nenv.A = "1"\nenv.B = "2"\n')
    auth.store_agent_env(path, "my agent", {"B": "3"})
    assert stored(path)["agents"]["my agent"] == {"command": "c", "env": {"A": "1", "B": "3"}}


def test_an_agent_configured_elsewhere_gets_a_whole_entry(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.toml"  # no file yet
    entry = AgentServerSettings(command="npx", args=["-y", "pkg"], env={"X": "1"}, pass_env=["HOME2"])
    auth.store_agent_env(path, "pkg", {"KEY": "v"}, entry)
    assert stored(path)["agents"]["pkg"] == {
        "command": "npx",
        "args": ["-y", "pkg"],
        "env": {"X": "1", "KEY": "v"},
        "pass_env": ["HOME2"],
    }
    with pytest.raises(auth.StoreError, match="not a table of its own"):
        auth.store_agent_env(tmp_path / "other.toml", "pkg", {"KEY": "v"})


def test_what_cannot_be_edited_safely_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    for text, why in (
        ('[agents]\ncodex = { command = "c" }\n', "not a table of its own"),
        ("[agents.codex\n", "not valid TOML"),
        ('[agents.codex]\ncommand = "c"\nenv = """\nx"""\n', "not a table"),
    ):
        path.write_text(text)
        with pytest.raises(auth.StoreError, match=why):
            auth.store_agent_env(path, "codex", {"KEY": "v"}, AgentServerSettings(command="c"))
        assert path.read_text() == text
    with pytest.raises(auth.StoreError, match="not environment variable names"):
        auth.store_agent_env(path, "codex", {"A B": "v"})


def test_a_linked_config_is_written_through_its_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "arbor.toml"
    real.parent.mkdir()
    real.write_text('[agents.codex]\ncommand = "c"\n')
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    auth.store_agent_env(link, "codex", {"KEY": "v"})
    assert link.is_symlink() and stored(real)["agents"]["codex"]["env"] == {"KEY": "v"}


def test_the_stored_values_reach_the_agents_environment_through_the_settings(
    tmp_path: Path, user_config: Any
) -> None:
    path = user_config(CONFIG)
    auth.store_agent_env(path, "codex", {"OPENAI_API_KEY": "sk-stored"})
    settings = load_settings(tmp_path).settings
    choice = AgentChoice.from_settings("codex", settings.agents["codex"])
    assert choice.environment()["OPENAI_API_KEY"] == "sk-stored"
    workspace_config = tmp_path / ".arbor" / "config.toml"
    assert not auth.defines_agent(workspace_config, "codex")
    workspace_config.parent.mkdir()
    workspace_config.write_text('[agents.codex]\ncommand = "other"\n')
    assert auth.defines_agent(workspace_config, "codex")
