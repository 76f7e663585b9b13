"""A phase model that cannot be used falls back to the default model, said once; the default's own failure
still fails the call; and a real ``arbor run --mode lats`` completes on the default, naming the role."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelError, ModelRouter
from ide.settings import Settings
from tests.support.fake_ollama import FakeOllama
from tests.support.models import MODEL, make_settings

WriteScript = Callable[[list[dict[str, Any]]], Path]
ASK = [HumanMessage("hi")]
ROLE = "lats.evaluation"


def scripted_router(script: Path, **llm: Any) -> tuple[ModelRouter, list[str]]:
    """A router whose default model is ``scripted:script``, and the notices it gives the user."""
    settings = Settings.model_validate({"llm": {"model": f"scripted:{script}", **llm}})
    router = ModelRouter(settings)
    notices: list[str] = []
    router.on_notice = notices.append
    return router, notices


async def test_an_unusable_provider_falls_back_to_the_default_and_says_so_once(
    write_script: WriteScript, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    script = write_script([{"role": ROLE, "content": "first"}, {"role": ROLE, "content": "second"}])
    router, notices = scripted_router(script, lats={"evaluation": "anthropic:claude-sonnet-4"})

    assert (await router.stream(ROLE, ASK)).text == "first"
    assert (await router.stream(ROLE, ASK)).text == "second"

    assert len(notices) == 1
    assert "lats.evaluation" in notices[0] and "anthropic:claude-sonnet-4" in notices[0]
    assert f"scripted:{script}" in notices[0]
    usage = router.usage_snapshot()[ROLE]
    assert usage.calls == 2 and usage.model == f"scripted:{script}"
    assert usage.fallback_from == "anthropic:claude-sonnet-4"
    assert "anthropic" in (usage.fallback_reason or "")
    assert router.spec_for(ROLE).raw == f"scripted:{script}"
    assert router.spec_for("lats.expansion").raw == f"scripted:{script}"


async def test_an_unreachable_phase_model_falls_back(write_script: WriteScript, dead_url: str) -> None:
    script = write_script([{"content": "from the default"}])
    router, notices = scripted_router(script, ollama_host=dead_url, lats={"evaluation": f"ollama:{MODEL}"})

    reply = await router.stream(ROLE, ASK)

    assert reply.text == "from the default"
    assert len(notices) == 1 and "not reachable" in notices[0]
    assert router.fallbacks[ROLE].reason.kind == "model_unreachable"
    assert router.usage_snapshot()[ROLE].fallback_from == f"ollama:{MODEL}"


async def test_a_phase_model_the_server_lacks_falls_back_to_the_default_on_it(
    fake_ollama: Callable[..., FakeOllama],
) -> None:
    server = fake_ollama([{"content": "default answers"}], models={MODEL: {}})
    settings = make_settings(server.url)
    settings.llm.tot.critic = "ollama:missing:1b"
    router = ModelRouter(settings)
    thoughts: list[tuple[str, str]] = []

    reply = await router.stream("tot.critic", ASK, on_chunk=lambda kind, text: thoughts.append((kind, text)))

    assert reply.text == "default answers"
    assert [body["model"] for body in server.chat_bodies] == ["missing:1b", MODEL]
    # Without on_notice the warning reaches the call's own stream as a thought.
    assert thoughts[0][0] == "thought" and "tot.critic" in thoughts[0][1] and "not pulled" in thoughts[0][1]
    assert router.fallbacks["tot.critic"].reason.kind == "model_not_found"


async def test_a_bad_spec_falls_back(write_script: WriteScript) -> None:
    script = write_script([{"content": "ok"}])
    router, notices = scripted_router(script, plan={"planner": "gpt-4o-mini"})
    assert (await router.stream("plan.planner", ASK)).text == "ok"
    assert len(notices) == 1 and "gpt-4o-mini" in notices[0]
    assert router.fallbacks["plan.planner"].reason.kind == "settings"


async def test_a_bad_spec_asked_for_by_name_falls_back_and_is_told_at_the_next_call(
    write_script: WriteScript,
) -> None:
    script = write_script([{"content": "ok"}])
    router, notices = scripted_router(script, lats={"expansion": "gpt-4o-mini"})
    with pytest.raises(ModelError) as caught:
        router.spec_for("lats.expansion", fallback=False)  # doctor and probes see the bad spec itself
    assert caught.value.kind == "settings"

    assert router.spec_for("lats.expansion").raw == f"scripted:{script}"  # a search names its model first
    assert notices == []
    assert (await router.stream("lats.selection", ASK)).text == "ok"
    assert len(notices) == 1 and "lats.expansion" in notices[0] and "gpt-4o-mini" in notices[0]


async def test_the_run_fails_with_the_defaults_error_when_the_default_fails_too(
    dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(dead_url)
    settings.llm.lats.evaluation = "anthropic:claude-sonnet-4"
    router = ModelRouter(settings)
    notices: list[str] = []
    router.on_notice = notices.append

    with pytest.raises(ModelError) as caught:
        await router.stream(ROLE, ASK)

    assert caught.value.kind == "model_unreachable" and dead_url in caught.value.info.message
    assert len(notices) == 1  # it did try the default, and said so


async def test_the_default_role_itself_does_not_fall_back(dead_url: str) -> None:
    router = ModelRouter(make_settings(dead_url))
    with pytest.raises(ModelError) as caught:
        await router.stream("lats.expansion", ASK)
    assert caught.value.kind == "model_unreachable" and router.fallbacks == {}


async def test_a_probe_of_the_phase_model_does_not_fall_back(
    write_script: WriteScript, dead_url: str
) -> None:
    script = write_script([{"content": "must not be used"}])
    router, notices = scripted_router(script, ollama_host=dead_url, lats={"evaluation": f"ollama:{MODEL}"})
    with pytest.raises(ModelError) as caught:
        await router.stream(ROLE, ASK, fallback=False)
    assert caught.value.kind == "model_unreachable" and notices == [] and router.fallbacks == {}


def test_a_lats_run_completes_on_the_default_and_names_the_role_that_fell_back(
    git_workspace: Path, write_script: WriteScript
) -> None:
    script = write_script(
        [
            {"role": "lats.expansion", "content": "greet() returns Hello, NAME!"},
            {"role": ROLE, "content": '{"score": 9, "reflection": "right", "is_solution": true}'},
        ]
    )
    env = {key: value for key, value in os.environ.items() if key != "OPENAI_API_KEY"}
    env.update(
        ARBOR_MODEL=f"scripted:{script}",
        ARBOR_LATS_EVALUATION_MODEL="openai:gpt-4o-mini",
        ARBOR_LATS_EXPANSION_MODEL="gpt-4o-mini",
        ARBOR_LATS_EXPANSION_WIDTH="1",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ide",
            "run",
            "--mode",
            "lats",
            "-w",
            str(git_workspace),
            "what does greet return?",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "greet() returns Hello, NAME!"
    warning = [line for line in done.stderr.splitlines() if "cannot be used" in line]
    assert len(warning) == 2
    expansion, evaluation = sorted(warning, key=lambda line: "lats.evaluation" in line)
    assert "The lats.expansion model gpt-4o-mini" in expansion and "names no provider" in expansion
    assert "The lats.evaluation model openai:gpt-4o-mini" in evaluation and "OPENAI_API_KEY" in evaluation
    assert all(f"default model scripted:{script}" in line for line in warning)
