"""What Arbor starts for someone else gets an allow-listed environment (ide/childenv.py), never its keys.

Arbor's own environment holds model keys, tokens, a database URL with its password, an SSH agent. Another
agent (a command line, an ``[agents]`` entry, ACP or CLI), a test run (and so a plan executor's
``run_command``), an ``arbor eval`` check and a language server are each started here as a user starts
them, with those variables set, and say what they got: none of them, whatever its name. What an
``[agents]`` entry's ``pass_env`` names does reach its agent, and a task beginning with ``-`` never becomes
a CLI agent's own option.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ide.changes.overlay import ChangeSet
from ide.changes.testrun import run_tests
from ide.client.agentproc import AgentChoice, arbor_agent
from ide.codeintel.lsp.registry import LspError, ServerSpec
from ide.codeintel.lsp.server import LanguageServer
from ide.eval.tasks import EvalTask, run_check
from ide.settings import LspSettings, load_settings
from tests.support.git import hello_repo

RUN_TIMEOUT_S = 120
LEAKED = {
    "OPENAI_API_KEY": "sk-leak-openai",
    "ANTHROPIC_API_KEY": "sk-ant-leak",
    "GITHUB_TOKEN": "ghp_leak_github",
    "AWS_SECRET_ACCESS_KEY": "leak-aws-secret",
    "DATABASE_URL": "postgres://u:pw-leak@db.invalid/db",
    "SSH_AUTH_SOCK": "/tmp/ssh-leak/agent.1",
    "GPG_AGENT_INFO": "/tmp/gpg-leak/S.gpg-agent",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/dbus-leak",
    "XDG_RUNTIME_DIR": "/tmp/runtime-leak",
    "DISPLAY": ":leak",
    "MYSQL_PWD": "mysql-leak",
    "OPENAI_KEY": "openai-key-leak",
    "AZURE_OPENAI_KEY": "azure-leak",
    "GH_PAT": "ghpat-leak",
    "CI_JOB_JWT": "jwt-leak",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.invalid/services/leak",
    "SENTRY_DSN": "https://leakkey@sentry.invalid/1",
    "REDIS_URL": "redis://:redis-leak@redis.invalid:6379/0",
    "DOCKER_AUTH_CONFIG": '{"auths": {"r.invalid": {"auth": "docker-leak"}}}',
}
"""Arbor's environment in these tests: every value says ``leak``, so a dump that holds one was given it."""
PROXIES = {"https_proxy": "http://proxyuser:proxy-leak@proxy.invalid:3128", "NO_PROXY": "*"}
DUMP = "import json, os; print('ENV=' + json.dumps(dict(os.environ)))"
"""A program that says what environment it got, on one line of stdout."""


def leaks(env: dict[str, str]) -> list[str]:
    """The names in ``env`` that are Arbor's secrets, or whose value carries one."""
    return sorted(name for name, value in env.items() if name in LEAKED or "leak" in value)


def dumped(output: str) -> dict[str, str]:
    """The environment a :data:`DUMP` printed into ``output`` (or a diff line that added it)."""
    line = next(line for line in output.splitlines() if line.lstrip("+").startswith("ENV="))
    return json.loads(line.lstrip("+").removeprefix("ENV="))


@pytest.fixture
def leaky_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arbor's own environment, full of secrets (and a proxy with a password); no ARBOR_PASS_ENV."""
    monkeypatch.delenv("ARBOR_PASS_ENV", raising=False)
    for name, value in {**LEAKED, **PROXIES}.items():
        monkeypatch.setenv(name, value)


def arbor_run(workspace: Path, agent: str, task: str) -> subprocess.CompletedProcess[str]:
    """``arbor run --agent AGENT -- TASK`` as a user runs it, with :data:`LEAKED` in its environment."""
    env = {**os.environ, **LEAKED, **PROXIES, "ARBOR_PASS_ENV": ""}
    argv = [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, "--", task]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


CLI_DUMPER = textwrap.dedent(
    """
    import json, os
    open("env.json", "w").write("ENV=" + json.dumps(dict(os.environ)) + "\\n")  # in its shadow: captured
    """
)
ACP_DUMPER = textwrap.dedent(
    f"""
    import json, os, runpy, sys
    open("env.json", "w").write("ENV=" + json.dumps(dict(os.environ)) + "\\n")  # in its shadow: captured
    sys.argv = [{str(Path(__file__).parents[1] / "support" / "echo_agent.py")!r}]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
)


def test_a_cli_agent_given_as_a_command_line_gets_none_of_arbors_secrets(tmp_path: Path) -> None:
    workspace = hello_repo(tmp_path)
    script = tmp_path / "dumper.py"
    script.write_text(CLI_DUMPER)
    done = arbor_run(workspace, shlex.join([sys.executable, str(script), "{prompt}"]), "look around")
    assert done.returncode == 0, done.stderr
    env = dumped(done.stdout)  # the file it wrote in its shadow, as the captured diff shows it
    assert leaks(env) == []
    assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
    assert env["https_proxy"] == "http://proxy.invalid:3128"  # the proxy, without its password
    assert env["PWD"] != str(workspace)  # its shadow


def test_an_acp_agent_from_the_settings_gets_what_its_pass_env_names_and_nothing_else(
    tmp_path: Path, user_config: Any
) -> None:
    workspace = hello_repo(tmp_path)
    script = tmp_path / "acp_dumper.py"
    script.write_text(ACP_DUMPER)
    user_config(
        "[agents.dumper]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n"
        'pass_env = ["OPENAI_API_KEY"]\n'
        'env = { DUMPER_MODEL = "its-own" }\n'
    )
    done = arbor_run(workspace, "dumper", "hello")
    assert done.returncode == 0, done.stderr
    assert "echo: hello" in done.stdout  # a real ACP turn
    env = dumped(done.stdout)
    assert env["OPENAI_API_KEY"] == LEAKED["OPENAI_API_KEY"]  # named in pass_env: passed as it is
    assert env["DUMPER_MODEL"] == "its-own"
    assert leaks(env) == ["OPENAI_API_KEY"]


async def test_the_windows_start_of_another_agent_gets_the_allow_list_and_arbors_own_backend_the_keys(
    tmp_path: Path, leaky_env: None
) -> None:
    """``AgentChoice.start``, as the window's bridge starts an agent in its shadow: another agent gets
    the base set and its ``pass_env``; Arbor's own backend (it reaches the models) keeps the keys."""
    script = tmp_path / "dump.py"
    script.write_text("import json, os; open('env.json', 'w').write(json.dumps(dict(os.environ)))\n")
    other = AgentChoice("other", [sys.executable, str(script)], {}, pass_env=("GITHUB_TOKEN",))
    agent = await other.start(str(tmp_path))
    assert await asyncio.wait_for(agent.wait(), RUN_TIMEOUT_S) == 0
    env = json.loads((tmp_path / "env.json").read_text())
    assert leaks(env) == ["GITHUB_TOKEN"]
    assert env["PWD"] == str(tmp_path)
    assert set(LEAKED) <= set(leaks(arbor_agent().environment()))


ARGV_AGENT = textwrap.dedent(
    """
    import argparse, json
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", action="store_true")
    parser.add_argument("--message")
    parser.add_argument("--dangerously-skip-permissions", action="store_true")
    parser.add_argument("prompt", nargs="?")
    print("ARGS=" + json.dumps(vars(parser.parse_args())), flush=True)
    """
)


@pytest.mark.parametrize(
    ("template", "field"),
    [("-p {prompt}", "prompt"), ("--message {prompt}", "message"), ("--message={prompt}", "message")],
)
def test_a_task_beginning_with_a_dash_is_the_prompt_never_the_agents_own_option(
    tmp_path: Path, template: str, field: str
) -> None:
    """``claude -p {prompt}`` (a positional prompt after a flag) and ``aider --message {prompt}`` (an
    option's value) alike: the task arrives as the prompt, and the agent's dangerous flag stays off."""
    workspace = hello_repo(tmp_path)
    script = tmp_path / "argv_agent.py"
    script.write_text(ARGV_AGENT)
    task = "--dangerously-skip-permissions"
    done = arbor_run(workspace, f"{shlex.join([sys.executable, str(script)])} {template}", task)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("ARGS="))
    args = json.loads(line.removeprefix("ARGS="))
    assert args["dangerously_skip_permissions"] is False
    assert args[field].strip() == task


async def test_a_test_run_gets_none_of_arbors_secrets(git_workspace: Path, leaky_env: None) -> None:
    """run_tests, which the plan executor's run_command, LATS and the workflows' test stages share."""
    run = await run_tests(ChangeSet(git_workspace), shlex.join([sys.executable, "-c", DUMP]), 60)
    assert run.passed, run.output
    env = dumped(run.output)
    assert leaks(env) == []
    assert env["https_proxy"] == "http://proxy.invalid:3128" and env["NO_PROXY"] == "*"


async def test_arbor_pass_env_gives_a_test_run_what_the_user_names(
    git_workspace: Path, leaky_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARBOR_PASS_ENV", "DATABASE_URL")  # the user's test database
    run = await run_tests(ChangeSet(git_workspace), shlex.join([sys.executable, "-c", DUMP]), 60)
    assert leaks(dumped(run.output)) == ["DATABASE_URL"]


def test_an_eval_check_gets_none_of_arbors_secrets_not_even_what_arbor_pass_env_names(
    tmp_path: Path, leaky_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARBOR_PASS_ENV", "OPENAI_API_KEY")
    dump = "import json, os; open('env.json', 'w').write(json.dumps(dict(os.environ)))"
    task = EvalTask.model_construct(id="env", add={}, answer=None, check=["python", "-c", dump])
    assert run_check(task, tmp_path).passed
    assert leaks(json.loads((tmp_path / "env.json").read_text())) == []


async def test_a_language_server_is_started_with_none_of_arbors_secrets(
    tmp_path: Path, leaky_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = LanguageServer(ServerSpec("jedi", ("jedi-language-server",)), tmp_path, LspSettings())
    given: dict[str, Any] = {}

    async def start_io(program: str, *args: str, **kwargs: Any) -> None:
        given.update(kwargs)
        raise OSError("not started")

    monkeypatch.setattr(server.client, "start_io", start_io)
    with pytest.raises(LspError):
        await server.start()
    assert given.get("env") is not None, "the server would inherit Arbor's whole environment"
    assert leaks(given["env"]) == []
    assert given["env"]["PATH"] == os.environ["PATH"]


def test_a_repository_cannot_give_an_agent_pass_env_without_trust(tmp_path: Path, user_config: Any) -> None:
    user_config('[agents.claude]\ncommand = "claude-code-acp"\n')
    workspace = tmp_path / "repo"
    (workspace / ".arbor").mkdir(parents=True)
    (workspace / ".arbor" / "config.toml").write_text(
        '[agents.claude]\ncommand = "claude-code-acp"\npass_env = ["OPENAI_API_KEY", "SSH_AUTH_SOCK"]\n'
        '[agents.helper]\ncommand = "helper"\npass_env = ["GITHUB_TOKEN"]\n'
    )
    resolved = load_settings(workspace, trust=None)
    assert resolved.settings.agents["claude"].pass_env == []
    assert "helper" not in resolved.settings.agents
    held = [item for item in resolved.held_back if item.key == "agents"]
    assert held and "OPENAI_API_KEY" in held[0].describe()  # the trust dialog shows what it would pass
    trusted = load_settings(workspace, trust=True)
    assert trusted.settings.agents["claude"].pass_env == ["OPENAI_API_KEY", "SSH_AUTH_SOCK"]
