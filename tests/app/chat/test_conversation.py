"""The chat's blocks built from the session's events (no Qt): what the session/load replay relies on."""

from __future__ import annotations

from acp import (
    start_tool_call,
    text_block,
    update_agent_message,
    update_agent_thought,
    update_tool_call,
    update_user_message,
)
from acp.schema import AvailableCommandsUpdate, ToolCallLocation

from ide.app.chat.conversation import Conversation, TextBlock, ToolBlock
from ide.client.agentproc import StderrTail, error_from_request
from ide.client.events import PromptSent
from ide.client.fold import SessionFold
from ide.protocol import ERROR_CODE, ErrorInfo, error_data


def turn(question: str, answer_chunks: list[str]) -> list[object]:
    """A turn's updates as an agent replays them (the user's prompt included)."""
    return [
        update_user_message(text_block(question)),
        update_agent_thought(text_block("thinking about ")),
        update_agent_thought(text_block(question)),
        start_tool_call(
            "call-1",
            "Read a.py",
            kind="read",
            status="in_progress",
            locations=[ToolCallLocation(path="/ws/a.py", line=3)],
            raw_input={"path": "a.py"},
        ),
        update_tool_call("call-1", status="completed", raw_output="x = 1"),
        *[update_agent_message(text_block(chunk)) for chunk in answer_chunks],
    ]


def summary(conversation: Conversation) -> list[tuple[str, str]]:
    return [
        (block.kind, block.text)
        if isinstance(block, TextBlock)
        else ("tool", f"{block.title}:{block.status}")
        for block in conversation.blocks
        if isinstance(block, TextBlock | ToolBlock)
    ]


def apply(conversation: Conversation, updates: list[object]) -> None:
    """Read ``updates`` with a session's fold, and give the conversation the events."""
    fold = SessionFold()
    for update in updates:
        conversation.apply(fold.apply(update))


def test_chunks_merge_into_blocks_and_tool_updates_apply_in_place():
    conversation = Conversation()
    apply(conversation, turn("q1", ["The ", "answer."]))

    assert summary(conversation) == [
        ("user", "q1"),
        ("thought", "thinking about q1"),
        ("tool", "Read a.py:completed"),
        ("assistant", "The answer."),
    ]
    tool = conversation.blocks[2]
    assert isinstance(tool, ToolBlock)
    assert tool.input_text == '{\n  "path": "a.py"\n}'
    assert tool.output_text == "x = 1"
    assert tool.locations[0].line == 3


def test_replay_of_the_same_updates_builds_the_same_blocks():
    updates = [*turn("q1", ["one"]), *turn("q2", ["two"])]
    live, replayed = Conversation(), Conversation()
    apply(live, updates)
    apply(replayed, updates)
    assert summary(live) == summary(replayed)
    assert summary(live)[4] == ("user", "q2")


def test_two_prompts_without_an_answer_between_stay_two_messages():
    conversation = Conversation()
    apply(conversation, [update_user_message(text_block("first")), update_user_message(text_block("second"))])
    assert summary(conversation) == [("user", "first"), ("user", "second")]


def test_a_prompt_sent_shows_as_the_users_message_as_its_replay_does():
    sent, replayed = Conversation(), Conversation()
    sent.apply(PromptSent("q1"))
    apply(sent, turn("q1", ["one"])[1:])
    sent.apply(PromptSent("q2"))
    apply(replayed, [*turn("q1", ["one"]), update_user_message(text_block("q2"))])
    assert summary(sent) == summary(replayed)
    assert summary(sent)[-1] == ("user", "q2")


def test_updates_the_chat_does_not_show_change_nothing():
    conversation = Conversation()
    assert (
        conversation.apply(
            SessionFold().apply(
                AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[])
            )
        )
        is None
    )
    assert conversation.blocks == []


def test_classified_errors_keep_their_fix_and_others_get_a_plain_message():
    from acp import RequestError

    info = ErrorInfo(
        kind="model_unreachable", message="Ollama is not reachable", fix='Start it with "ollama serve"'
    )
    assert error_from_request(RequestError(ERROR_CODE, "model", error_data(info))) == info

    plain = error_from_request(RequestError(-32602, "Invalid params", {"message": "the prompt is empty"}))
    assert plain.kind == "bad_request"
    assert "the prompt is empty" in plain.message


def test_stderr_tail_keeps_the_last_lines_only():
    tail = StderrTail(max_lines=3)
    tail.feed(b"one\ntwo\nthr")
    tail.feed(b"ee\nfour\nfive")
    assert tail.text() == "three\nfour\nfive"
    assert tail.text(lines=1) == "five"
