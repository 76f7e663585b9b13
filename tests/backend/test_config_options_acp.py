"""Session config options (mode, model, workflow) and auth methods of a real `arbor acp`, driven by the ACP
SDK's own client: listed on session/new and session/load, set with session/set_config_option (the next
turn really uses the model picked), told with config_option_update (also after session/set_mode and
/workflow NAME), unknown options and values refused; auth methods per provider and authenticate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ConfigOptionUpdate

from tests.support.acp_client import acp_backend

MODES = ["react", "lats", "tot", "plan", "workflow", "auto"]


def _by_id(options: Any) -> dict[str, Any]:
    return {option.id: option for option in options or []}


def _values(option: Any) -> list[str]:
    return [choice.value for choice in option.options]


def _updates(backend: Any) -> list[dict[str, str]]:
    """Each config_option_update as {option id: current value}, in arrival order."""
    return [
        {o.id: o.current_value for o in update.config_options}
        for _, update in backend.client.updates
        if isinstance(update, ConfigOptionUpdate)
    ]


async def test_options_are_listed_on_new_and_load_and_set_with_an_update(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    model = f"scripted:{write_script([{'content': 'a'}])}"
    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        new = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        options = _by_id(new.config_options)
        assert list(options) == ["mode", "model", "workflow"]
        assert _values(options["mode"]) == MODES and options["mode"].current_value == "react"
        assert options["mode"].category == "mode" and options["model"].category == "model"
        assert _values(options["model"]) == [model] and options["model"].current_value == model
        workflows = _values(options["workflow"])
        assert workflows[0] == "auto" and {"bugfix", "refactor"} <= set(workflows)
        assert new.modes is not None and new.modes.current_mode_id == "react"  # the legacy modes stay

        sid = new.session_id
        answer = await backend.conn.set_config_option(config_id="mode", session_id=sid, value="plan")
        assert _by_id(answer.config_options)["mode"].current_value == "plan"
        await backend.client.wait_until(lambda: len(_updates(backend)) == 1)
        assert _updates(backend)[-1]["mode"] == "plan"
        assert "current_mode_update" in backend.client.kinds()  # for clients that only know modes

        answer = await backend.conn.set_config_option(config_id="workflow", session_id=sid, value="bugfix")
        after = _by_id(answer.config_options)
        assert after["workflow"].current_value == "bugfix" and after["mode"].current_value == "workflow"
        await backend.client.wait_until(lambda: len(_updates(backend)) == 2)
        assert _updates(backend)[-1] == {"mode": "workflow", "model": model, "workflow": "bugfix"}

    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        loaded = await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
        options = _by_id(loaded.config_options)
        assert list(options) == ["mode", "model", "workflow"]
        assert options["mode"].current_value == "workflow"  # kept in the session store
        assert options["workflow"].current_value == "bugfix"  # and so is the workflow picked
        assert loaded.modes is not None and loaded.modes.current_mode_id == "workflow"


@pytest.mark.parametrize(
    ("config_id", "value", "said"),
    [
        ("temperature", "hot", "there is no option 'temperature'; options: mode, model, workflow"),
        ("mode", "fast", "'fast' is not a value of mode; values: react, lats, tot, plan, workflow, auto"),
        ("workflow", "nope", "'nope' is not a value of workflow"),
        ("model", "ollama:not-configured", "'ollama:not-configured' is not a value of model"),
    ],
)
async def test_an_unknown_option_or_value_is_refused_with_a_plain_message(
    git_workspace: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    config_id: str,
    value: str,
    said: str,
) -> None:
    model = f"scripted:{write_script([{'content': 'a'}])}"
    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as refused:
            await backend.conn.set_config_option(config_id=config_id, session_id=sid, value=value)
        loaded = await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
    assert refused.value.code == -32602  # Invalid params
    assert said in refused.value.data["message"]
    assert _updates(backend) == []
    assert _by_id(loaded.config_options)["mode"].current_value == "react"


async def test_set_mode_also_tells_the_config_options(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    model = f"scripted:{write_script([{'content': 'a'}])}"
    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await backend.conn.set_session_mode(session_id=sid, mode_id="tot")
        await backend.client.wait_until(lambda: len(_updates(backend)) == 1)
    assert _updates(backend) == [{"mode": "tot", "model": model, "workflow": "auto"}]


async def test_workflow_command_tells_the_config_options(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    model = f"scripted:{write_script([{'content': 'a'}])}"
    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/workflow refactor")])
    assert _updates(backend) == [{"mode": "workflow", "model": model, "workflow": "refactor"}]


async def test_the_model_picked_answers_the_next_turn_and_stays_with_the_session(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    first = f"scripted:{write_script([{'content': 'from the first model'}])}"
    second = f"scripted:{write_script([{'content': 'from the second model'}] * 2)}"
    env = {"ARBOR_MODEL": first, "ARBOR_ORCHESTRATOR_MODEL": second}
    async with acp_backend(env) as backend:
        new = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        assert _values(_by_id(new.config_options)["model"]) == [first, second]
        sid = new.session_id
        answer = await backend.conn.set_config_option(config_id="model", session_id=sid, value=second)
        assert _by_id(answer.config_options)["model"].current_value == second
        await backend.conn.prompt(session_id=sid, prompt=[text_block("hello")])
    assert backend.client.text() == "from the second model"
    assert _updates(backend)[0]["model"] == second

    async with acp_backend(env) as backend:  # a restart: the session is loaded with the model it had
        loaded = await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
        assert _by_id(loaded.config_options)["model"].current_value == second
        before = len(backend.client.text())  # the replayed turn
        await backend.conn.prompt(session_id=sid, prompt=[text_block("hello")])
    assert backend.client.text()[before:] == "from the second model"

    async with acp_backend({"ARBOR_MODEL": first}) as backend:  # the settings no longer name it
        loaded = await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
        assert _by_id(loaded.config_options)["model"].current_value == first
        before = len(backend.client.text())
        await backend.conn.prompt(session_id=sid, prompt=[text_block("hello")])
        said = backend.client.text("agent_thought_chunk")
    assert backend.client.text()[before:] == "from the first model"
    assert f"This session ran on {second}, which the settings no longer name: it goes on with {first}." in (
        said
    )


@pytest.mark.parametrize(
    ("model", "methods"),
    [
        ("openai:gpt-4o-mini", [("openai-api-key", "OPENAI_API_KEY")]),
        ("anthropic:claude-sonnet-4-5", [("anthropic-api-key", "ANTHROPIC_API_KEY")]),
        ("ollama:qwen3:8b", []),
        ("scripted:script.jsonl", []),
    ],
)
async def test_auth_methods_fit_the_provider(model: str, methods: list[tuple[str, str]]) -> None:
    async with acp_backend({"ARBOR_MODEL": model}) as backend:
        offered = backend.init.auth_methods or []
    assert [(m.id, m.vars[0].name) for m in offered] == methods
    assert all(m.type == "env_var" for m in offered)


async def test_authenticate_checks_the_variable_in_the_backends_environment() -> None:
    async with acp_backend(
        {"ARBOR_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": "k"}
    ) as backend:
        assert await backend.conn.authenticate(method_id="anthropic-api-key") is not None
        with pytest.raises(RequestError) as unknown:
            await backend.conn.authenticate(method_id="openai-api-key")
    assert unknown.value.code == -32602
    assert (
        "there is no auth method 'openai-api-key'; methods: anthropic-api-key"
        in unknown.value.data["message"]
    )

    async with acp_backend(
        {"ARBOR_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": ""}
    ) as backend:
        with pytest.raises(RequestError) as refused:
            await backend.conn.authenticate(method_id="anthropic-api-key")
    assert refused.value.code == -32000  # Authentication required
    assert refused.value.data["message"].startswith("ANTHROPIC_API_KEY is not set in Arbor's environment")
