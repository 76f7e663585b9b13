"""Settings precedence (defaults < user < workspace < environment) and errors that say where and what."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.settings import SETTING_KEYS, SettingsError, load_settings

USER = '[llm]\nmodel = "ollama:user-model"\nnum_ctx = 4096\n\n[lats]\nmax_depth = 3\nbeam_width = 2\n'
WORKSPACE = '[llm]\nmodel = "ollama:ws-model"\n\n[lats]\nmax_depth = 4\n'


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "user.toml"
    user.write_text(USER)
    workspace = tmp_path / "ws"
    (workspace / ".arbor").mkdir(parents=True)
    (workspace / ".arbor" / "config.toml").write_text(WORKSPACE)
    return user, workspace


@pytest.mark.parametrize(
    ("key", "env", "expected", "source"),
    [
        ("llm.model", {}, "ollama:ws-model", "ws/.arbor/config.toml:2"),
        ("llm.model", {"ARBOR_MODEL": "scripted:x.jsonl"}, "scripted:x.jsonl", "env ARBOR_MODEL"),
        ("llm.num_ctx", {}, 4096, "user.toml:3"),
        ("lats.max_depth", {}, 4, "ws/.arbor/config.toml:5"),
        ("lats.max_depth", {"ARBOR_LATS_MAX_DEPTH": "6"}, 6, "env ARBOR_LATS_MAX_DEPTH"),
        ("lats.beam_width", {}, 2, "user.toml:7"),
        ("lats.max_iterations", {}, 10, "default"),
        ("agent.architecture", {"ARBOR_AGENT_ARCHITECTURE": "lats"}, "lats", "env ARBOR_AGENT_ARCHITECTURE"),
        (
            "llm.lats.expansion",
            {"ARBOR_LATS_EXPANSION_MODEL": "ollama:big"},
            "ollama:big",
            "env ARBOR_LATS_EXPANSION_MODEL",
        ),
        ("llm.lats.selection", {}, None, "default"),
        ("llm.ollama_host", {"OLLAMA_HOST": "0.0.0.0:11500"}, "http://localhost:11500", "env OLLAMA_HOST"),
        (
            "llm.ollama_host",
            {"OLLAMA_HOST": "h1:1", "ARBOR_OLLAMA_HOST": "http://h2:2"},
            "http://h2:2",
            "env ARBOR_OLLAMA_HOST",
        ),
        ("llm.reasoning", {"ARBOR_LLM_REASONING": "true"}, True, "env ARBOR_LLM_REASONING"),
        (
            "workspace.exclude",
            {"ARBOR_WORKSPACE_EXCLUDE": "a/, b/"},
            ["a/", "b/"],
            "env ARBOR_WORKSPACE_EXCLUDE",
        ),
    ],
)
def test_precedence(layers: tuple[Path, Path], key: str, env: dict, expected: object, source: str) -> None:
    user, workspace = layers
    resolved = load_settings(workspace, environ=env, user_config=user)
    rows = {k: (v, s) for k, v, s in resolved.rows()}
    value, where = rows[key]
    assert value == expected
    if source == "default":
        assert where == "default"
    else:
        assert where.endswith(source.replace("ws/", f"{workspace.name}/")) or where == source


def test_tables_merge_key_by_key(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("[llm.concurrency]\nollama = 1\n")
    resolved = load_settings(None, environ={"ARBOR_LLM_CONCURRENCY": "openai=3"}, user_config=user)
    assert resolved.settings.llm.concurrency["ollama"] == 1
    assert resolved.settings.llm.concurrency["openai"] == 3
    assert resolved.settings.llm.concurrency["scripted"] == 8


@pytest.mark.parametrize(
    ("toml", "env", "fragments"),
    [
        ('[lats]\nmax_depth = "deep"\n', {}, ["user.toml:2", "lats.max_depth", "int"]),
        ("[lats]\nmax_dept = 3\n", {}, ["user.toml:2", "unknown setting 'lats.max_dept'", "lats.max_depth"]),
        ("[llm\nmodel = 1\n", {}, ["user.toml", "not valid TOML"]),
        ("", {"ARBOR_LATS_MAX_DEPTH": "deep"}, ["ARBOR_LATS_MAX_DEPTH", "lats.max_depth", "int"]),
        (
            "",
            {"ARBOR_AGENT_ARCHITECTURE": "mcts"},
            ["ARBOR_AGENT_ARCHITECTURE", "agent.architecture", "react"],
        ),
        (
            "",
            {"ARBOR_LATS_MAX_DEPTH": "0"},
            ["ARBOR_LATS_MAX_DEPTH", "lats.max_depth", "greater than or equal to 1"],
        ),
        ("[agent]\nmax_steps = true\n", {}, ["user.toml:2", "agent.max_steps"]),
    ],
)
def test_bad_values_name_place_key_and_type(
    tmp_path: Path, toml: str, env: dict, fragments: list[str]
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(toml)
    with pytest.raises(SettingsError) as caught:
        load_settings(None, environ=env, user_config=user)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_every_setting_has_an_environment_variable() -> None:
    names = [name for leaf in SETTING_KEYS.values() for name in leaf.env]
    assert len(names) == len(set(names))
    assert all(name.startswith(("ARBOR_", "OLLAMA_")) for name in names)
    assert SETTING_KEYS["llm.model"].env == ("ARBOR_MODEL",)
