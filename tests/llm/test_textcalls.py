"""Tool calls written as text: every shape local models send is recovered for bound tools only, the prose
around it stays, and streamed text that may be a call is held back until it is decided."""

from __future__ import annotations

import json

import pytest

from ide.llm.textcalls import TextGate, recover_tool_calls
from ide.protocol.tree import is_recovered

TOOLS = ["read_file", "edit_file"]
READ_A = {"name": "read_file", "arguments": {"path": "a.py"}}
READ_B = {"name": "read_file", "arguments": {"path": "b.py"}}


def dumps(value: object) -> str:
    return json.dumps(value)


SHAPES = {
    "bare": dumps(READ_A),
    "bare, two lines": f"{dumps(READ_A)}\n{dumps(READ_B)}",
    "list": dumps([READ_A, READ_B]),
    "fence": f"```json\n{dumps(READ_A)}\n```",
    "fence without language": f"```\n{dumps([READ_A, READ_B])}\n```",
    "qwen tags": f"<tool_call>\n{dumps(READ_A)}\n</tool_call>\n<tool_call>\n{dumps(READ_B)}\n</tool_call>",
    "mistral": f"[TOOL_CALLS] {dumps([READ_A, READ_B])}",
    "llama python_tag": '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.py"}}; '
    '{"name": "read_file", "parameters": {"path": "b.py"}}',
    "openai function object": dumps(
        {"type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    ),
    "arguments as a JSON string": dumps({"name": "read_file", "arguments": dumps({"path": "a.py"})}),
    "qwen3-coder xml in tags": "<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n"
    "</function>\n</tool_call>",
    "qwen3-coder xml": "<function=read_file>\n<parameter=path>\na.py\n</parameter>\n</function>\n"
    "<function=read_file>\n<parameter=path>b.py</parameter>\n</function>",
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_is_recovered(shape: str) -> None:
    text = SHAPES[shape]
    recovery = recover_tool_calls(text, TOOLS)
    assert [call["name"] for call in recovery.calls] == ["read_file"] * len(recovery.calls)
    assert recovery.calls[0]["args"] == {"path": "a.py"}
    assert all(is_recovered(call["id"]) for call in recovery.calls)
    assert recovery.remainder == ""
    if "b.py" in text:
        assert recovery.calls[1]["args"] == {"path": "b.py"}


def test_prose_around_a_call_stays_as_the_answer() -> None:
    text = f"I will look at the file first.\n\n{dumps(READ_A)}\n\nThen I'll fix it."
    recovery = recover_tool_calls(text, TOOLS)
    assert len(recovery.calls) == 1
    assert recovery.remainder == "I will look at the file first.\n\nThen I'll fix it."


@pytest.mark.parametrize(
    "text",
    [
        dumps({"name": "rm_rf", "arguments": {"path": "/"}}),  # not a bound tool
        'Use ```python\nconfig = {"name": "read_file"}\n``` in your settings.',
        dumps({"name": "read_file"}) + " is the tool I would use",
        '{"name": "read_file", "arguments": {"path": "a.py"',  # cut off
        "The answer is 42.",
    ],
)
def test_text_that_is_not_a_bound_call_stays_text(text: str) -> None:
    recovery = recover_tool_calls(text, TOOLS)
    if recovery.calls:  # the only call-shaped value here is a read_file without arguments
        assert recovery.calls == [
            {"name": "read_file", "args": {}, "id": recovery.calls[0]["id"], "type": "tool_call"}
        ]
    else:
        assert recovery.remainder == text


def test_invalid_json_arguments_reach_the_tool_as_they_are() -> None:
    """The toolbox's validation then tells the model exactly what is wrong with them."""
    text = dumps({"name": "edit_file", "arguments": '{"path": "a.py", "old_text": '})
    [call] = recover_tool_calls(text, TOOLS).calls
    assert call["args"] == {"__invalid_json__": '{"path": "a.py", "old_text": '}


def feed(gate: TextGate, text: str, size: int = 3) -> str:
    return "".join(gate.feed(text[i : i + size]) for i in range(0, len(text), size))


@pytest.mark.parametrize("shape", SHAPES)
def test_streamed_calls_never_show_as_answer_text(shape: str) -> None:
    gate = TextGate(TOOLS)
    shown = feed(gate, "Reading it.\n" + SHAPES[shape])
    rest, recovery = gate.release()
    assert recovery.calls
    assert (shown + rest).strip() == "Reading it."


def test_a_code_block_in_an_answer_streams_once_it_is_closed() -> None:
    answer = "Here:\n```python\nprint({'a': 1})\n```\nand more text after the block, long enough to pass."
    gate = TextGate(TOOLS)
    shown = feed(gate, answer)
    assert "print({'a': 1})" in shown and "and more" in shown  # not held to the end
    rest, recovery = gate.release()
    assert not recovery.calls and shown + rest == answer
