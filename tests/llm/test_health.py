"""probe_model: the checks `arbor doctor` prints, against the fake Ollama and for other providers."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.llm import HealthCheck, parse_model_spec, probe_model
from tests.support.fake_ollama import FakeOllama
from tests.support.models import make_settings

Start = Callable[..., FakeOllama]


@pytest.fixture
def extras_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the optional provider packages look absent, whatever this machine has installed."""
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name in ("langchain_openai", "langchain_anthropic"):
            return None
        return real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def by_name(checks: list[HealthCheck]) -> dict[str, HealthCheck]:
    return {check.name: check for check in checks}


async def test_healthy_ollama_model(fake_ollama: Start) -> None:
    server = fake_ollama(models={"qwen2.5-coder:7b": {"tools": True, "context_length": 32768}})
    checks = by_name(
        await probe_model(parse_model_spec("ollama:qwen2.5-coder:7b"), make_settings(server.url))
    )

    assert [
        checks[name].ok for name in ("model server reachable", "model pulled", "model supports tools")
    ] == [
        True,
        True,
        True,
    ]
    assert "16384" in checks["context window"].detail
    assert "32768" in checks["context window"].detail
    assert all(check.fix is None for check in checks.values())


async def test_latest_tag_matches_either_way(fake_ollama: Start) -> None:
    server = fake_ollama(models={"llama3": {}, "mistral:latest": {}})
    settings = make_settings(server.url)
    for text in ("ollama:llama3:latest", "ollama:mistral"):
        checks = by_name(await probe_model(parse_model_spec(text), settings))
        assert checks["model pulled"].ok is True, text


async def test_model_not_pulled_says_pull(fake_ollama: Start) -> None:
    server = fake_ollama(models={"llama3.1:8b": {}})
    checks = by_name(await probe_model(parse_model_spec("ollama:qwen3:8b"), make_settings(server.url)))

    assert checks["model server reachable"].ok is True
    assert checks["model pulled"].ok is False
    assert "llama3.1:8b" in checks["model pulled"].detail
    assert checks["model pulled"].fix is not None
    assert "ollama pull qwen3:8b" in checks["model pulled"].fix
    assert checks["model supports tools"].ok is None


async def test_toolless_model_fails_the_tools_check(fake_ollama: Start) -> None:
    server = fake_ollama(models={"gemma2:2b": {"tools": False}})
    checks = by_name(await probe_model(parse_model_spec("ollama:gemma2:2b"), make_settings(server.url)))
    assert checks["model supports tools"].ok is False
    assert "ARBOR_MODEL" in (checks["model supports tools"].fix or "")


async def test_old_server_without_capabilities_is_skipped_not_failed(fake_ollama: Start) -> None:
    server = fake_ollama(models={"qwen2.5-coder:7b": {"capabilities": False}})
    checks = by_name(
        await probe_model(parse_model_spec("ollama:qwen2.5-coder:7b"), make_settings(server.url))
    )
    assert checks["model supports tools"].ok is None


async def test_refused_connection(dead_url: str) -> None:
    checks = await probe_model(parse_model_spec("ollama:qwen2.5-coder:7b"), make_settings(dead_url))

    assert checks[0].name == "model server reachable"
    assert checks[0].ok is False
    assert dead_url in checks[0].detail
    assert "ollama serve" in (checks[0].fix or "")
    assert [check.ok for check in checks[1:]] == [None, None, None]


async def test_script_file(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"content": "a"}\n// note\n{"content": "b"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "a"}\nnot json\n')
    settings = make_settings()

    [ok] = await probe_model(parse_model_spec(f"scripted:{good}"), settings)
    [broken] = await probe_model(parse_model_spec(f"scripted:{bad}"), settings)
    [missing] = await probe_model(parse_model_spec(f"scripted:{tmp_path / 'none.jsonl'}"), settings)

    assert (ok.ok, ok.detail) == (True, f"2 responses in {good}")
    assert broken.ok is False
    assert f"{bad}:2" in broken.detail
    assert missing.ok is False


@pytest.mark.parametrize(
    ("text", "env", "base_url", "expected"),
    [
        # langchain-openai is a test extra (the OpenAI-compatible simulator); anthropic's stays missing.
        ("openai:gpt-4o", {}, None, {"provider package installed": True, "API key set": False}),
        ("openai:gpt-4o", {"OPENAI_API_KEY": "sk-test"}, None, {"API key set": True}),
        ("openai:local", {}, "http://127.0.0.1:8000/v1", {"API key set": None}),
        (
            "anthropic:claude-sonnet-4-5",
            {},
            None,
            {"provider package installed": False, "API key set": False},
        ),
    ],
)
async def test_hosted_providers(
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    env: dict[str, str],
    base_url: str | None,
    expected: dict[str, Any],
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    checks = by_name(await probe_model(parse_model_spec(text), make_settings(openai_base_url=base_url)))
    for name, ok in expected.items():
        assert checks[name].ok is ok, name
    package = checks["provider package installed"]
    if package.ok is False:
        assert "pip install 'arbor-ide[" in (package.fix or "")
