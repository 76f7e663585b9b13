"""``_arbor/model/health`` (``ide/backend/extensions/model.py``) answered in process: the default model's
server, the model pulled, tool support — no generation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ide.protocol.model import MODEL_HEALTH, ModelHealth
from tests.support.fake_ollama import FakeOllama
from tests.support.inprocess import inprocess_backend
from tests.support.net import closed_port


async def health(env: dict[str, str], workspace: Path) -> ModelHealth:
    async with inprocess_backend(env) as backend:
        answer = await backend.conn.ext_method(MODEL_HEALTH, {"cwd": str(workspace)})
    return ModelHealth.model_validate(answer)


async def test_a_scripted_model_is_healthy(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([{"content": "hi"}])
    result = await health({"ARBOR_MODEL": f"scripted:{script}"}, git_workspace)
    assert result.level == "ok" and result.reason == ""
    assert result.model == f"scripted:{script}"
    assert [line.name for line in result.checks] == ["script file"]


async def test_a_missing_script_is_an_error_with_the_fix(git_workspace: Path, tmp_path: Path) -> None:
    result = await health({"ARBOR_MODEL": f"scripted:{tmp_path / 'gone.jsonl'}"}, git_workspace)
    assert result.level == "error"
    assert "gone.jsonl" in result.reason and result.fix


async def test_an_unreachable_ollama_is_an_error(git_workspace: Path) -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    result = await health({"ARBOR_MODEL": "ollama:x", "OLLAMA_HOST": host}, git_workspace)
    assert result.level == "error"
    assert f"Ollama is not reachable at {host}" in result.reason
    assert result.fix is not None and "ollama serve" in result.fix
    assert result.available is None
    assert "✗ model server reachable" in result.describe()


async def test_a_model_not_pulled_is_an_error_and_no_tools_a_warning(git_workspace: Path) -> None:
    models = {"qwen2.5-coder:7b": {"tools": True}, "plain:1b": {"tools": False}}
    with FakeOllama(models=models) as server:
        missing = await health({"ARBOR_MODEL": "ollama:llama3", "OLLAMA_HOST": server.url}, git_workspace)
        no_tools = await health({"ARBOR_MODEL": "ollama:plain:1b", "OLLAMA_HOST": server.url}, git_workspace)
        good = await health(
            {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}, git_workspace
        )
        assert server.chat_bodies == []  # a health check generates nothing
    assert missing.level == "error" and '"llama3" is not pulled' in missing.reason
    assert missing.fix is not None and "ollama pull llama3" in missing.fix
    assert no_tools.level == "warning" and "cannot call tools" in no_tools.reason
    assert good.level == "ok"
    assert good.available == missing.available == ["qwen2.5-coder:7b", "plain:1b"]  # the start page's list
