"""Runaway answers are bounded and said: every call carries llm.max_answer_tokens, an answer the server cut
there says so, and a stream that loops is stopped (the server stops generating) and says so."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from ide.llm import ModelRouter
from ide.llm.router import STOPPED_KEY
from tests.support.fake_openai import FakeOpenAI
from tests.support.models import make_settings

LOOP = "change the greeting in app.py to hello<|im_end|>\n<|im_start|>user\n" * 300
PROSE = " ".join(f"Step {n}: read module {n}, note what it exports and where it is used." for n in range(200))


def router_for(server: FakeOpenAI, **llm: object) -> ModelRouter:
    settings = make_settings(model="openai:local-model", context_window=32768, **llm)
    settings.llm.openai_base_url = server.url
    return ModelRouter(settings)


async def stream(router: ModelRouter) -> tuple[str, list[str], dict[str, object]]:
    shown: list[str] = []
    thoughts: list[str] = []

    def on_chunk(kind: str, text: str) -> None:
        (thoughts if kind == "thought" else shown).append(text)

    asked = [HumanMessage("change the greeting in app.py to hello")]
    message = await router.stream("react", asked, on_chunk=on_chunk)
    return "".join(shown), thoughts, message.response_metadata


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


async def test_a_looping_answer_is_stopped_and_said() -> None:
    with FakeOpenAI([{"content": LOOP}], model="local-model") as server:
        shown, thoughts, meta = await stream(router_for(server))
        assert server.bodies[0]["max_completion_tokens"] == 4096
    assert len(shown) < len(LOOP) / 3  # cut soon after the loop began, not at the token cap
    assert meta[STOPPED_KEY] == "repetition"
    assert thoughts == ["⚠ Arbor stopped this answer: the model kept repeating itself."]


async def test_an_answer_the_server_cut_at_the_cap_says_so() -> None:
    with FakeOpenAI([{"content": PROSE}], model="local-model") as server:
        shown, thoughts, meta = await stream(router_for(server, max_answer_tokens=100))
        assert server.bodies[0]["max_completion_tokens"] == 100
    assert len(shown) <= 400 and meta[STOPPED_KEY] == "max_answer_tokens"
    assert thoughts == ["⚠ The answer reached llm.max_answer_tokens (100 tokens) and was cut there."]


async def test_long_varied_prose_is_not_taken_for_a_loop() -> None:
    with FakeOpenAI([{"content": PROSE}], model="local-model") as server:
        shown, thoughts, meta = await stream(router_for(server))
    assert shown == PROSE and thoughts == [] and meta[STOPPED_KEY] is None
