"""Choosing the ACP agent the window drives: ``[agents.NAME]`` settings, ``arbor --agent``, and trust."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ide.client.agentproc import ARBOR_AGENT, BACKEND_COMMAND_ENV, arbor_agent, resolve_agent
from ide.settings import AgentServerSettings, SettingsError, load_settings

ARBOR = [sys.executable, "-m", "ide"]
AGENT_TOML = (
    '[agents.helper]\ncommand = "{program}"\nargs = ["--acp", "x y"]\nenv = {{ HELPER_MODE = "1" }}\n'
)


def arbor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARBOR, *args], capture_output=True, text=True, timeout=60, check=False)


def test_a_configured_agent_is_found_by_name(user_config: Callable[[str], Path], tmp_path: Path) -> None:
    user_config(AGENT_TOML.format(program="helper-acp"))
    agents = load_settings(tmp_path).settings.agents
    assert agents == {
        "helper": AgentServerSettings(command="helper-acp", args=["--acp", "x y"], env={"HELPER_MODE": "1"})
    }
    choice = resolve_agent("helper", agents)
    assert (choice.name, choice.command, choice.env) == (
        "helper",
        ["helper-acp", "--acp", "x y"],
        {"HELPER_MODE": "1"},
    )
    assert not choice.is_arbor


def test_arbor_and_command_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_agent("Arbor", {}).is_arbor and resolve_agent("arbor", {}).command == arbor_agent().command
    monkeypatch.setenv(BACKEND_COMMAND_ENV, "my-backend --flag")
    assert resolve_agent(ARBOR_AGENT, {}).command == ["my-backend", "--flag"]  # still honoured
    line = resolve_agent(f"'{sys.executable}' -m some.agent", {})
    assert line.command == [sys.executable, "-m", "some.agent"] and line.env == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "needs a name from [agents]"),
        ("'unclosed", "not a command line"),
        ("no-such-agent-program --acp", "no program 'no-such-agent-program' on PATH"),
    ],
)
def test_bad_agents_are_explained(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        resolve_agent(spec, {})


def test_a_bad_agents_table_names_file_and_key(user_config: Callable[[str], Path], tmp_path: Path) -> None:
    path = user_config("[agents.helper]\nargs = ['x']\n")
    with pytest.raises(SettingsError, match=rf"{path}:\d+: agents"):
        load_settings(tmp_path)


def test_a_repositorys_agent_waits_for_trust(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".arbor").mkdir(parents=True)
    (repo / ".arbor" / "config.toml").write_text(AGENT_TOML.format(program="evil-acp"))
    held = load_settings(repo, trust=False)
    assert held.settings.agents == {}
    [item] = held.held_back
    assert item.key == "agents" and "agent commands" in item.reason
    assert item.commands() == ["helper: evil-acp --acp 'x y'"]
    assert load_settings(repo, trust=True).settings.agents["helper"].command == "evil-acp"


def test_cli_refuses_an_unknown_agent_and_points_at_trust(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".arbor").mkdir(parents=True)
    (repo / ".arbor" / "config.toml").write_text(AGENT_TOML.format(program="evil-acp"))
    done = arbor("--agent", "helper", str(repo))
    assert done.returncode == 2, done.stderr
    assert "no agent of that name" in done.stderr and f"arbor trust {repo}" in done.stderr
    assert "Traceback" not in done.stderr
    done = arbor("--agent", "'oops", str(repo))
    assert done.returncode == 2 and "not a command line" in done.stderr
    assert "--agent" in arbor("gui", "--help").stdout
