"""The session fold (ide.client.fold): every ``session/update`` kind ACP defines becomes one typed event, a
tool call's notifications merge into its whole state, and what the fold does not know stays readable."""

from __future__ import annotations

import typing
from types import SimpleNamespace
from typing import Any

import pytest
from acp.schema import PromptResponse, SessionNotification

from ide.client.events import (
    Command,
    CommandsAvailable,
    ConfigOptionsChanged,
    MessageChunk,
    ModeChanged,
    PlanChanged,
    PlanEntry,
    PromptSent,
    SessionInfoChanged,
    TextChunk,
    ThoughtChunk,
    ToolCallDone,
    ToolCallStarted,
    ToolCallUpdated,
    TurnEnded,
    TurnFailed,
    Unknown,
    UsageUpdated,
    UserChunk,
)
from ide.client.fold import SessionFold


def wire(update: dict[str, Any]) -> Any:
    """An update as the SDK reads it off the wire."""
    return SessionNotification.model_validate({"sessionId": "s", "update": update}).update


def text(kind: str, words: str, message_id: str | None = None) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": words}, "messageId": message_id}


SAMPLES: dict[str, tuple[dict[str, Any], Any]] = {
    "user_message_chunk": (text("user_message_chunk", "fix it", "u1"), UserChunk("fix it", None, "u1")),
    "agent_message_chunk": (text("agent_message_chunk", "Done."), MessageChunk("Done.")),
    "agent_thought_chunk": (text("agent_thought_chunk", "hmm"), ThoughtChunk("hmm")),
    "tool_call": (
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.py", "kind": "read"},
        ToolCallStarted("c1", "Read a.py", "read", changed=frozenset({"title", "kind"})),
    ),
    "tool_call_update": (
        {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "in_progress"},
        ToolCallUpdated("c2", status="in_progress", changed=frozenset({"status"})),
    ),
    "plan": (
        {"sessionUpdate": "plan", "entries": [{"content": "Read", "priority": "high", "status": "pending"}]},
        PlanChanged((PlanEntry("Read", "pending", "high"),)),
    ),
    "plan_update": (
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}},
        None,
    ),
    "plan_removed": ({"sessionUpdate": "plan_removed", "planId": "p"}, None),
    "available_commands_update": (
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "workflow", "description": "Run a workflow", "input": {"hint": "name and task"}},
                {"name": "help", "description": "What Arbor can do"},
            ],
        },
        CommandsAvailable(
            (Command("workflow", "Run a workflow", "name and task"), Command("help", "What Arbor can do"))
        ),
    ),
    "current_mode_update": (
        {"sessionUpdate": "current_mode_update", "currentModeId": "lats"},
        ModeChanged("lats"),
    ),
    "config_option_update": (
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [{"type": "boolean", "id": "fast", "name": "Fast", "currentValue": True}],
        },
        None,
    ),
    "session_info_update": (
        {"sessionUpdate": "session_info_update", "title": "Fix the greeting"},
        SessionInfoChanged("Fix the greeting"),
    ),
    "usage_update": (
        {"sessionUpdate": "usage_update", "used": 1200, "size": 8192,
         "cost": {"amount": 0.25, "currency": "USD"}},
        UsageUpdated(1200, 8192, 0.25, "USD"),
    ),
}  # fmt: skip
"""One notification of each kind, and the event it makes (None: checked by its own test below)."""


def test_the_samples_cover_every_update_kind_acp_defines() -> None:
    union = typing.get_args(SessionNotification.model_fields["update"].annotation)
    kinds = {typing.get_args(cls.model_fields["session_update"].annotation)[0] for cls in union}
    assert kinds == set(SAMPLES)


@pytest.mark.parametrize("kind", [kind for kind, (_, expected) in SAMPLES.items() if expected is not None])
def test_each_update_kind_becomes_its_event(kind: str) -> None:
    update, expected = SAMPLES[kind]
    event = SessionFold().apply(wire(update))
    if isinstance(expected, TextChunk):  # a chunk keeps the SDK's block beside its text
        assert event.content is not None and event.content.text == expected.text
        event = type(event)(event.text, None, event.message_id)
    assert event == expected


def test_config_options_keep_the_sdks_objects_and_plans_by_id_are_unknown() -> None:
    fold = SessionFold()
    options = fold.apply(wire(SAMPLES["config_option_update"][0]))
    assert isinstance(options, ConfigOptionsChanged)
    assert [(o.id, o.current_value) for o in options.options] == [("fast", True)]
    for kind in ("plan_update", "plan_removed"):
        event = fold.apply(wire(SAMPLES[kind][0]))
        assert isinstance(event, Unknown) and event.kind == kind and event.update.session_update == kind


def test_a_kind_the_sdk_does_not_know_is_unknown_with_its_update() -> None:
    future = SimpleNamespace(session_update="agent_wish", text="more tokens")
    event = SessionFold().apply(future)
    assert event == Unknown("agent_wish", future)
    assert SessionFold().apply(object()).kind == "object"


def test_non_text_content_keeps_its_block_and_has_no_text() -> None:
    link = {"type": "resource_link", "name": "spec", "uri": "file:///w/spec.md"}
    event = SessionFold().apply(wire({"sessionUpdate": "agent_message_chunk", "content": link}))
    assert isinstance(event, MessageChunk) and event.text == "" and event.content.uri == "file:///w/spec.md"


def test_a_tool_calls_notifications_merge_into_its_whole_state() -> None:
    fold = SessionFold()
    diff = {"type": "diff", "path": "/w/a.py", "oldText": "x\n", "newText": "y\n"}
    started = fold.apply(
        wire(
            {"sessionUpdate": "tool_call", "toolCallId": "e1", "title": "Edit a.py", "kind": "edit",
             "status": "pending", "rawInput": {"path": "a.py"}, "locations": [{"path": "/w/a.py", "line": 2}]}
        )
    )  # fmt: skip
    assert isinstance(started, ToolCallStarted)
    assert started.changed == {"title", "kind", "status", "raw_input", "locations"}
    running = fold.apply(wire({"sessionUpdate": "tool_call_update", "toolCallId": "e1",
                               "status": "in_progress", "title": "", "content": [diff]}))  # fmt: skip
    assert isinstance(running, ToolCallUpdated)
    assert running.changed == {"status", "content"}  # an empty title changes nothing
    assert (running.title, running.kind, running.raw_input) == ("Edit a.py", "edit", {"path": "a.py"})
    assert running.locations is not None and running.locations[0].line == 2
    assert running.content is not None and running.content[0].new_text == "y\n"
    done = fold.apply(wire({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "completed",
                            "rawOutput": "edited"}))  # fmt: skip
    assert isinstance(done, ToolCallDone) and done.changed == {"status", "raw_output"}
    assert (done.title, done.status, done.raw_output) == ("Edit a.py", "completed", "edited")
    assert done.content == running.content  # what this notification did not set is kept
    assert fold.tool_calls["e1"] is done
    after = fold.apply(wire({"sessionUpdate": "tool_call_update", "toolCallId": "e1", "rawOutput": "more"}))
    assert isinstance(after, ToolCallUpdated) and after.status == "completed"  # done once, when it said so


def test_an_update_of_a_call_never_announced_and_an_announcement_repeated() -> None:
    fold = SessionFold()
    failed = fold.apply(wire({"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "failed"}))
    assert isinstance(failed, ToolCallDone) and (failed.title, failed.kind) == ("", None)
    fold.apply(wire({"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "Read", "kind": "read"}))
    again = fold.apply(wire({"sessionUpdate": "tool_call", "toolCallId": "r1", "title": "Read b.py"}))
    assert isinstance(again, ToolCallStarted) and (again.title, again.kind) == ("Read b.py", "read")
    assert again.changed == {"title"}


def test_the_prompts_answer_ends_the_turn_with_arbors_figures() -> None:
    fold = SessionFold()
    meta = {"arbor": {"steps": 3, "usage": {}}}
    ended = fold.answer(PromptResponse(stop_reason="end_turn", field_meta=meta))
    assert isinstance(ended, TurnEnded) and ended.stop_reason == "end_turn"
    assert ended.meta is not None and ended.meta.steps == 3
    assert fold.answer(PromptResponse(stop_reason="cancelled")) == TurnEnded("cancelled", None)
    malformed = PromptResponse(stop_reason="refusal", field_meta={"arbor": {"steps": "many"}})
    assert fold.answer(malformed).meta is None


def test_a_prompt_sent_and_a_prompt_refused_are_events_of_the_turn() -> None:
    from ide.protocol import ErrorInfo

    fold = SessionFold()
    assert fold.sent("Make greet say Hi") == PromptSent("Make greet say Hi")
    error = ErrorInfo(kind="model_unreachable", message="Ollama is not reachable", fix="Start it")
    assert fold.failed(error) == TurnFailed(error)
