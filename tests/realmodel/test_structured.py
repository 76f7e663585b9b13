"""What the real llama-server does with Arbor's requests for structure: a JSON schema is honoured through the
server's grammar (``response_format`` json_schema, Arbor's own structured path), and with a chat template
that describes tools, ``tool_choice: "required"`` holds the answer to ending in a call to the offered tool
(llama.cpp's grammar lets text come first, so a base model may still ramble to the cap)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from ide.llm import ModelRouter
from ide.search.base import ask_structured
from tests.support.models import make_settings
from tests.support.realmodel import TOOLS_TEMPLATE, RealServer, llama_server


class Verdict(BaseModel):
    done: bool
    risk: Literal["low", "medium", "high"]
    score: int = Field(ge=0, le=9)


@tool
def set_greeting(text: str) -> str:
    """Set the greeting app.py prints."""
    return text


def router_for(server: RealServer, monkeypatch: pytest.MonkeyPatch) -> ModelRouter:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    settings = make_settings(model=f"openai:{server.model}", temperature=0.0, max_answer_tokens=96)
    settings.llm.openai_base_url = server.url
    return ModelRouter(settings)


async def test_a_json_schema_is_honoured_through_the_servers_grammar(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    router = router_for(real_server, monkeypatch)
    ask = [HumanMessage("Is changing the greeting in app.py to hello done, how risky is it, and a score?")]
    verdict, reply = await ask_structured(router, "lats.evaluation", ask, Verdict)

    assert isinstance(verdict, Verdict)
    assert Verdict.model_validate_json(reply.text) == verdict  # the reply is the JSON itself, nothing else
    assert router.usage_snapshot()["lats.evaluation"].calls == 1  # no repair was needed
    assert str(router.spec_for("lats.evaluation")) not in router.format_refused


@pytest.fixture(scope="module")
def tool_server(
    real_build: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealServer]:
    template = tmp_path_factory.mktemp("template") / "tools.jinja"
    template.write_text(TOOLS_TEMPLATE)
    with llama_server(*real_build, context=2048, template=template) as server:
        yield server


async def test_tool_choice_required_lets_the_answer_end_only_in_a_call_to_the_offered_tool(
    tool_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    router = router_for(tool_server, monkeypatch)
    model = router.chat_model("react")
    ask = [HumanMessage("change the greeting in app.py to hello")]
    plain = await model.bind(max_tokens=1).ainvoke(ask)
    forced = model.bind_tools([set_greeting], tool_choice="required", parallel_tool_calls=False)
    reply = await forced.ainvoke(ask)

    assert reply.usage_metadata is not None and plain.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] > plain.usage_metadata["input_tokens"] + 30  # tools described
    # llama.cpp's grammar for "required" still allows text before the call: a base model may ramble to the
    # cap first. What it never allows is an answer that ends without the call.
    finish = reply.response_metadata["finish_reason"]
    assert finish in ("tool_calls", "length"), reply
    if finish == "tool_calls":
        assert [call["name"] for call in reply.tool_calls] == ["set_greeting"]
        assert isinstance(reply.tool_calls[0]["args"].get("text"), str)
