"""Role routing with fallback, model caching, rate limits and context windows of the router."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ROLES, ContextTier, ModelError, ModelRouter, ModelSpec, ScriptedChatModel
from ide.llm.ollama_chat import ArborChatOllama
from tests.support.models import make_settings

WriteScript = Callable[[list[dict[str, Any]]], Path]
ASK = [HumanMessage("hi")]


def test_every_documented_role_is_routable() -> None:
    expected = {
        "default",
        "react",
        "orchestrator",
        "retrieval",
        "compactor",
        *(f"lats.{p}" for p in ("selection", "expansion", "evaluation", "backprop")),
        *(f"tot.{a}" for a in ("coordinator", "planner", "researcher", "analyzer", "critic", "synthesizer")),
        *(f"plan.{r}" for r in ("planner", "executor", "replanner")),
    }
    assert set(ROLES) == expected
    router = ModelRouter(make_settings())
    assert {router.spec_for(role).raw for role in ROLES} == {"ollama:qwen2.5-coder:7b"}


def test_roles_use_their_own_setting_and_fall_back_to_the_default() -> None:
    settings = make_settings(model="ollama:llama3.1:8b")
    settings.llm.orchestrator = "ollama:qwen3:4b"
    settings.llm.lats.expansion = "openai:gpt-4o-mini"
    settings.llm.tot.critic = "anthropic:claude-sonnet-4-5"
    settings.llm.plan.executor = "scripted:exec.jsonl"
    router = ModelRouter(settings, base_dir=Path("/ws"))

    assert router.spec_for("orchestrator") == ModelSpec("ollama", "qwen3:4b", "ollama:qwen3:4b")
    assert router.spec_for("lats.expansion").raw == "openai:gpt-4o-mini"
    assert router.spec_for("tot.critic").provider == "anthropic"
    assert router.spec_for("plan.executor").model == "/ws/exec.jsonl"
    for role in ("default", "react", "retrieval", "lats.selection", "tot.planner", "plan.planner"):
        assert router.spec_for(role).raw == "ollama:llama3.1:8b", role


def test_unknown_role_lists_the_known_ones() -> None:
    with pytest.raises(ModelError) as caught:
        ModelRouter(make_settings()).spec_for("lats.expand")
    assert "lats.expansion" in (caught.value.info.fix or "")


def test_bad_role_setting_is_a_model_error_where_the_spec_itself_is_asked_for() -> None:
    settings = make_settings()
    settings.llm.retrieval = "qwen3:4b"
    router = ModelRouter(settings)
    with pytest.raises(ModelError, match="ollama:qwen3:4b"):
        router.spec_for("retrieval", fallback=False)
    # A run's router uses the default instead (tests/llm/test_fallback.py).
    assert router.spec_for("retrieval").raw == settings.llm.model


def test_ollama_models_are_built_with_explicit_num_ctx_and_cached_per_spec() -> None:
    settings = make_settings("http://127.0.0.1:9", num_ctx=12288, temperature=0.0, reasoning=False)
    settings.llm.request_timeout_s = 42
    settings.llm.first_token_timeout_s = 30
    router = ModelRouter(settings)

    model = router.chat_model("react")

    assert isinstance(model, ArborChatOllama)
    assert (model.model, model.num_ctx, model.temperature, model.reasoning) == (
        "qwen2.5-coder:7b",
        12288,
        0.0,
        False,
    )
    assert model.base_url == "http://127.0.0.1:9"
    timeout = (model.client_kwargs or {})["timeout"]
    assert (timeout.read, timeout.connect) == (42, 10)  # the longer of the first-token and idle limits
    assert router.chat_model("lats.evaluation") is model


def test_scripted_roles_share_one_cursor(write_script: WriteScript) -> None:
    script = write_script([{"content": "x"}])
    router = ModelRouter(make_settings(model=f"scripted:{script}"))
    react, critic = router.chat_model("react"), router.chat_model("tot.critic")
    assert isinstance(react, ScriptedChatModel)
    assert isinstance(critic, ScriptedChatModel)
    assert (react.role, critic.role) == ("react", "tot.critic")
    assert react.script is critic.script


async def test_rate_limit_spaces_call_starts(write_script: WriteScript) -> None:
    script = write_script([{"content": str(i)} for i in range(3)])
    router = ModelRouter(make_settings(model=f"scripted:{script}", rate_limit_per_minute={"scripted": 600}))

    started = time.perf_counter()
    replies = await asyncio.gather(*(router.stream("react", ASK) for _ in range(3)))

    assert sorted(reply.content for reply in replies) == ["0", "1", "2"]
    assert time.perf_counter() - started >= 0.2, "600/min is one call per 0.1 s"


@pytest.mark.parametrize(("limit", "answering"), [(1, 1), (4, 4)])
async def test_scripted_calls_share_the_concurrency_limit(
    write_script: WriteScript, limit: int, answering: int
) -> None:
    script = write_script([{"content": "a", "latency_ms": 3_600_000} for _ in range(4)])
    router = ModelRouter(make_settings(model=f"scripted:{script}", concurrency={"scripted": limit}))
    model = router.chat_model("react")
    assert isinstance(model, ScriptedChatModel)

    roles = ("react", "tot.critic", "lats.expansion", "retrieval")
    calls = [asyncio.create_task(router.stream(role, ASK)) for role in roles]
    # Loop turns, not time: a call through the gate takes its script line within a few (all four do at
    # limit 4), and none of the hour-long answers comes meanwhile. The lines taken are the calls the
    # model is answering at once.
    for _ in range(100):
        await asyncio.sleep(0)
    assert model.script.consumed == answering
    for call in calls:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)


async def test_context_windows_of_non_ollama_providers(tmp_path: Path) -> None:
    settings = make_settings(model="scripted:s.jsonl", num_ctx=65536)
    settings.llm.orchestrator = "openai:gpt-4o-mini"
    settings.llm.retrieval = "anthropic:claude-sonnet-4-5"
    settings.llm.lats.expansion = "openai:some-local-model"
    router = ModelRouter(settings, base_dir=tmp_path)

    assert await router.context_window("react") == 65536
    assert await router.context_tier("react") is ContextTier.MEDIUM
    assert await router.context_window("orchestrator") == 128_000
    assert await router.context_window("retrieval") == 200_000
    assert await router.context_tier("retrieval") is ContextTier.LARGE
    # No published window and no server to ask: llm.num_ctx, said (never a hosted model's 128k).
    assert await router.context_window("lats.expansion") == 65536
    assert "assuming llm.num_ctx" in (await router.window("lats.expansion")).source


async def test_usage_snapshot_is_a_copy(write_script: WriteScript) -> None:
    script = write_script([{"content": "hello world", "latency_ms": 10}])
    router = ModelRouter(make_settings(model=f"scripted:{script}"))
    assert router.usage_snapshot() == {}

    await router.stream("orchestrator", ASK)
    snapshot = router.usage_snapshot()
    snapshot["orchestrator"].calls = 99

    usage = router.usage_snapshot()["orchestrator"]
    assert usage.calls == 1
    assert usage.model == f"scripted:{script}"
    assert usage.output_tokens == len("hello world") // 4
    assert usage.latency_ms >= 10


def test_only_an_ollama_session_loads_the_ollama_client_and_only_its_model_is_asked_to_fold_thinking(
    write_script: WriteScript,
) -> None:
    """langchain_ollama and the ollama package (0.3 s of import) load when an Ollama model is built, not
    with the router; the fold-thinking keyword still goes to that model and to no other."""
    import subprocess
    import sys

    script = write_script([{"content": "x"}])
    code = f"""
import sys
from ide.llm import ModelRouter
from ide.llm.providers import stream_keywords
from tests.support.models import make_settings

def loaded():
    return sorted({{name.split(".")[0] for name in sys.modules}} & {{"langchain_ollama", "ollama"}})

scripted = ModelRouter(make_settings(model="scripted:{script}")).chat_model("react")
print(loaded(), stream_keywords(scripted))
ollama = ModelRouter(make_settings("http://127.0.0.1:9")).chat_model("react")
print(loaded(), stream_keywords(ollama), stream_keywords(scripted), type(ollama).__name__)
"""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[] {}",
        "['langchain_ollama', 'ollama'] {'fold_thinking': True} {} ArborChatOllama",
    ], out.stdout
