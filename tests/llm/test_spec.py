"""Model specs: provider:model parsing, and the errors a user gets for a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.llm import ModelError, ModelSpec, parse_model_spec


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        ("ollama:qwen2.5-coder:7b", "ollama", "qwen2.5-coder:7b"),
        ("ollama:llama3", "ollama", "llama3"),
        ("  ollama:llama3.1:8b-instruct-q4_K_M ", "ollama", "llama3.1:8b-instruct-q4_K_M"),
        ("Ollama:llama3", "ollama", "llama3"),
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("scripted:/abs/demo.jsonl", "scripted", "/abs/demo.jsonl"),
    ],
)
def test_specs_split_on_the_first_colon(text: str, provider: str, model: str) -> None:
    spec = parse_model_spec(text)
    assert (spec.provider, spec.model, spec.raw) == (provider, model, text.strip())
    assert str(spec) == f"{provider}:{model}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("qwen2.5-coder:7b", "write ollama:qwen2.5-coder:7b"),
        ("llama3", "write ollama:llama3"),
        ("ollama:", "has no model name"),
        ("openai:  ", "has no model name"),
        ("", "empty"),
        ("gemini:pro", "not a provider"),
    ],
)
def test_bad_specs_say_how_to_write_them(text: str, expected: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_model_spec(text)
    assert caught.value.info.kind == "settings"
    assert expected in str(caught.value)


def test_scripted_relative_paths_resolve_against_the_base_dir(tmp_path: Path) -> None:
    spec = parse_model_spec("scripted:demo/run.jsonl", base_dir=tmp_path)
    assert spec == ModelSpec("scripted", str(tmp_path / "demo" / "run.jsonl"), "scripted:demo/run.jsonl")
    absolute = parse_model_spec(f"scripted:{tmp_path / 'x.jsonl'}", base_dir=Path("/elsewhere"))
    assert absolute.model == str(tmp_path / "x.jsonl")


def test_model_error_text_is_message_then_fix() -> None:
    err = ModelError("model_not_found", "Model x is missing", 'Run "ollama pull x"')
    assert str(err) == 'Model x is missing\nRun "ollama pull x"'
    assert err.info.kind == "model_not_found"
