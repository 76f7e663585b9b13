"""The context budget: what is sent fits the window with room for the answer, the system prompt and the task
always go whole, older observations become stubs, then a compactor summary, then a cut; the ratio of
characters to tokens learns from the server; a prompt the server cut anyway is noticed."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ide.llm import ModelRouter
from ide.llm.budget import (
    MESSAGE_OVERHEAD_TOKENS,
    Calibration,
    answer_reserve,
    cut_to_fit,
    fit_messages,
    message_chars,
)
from ide.llm.router import TRUNCATED_KEY
from tests.support.models import make_settings

SYSTEM = SystemMessage("You are Arbor, a coding agent. " * 20)
TASK = HumanMessage("TASK-MARKER: find where the retry policy is configured and explain it.")


def read_heavy(steps: int, size: int = 6000) -> list[BaseMessage]:
    """A ReAct conversation that read ``steps`` files of ``size`` characters, one per step."""
    messages: list[BaseMessage] = [SYSTEM, TASK]
    for step in range(steps):
        call = {
            "name": "read_file",
            "args": {"path": f"pkg/m{step}.py"},
            "id": f"c{step}",
            "type": "tool_call",
        }
        messages.append(AIMessage("", tool_calls=[call]))
        messages.append(
            ToolMessage(f"# m{step}\n" + "x = 1\n" * (size // 6), tool_call_id=f"c{step}", name="read_file")
        )
    return messages


def test_older_observations_become_stubs_and_the_task_and_latest_steps_stay() -> None:
    messages = read_heavy(20)
    calibration = Calibration()
    limit = 8192 - answer_reserve(8192)
    fitted = fit_messages(messages, limit, calibration)
    assert fitted.tokens_before > 4 * limit
    assert fitted.tokens <= limit
    assert fitted.messages[0] is SYSTEM and fitted.messages[1] is TASK
    assert fitted.messages[-4:] == messages[-4:]  # the latest steps whole
    stub = fitted.messages[3]
    assert isinstance(stub, ToolMessage) and stub.tool_call_id == "c0"
    assert (
        stub.text.startswith("read_file pkg/m0.py: ") and "elided" in stub.text and "read again" in stub.text
    )
    assert fitted.overflow_range is None


def test_without_tool_results_to_elide_the_older_steps_are_offered_for_a_summary() -> None:
    chatter: list[BaseMessage] = [SYSTEM, TASK]
    for n in range(30):
        chatter += [AIMessage(f"thinking aloud {n} " * 200), HumanMessage(f"go on {n}")]
    fitted = fit_messages(chatter, 4000, Calibration())
    assert fitted.overflow_range is not None
    start, end = fitted.overflow_range
    assert start == 2 and end == len(chatter) - 4


def test_one_huge_message_is_cut_in_its_middle_and_the_task_survives() -> None:
    huge = [
        SYSTEM,
        TASK,
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "big.txt"}, "id": "b"}]),
    ]
    huge.append(ToolMessage("HEAD " + "y" * 200_000 + " TAIL", tool_call_id="b", name="read_file"))
    calibration = Calibration()
    fitted = cut_to_fit(fit_messages(huge, 6000, calibration), 6000, calibration)
    assert fitted.tokens <= 6000
    text = fitted.messages[-1].text
    assert text.startswith("HEAD ") and text.endswith(" TAIL") and "characters cut" in text
    assert fitted.messages[1] is TASK


def test_calibration_learns_the_servers_ratio_and_stays_safe() -> None:
    messages = read_heavy(3)
    calibration = Calibration()
    chars = sum(message_chars(m) for m in messages)
    evaluated = chars // 5 + MESSAGE_OVERHEAD_TOKENS * len(messages)  # this model's tokens are 5 characters
    calibration.learn(messages, evaluated)
    assert calibration.chars_per_token > 3.5
    for _ in range(10):
        calibration.learn(messages, evaluated)
    assert 4.8 < calibration.chars_per_token <= 5.01
    calibration.learn(messages, chars)  # nonsense from a server: clamped
    assert calibration.chars_per_token >= 2.0


async def test_every_request_fits_the_window_and_carries_the_task(fake_ollama: Any) -> None:
    """On main: 20 reads of 6 KB were sent whole (~37k tokens against num_ctx 8,192)."""
    server = fake_ollama([{"content": "done"}])
    router = ModelRouter(make_settings(server.url, num_ctx=8192))
    seen: list[tuple[str, int, int]] = []
    router.on_context = lambda role, tokens, window: seen.append((role, tokens, window))
    await router.stream("react", read_heavy(20))
    body = server.chat_bodies[0]
    sent = sum(len(str(m.get("content") or "")) for m in body["messages"])
    assert sent / 3.5 < 8192 - answer_reserve(8192)
    assert "TASK-MARKER" in body["messages"][1]["content"]
    assert body["options"]["num_ctx"] == 8192
    [(role, tokens, window)] = seen
    assert role == "react" and window == 8192 and tokens <= window - answer_reserve(window)


async def test_the_compactor_summarises_what_stubs_cannot_save(fake_ollama: Any, caplog: Any) -> None:
    server = fake_ollama([{"content": "SUMMARY: read nothing useful yet."}, {"content": "answer"}])
    router = ModelRouter(make_settings(server.url, num_ctx=4096))
    chatter: list[BaseMessage] = [SYSTEM, TASK]
    for n in range(30):
        chatter += [AIMessage(f"thinking aloud {n} " * 200), HumanMessage(f"go on {n}")]
    with caplog.at_level(logging.INFO, logger="ide.llm.router"):
        reply = await router.stream("react", chatter)
    assert reply.text == "answer"
    compactor, agent = server.chat_bodies
    assert "compress an agent's earlier steps" in compactor["messages"][0]["content"]
    texts = [str(m.get("content")) for m in agent["messages"]]
    assert "TASK-MARKER" in texts[1]
    assert any("SUMMARY: read nothing useful yet." in t for t in texts)
    assert "older message(s) summarised" in caplog.text
    assert router.usage_snapshot()["compactor"].calls == 1


async def test_a_prompt_the_server_cut_anyway_is_noticed(fake_ollama: Any, caplog: Any) -> None:
    """The server's window is smaller than Arbor was told (num_ctx): it evaluates only its 2,048 tokens."""
    server = fake_ollama([{"content": "I forgot the task", "prompt_eval_count": 2048}])
    router = ModelRouter(make_settings(server.url, num_ctx=16384))
    with caplog.at_level(logging.WARNING, logger="ide.llm.router"):
        reply = await router.stream("react", read_heavy(8))
    assert reply.additional_kwargs[TRUNCATED_KEY]["evaluated"] == 2048
    assert "the server cut the prompt" in caplog.text


@pytest.mark.parametrize("steps", [1, 5])
async def test_a_short_conversation_is_sent_as_it_is(fake_ollama: Any, steps: int) -> None:
    server = fake_ollama([{"content": "ok"}])
    router = ModelRouter(make_settings(server.url, num_ctx=32768))
    messages = read_heavy(steps, size=600)
    await router.stream("react", messages)
    assert [m.get("content", "") for m in server.chat_bodies[0]["messages"]] == [m.text for m in messages]


def test_a_cut_prompt_is_said_on_its_step_in_the_tree() -> None:
    from ide.search.react import ReactTree

    events: list[Any] = []
    tree = ReactTree("task", model="ollama:x", emit=events.append)
    tree.on_event({"type": "step_start", "step": 1})
    tree.on_event({"type": "step_end", "step": 1, "truncated": {"sent": 9000, "evaluated": 2048}})
    step = next(n for n in tree.recorder.tree.nodes.values() if n.kind == "thought")
    assert "evaluated only 2048 of the ~9000" in (step.reflection or "")
