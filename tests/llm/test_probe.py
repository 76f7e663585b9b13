"""``arbor doctor --probe`` and ``_arbor/model/probe``: one real tool-call request and one structured request
per model tell structured ✓ / recovered from text ⚠ / none ✗, the format, speed and window, and are cached."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ide.llm import ModelRouter
from ide.llm import probe as probing
from ide.llm.probe import ProbeCache, cache_key, probe_all
from ide.protocol import model as md
from tests.support.acp_client import acp_backend
from tests.support.models import make_settings

ANSWER = {"content": '{"language": "Python", "year": 1991}'}
STRUCTURED = {"tool_calls": [{"name": "read_file", "args": {"path": "README.md"}}]}
AS_TEXT = {"content": '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'}
NONE = {"content": "I would read README.md with the read_file tool."}


@pytest.mark.parametrize(
    ("reply", "verdict", "mark"),
    [(STRUCTURED, "structured", "✓"), (AS_TEXT, "recovered", "⚠"), (NONE, "none", "✗")],
)
async def test_the_probe_tells_how_a_model_calls_tools(
    fake_ollama: Any, tmp_path: Path, reply: dict[str, Any], verdict: str, mark: str
) -> None:
    server = fake_ollama([reply, ANSWER])
    router = ModelRouter(make_settings(server.url, num_ctx=8192))
    cache = ProbeCache(tmp_path)
    [result] = await probe_all(router, cache)
    assert result.tool_calls == verdict and result.verdict()[0] == mark
    assert result.json_format == "honoured"
    assert server.chat_bodies[1]["format"]["required"] == ["language", "year"]
    assert result.context_window == 8192
    assert result.first_token_s is not None and result.first_token_s >= 0
    assert "default" in result.roles and "react" in result.roles
    assert cache.read()[cache_key(router, "ollama:qwen2.5-coder:7b")] == result


async def test_an_unreachable_server_is_a_probe_error_with_the_fix(dead_url: str, tmp_path: Path) -> None:
    [result] = await probe_all(ModelRouter(make_settings(dead_url, retry_backoff_s=0)))
    assert result.error and "ollama serve" in result.error
    assert result.verdict()[0] == "✗"


def test_doctor_probe_prints_the_figures_and_fails_without_tool_calls(
    fake_ollama: Any, tmp_path: Path
) -> None:
    for reply, code in ((AS_TEXT, 0), (NONE, 1)):
        server = fake_ollama([reply, ANSWER])
        env = {**os.environ, "OLLAMA_HOST": server.url, "ARBOR_MODEL": "ollama:qwen2.5-coder:7b"}
        done = subprocess.run(
            [sys.executable, "-m", "ide", "doctor", "--probe", "-w", str(tmp_path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        line = next(row for row in done.stdout.splitlines() if "ollama:qwen2.5-coder:7b (default" in row)
        if reply is AS_TEXT:
            assert line.startswith("  [⚠]") and "recovers them" in line and "first token" in line
        else:
            assert line.startswith("  [✗]") and "cannot act" in line
        assert "JSON schema format honoured" in line and "context 16384 tokens" in line
        assert done.returncode == code, done.stdout[-2000:]


async def test_the_window_can_probe_and_read_the_cache_over_acp(fake_ollama: Any, tmp_path: Path) -> None:
    server = fake_ollama([AS_TEXT, ANSWER])
    async with acp_backend({"OLLAMA_HOST": server.url, "ARBOR_MODEL": "ollama:qwen2.5-coder:7b"}) as backend:
        cached = md.ProbeResult.model_validate(
            await backend.conn.ext_method(md.MODEL_PROBES_CACHED, {"cwd": str(tmp_path)})
        )
        assert cached.probes == []
        fresh = md.ProbeResult.model_validate(
            await backend.conn.ext_method(md.MODEL_PROBE, {"cwd": str(tmp_path)})
        )
        assert [p.tool_calls for p in fresh.probes] == ["recovered"]
        again = md.ProbeResult.model_validate(
            await backend.conn.ext_method(md.MODEL_PROBES_CACHED, {"cwd": str(tmp_path)})
        )
        assert again.probes == fresh.probes


async def test_a_probe_is_bounded_in_time_and_says_so(
    fake_ollama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probing, "PROBE_LIMIT_S", 0.5)
    server = fake_ollama([{**STRUCTURED, "first_token_ms": 3000}, ANSWER])  # a model still loading
    router = ModelRouter(make_settings(server.url, num_ctx=8192))
    started = time.monotonic()
    result = await probing.probe(router, "react", ["react"])
    assert time.monotonic() - started < 2.5  # stopped at the bound, not waited out
    assert result.error is not None and result.error.startswith("no answer within 0.5 s")
    assert result.describe().startswith("[✗]")


async def test_a_probe_stops_a_model_that_does_not_stop_answering(fake_ollama: Any) -> None:
    rambling = {"chunks": [f"word{i} " for i in range(probing.PROBE_TOKEN_CAP * 2)]}  # never repeats itself
    server = fake_ollama([rambling, ANSWER])
    router = ModelRouter(make_settings(server.url, num_ctx=8192))
    result = await probing.probe(router, "react", ["react"])
    assert result.error is not None
    assert result.error.startswith(f"the answer went past {probing.PROBE_TOKEN_CAP} tokens without stopping")
    assert result.describe().startswith("[✗]")


CHATML = (
    "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + message.content + "
    "'<|im_end|>\n' -}}\n{%- endfor -%}"
)


@pytest.mark.parametrize(
    ("props", "said"),
    [
        ({"chat_template": CHATML, "bos_token": "<bos>"}, "carries no chat template"),  # llama.cpp's fallback
        ({"chat_template": CHATML, "bos_token": "<|im_start|>"}, None),  # a ChatML model's own template
        (
            {"chat_template": "{{ messages }}", "chat_template_caps": "{'supports_tools': False}"},
            "describes no tools",
        ),
        ({"chat_template": "{{ tools }}", "chat_template_caps": "{'supports_tools': True}"}, None),
        ({"default_generation_settings": {"n_ctx": 8192}}, None),  # no template said: nothing to tell
        ("not json object", None),
    ],
)
def test_the_servers_template_tells_a_base_model_and_a_template_without_tools(
    props: Any, said: str | None
) -> None:
    from ide.llm.window import template_note

    note = template_note(props)
    assert (note is None) if said is None else (note is not None and said in note)
