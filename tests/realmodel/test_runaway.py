"""A real base model rambles: Gemma 3 270M (no chat template) loops on a coding request. The loop is stopped
and said (or, on a machine too busy to reach the loop's judgement, cut at the cap and said), and the call's
usage is counted."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelRouter
from ide.llm.router import STOPPED_KEY
from tests.support.models import make_settings
from tests.support.realmodel import RealServer


async def test_the_real_models_loop_is_stopped_and_said(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    # The cap bounds the test on a busy machine; on an idle one the loop is cut long before it.
    settings = make_settings(model=f"openai:{real_server.model}", temperature=0.0, max_answer_tokens=300)
    settings.llm.openai_base_url = real_server.url
    router = ModelRouter(settings)
    thoughts: list[str] = []
    message = await router.stream(
        "react",
        [HumanMessage("change the greeting in app.py to hello")],
        on_chunk=lambda kind, text: thoughts.append(text) if kind == "thought" else None,
    )
    assert message.response_metadata[STOPPED_KEY] in ("repetition", "max_answer_tokens")
    assert any(note.startswith("⚠") for note in thoughts)
    assert router.usage_snapshot()["react"].calls == 1
