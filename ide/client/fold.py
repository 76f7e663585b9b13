"""One session's ``session/update`` stream read once, into typed events (:mod:`ide.client.events`).

The window's bridge keeps one :class:`SessionFold` per session and gives its parts the events; ``arbor run``
keeps one for its turn. The fold is the only reader of the wire's update kinds: one dispatch on the SDK's
update classes, as the ACP SDK's ``acp.contrib.session_state`` does. It keeps each tool call's whole state,
since a later notification about a call carries only what changed. The SDK's schema is imported when the
first update comes, not with this module: the window's first frame does without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ide.client.events import (
    DONE_STATUSES,
    TOOL_CALL_FIELDS,
    Command,
    CommandsAvailable,
    ConfigOptionsChanged,
    MessageChunk,
    ModeChanged,
    PlanChanged,
    PlanEntry,
    PromptSent,
    SessionEvent,
    SessionInfoChanged,
    ThoughtChunk,
    ToolCallDone,
    ToolCallEvent,
    ToolCallStarted,
    ToolCallUpdated,
    TurnEnded,
    TurnFailed,
    Unknown,
    UsageUpdated,
    UserChunk,
)

if TYPE_CHECKING:
    from acp.schema import PromptResponse

    from ide.protocol import ErrorInfo


class SessionFold:
    """Turns each ``session/update`` of one session into one event (:meth:`apply`), a prompt sent into
    :class:`PromptSent` (:meth:`sent`) and the prompt's answer into :class:`TurnEnded` (:meth:`answer`) or
    :class:`TurnFailed` (:meth:`failed`); :attr:`tool_calls` holds every call's state so far."""

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        """The session whose updates this fold reads (None: whichever comes; the fold does not check)."""
        self.tool_calls: dict[str, ToolCallEvent] = {}
        """Each tool call's latest event: its whole state."""

    def apply(self, update: Any) -> SessionEvent:
        """The event one ``session/update`` payload (an ``acp.schema`` update) makes."""
        from acp import schema

        match update:
            case schema.UserMessageChunk():
                return UserChunk(_text(update.content), update.content, update.message_id)
            case schema.AgentMessageChunk():
                return MessageChunk(_text(update.content), update.content, update.message_id)
            case schema.AgentThoughtChunk():
                return ThoughtChunk(_text(update.content), update.content, update.message_id)
            case schema.ToolCallStart():
                return self._tool_call(update, started=True)
            case schema.ToolCallProgress():
                return self._tool_call(update, started=False)
            case schema.AgentPlanUpdate():
                entries = (PlanEntry(e.content, e.status, e.priority) for e in update.entries)
                return PlanChanged(tuple(entries))
            case schema.CurrentModeUpdate():
                return ModeChanged(update.current_mode_id)
            case schema.AvailableCommandsUpdate():
                return CommandsAvailable(tuple(_command(command) for command in update.available_commands))
            case schema.UsageUpdate():
                cost = update.cost
                if cost is None:
                    return UsageUpdated(update.used, update.size)
                return UsageUpdated(update.used, update.size, cost.amount, cost.currency)
            case schema.SessionInfoUpdate():
                return SessionInfoChanged(update.title, update.updated_at)
            case schema.ConfigOptionUpdate():
                return ConfigOptionsChanged(tuple(update.config_options))
            case schema.AgentPlanContentUpdate() | schema.AgentPlanRemovedUpdate():
                # Plans by id (unstable in ACP): no client here shows them yet.
                return Unknown(update.session_update, update)
            case _:
                return Unknown(str(getattr(update, "session_update", type(update).__name__)), update)

    def sent(self, text: str) -> PromptSent:
        """The event a prompt sent as a new turn makes: the user's message, as the client shows it."""
        return PromptSent(text)

    def answer(self, response: PromptResponse) -> TurnEnded:
        """The event the prompt's answer makes: its stop reason and ``_meta.arbor``'s figures."""
        from ide.client.agentconn import turn_meta

        return TurnEnded(response.stop_reason, turn_meta(response.field_meta))

    def failed(self, error: ErrorInfo) -> TurnFailed:
        """The event a prompt answered with an error makes (refused, or no answer in time)."""
        return TurnFailed(error)

    def _tool_call(self, update: Any, *, started: bool) -> ToolCallEvent:
        changed = {
            name: tuple(value) if isinstance(value, list) else value
            for name in TOOL_CALL_FIELDS
            if (value := getattr(update, name)) is not None and (name != "title" or value)
        }
        before = self.tool_calls.get(update.tool_call_id)
        state = {name: getattr(before, name) for name in TOOL_CALL_FIELDS} if before is not None else {}
        state.update(changed)
        if started:
            kind: type[ToolCallEvent] = ToolCallStarted
        elif changed.get("status") in DONE_STATUSES:
            kind = ToolCallDone
        else:
            kind = ToolCallUpdated
        event = kind(id=update.tool_call_id, changed=frozenset(changed), **state)
        self.tool_calls[update.tool_call_id] = event
        return event


def _text(content: Any) -> str:
    """A content block's text: a text block's, else ''."""
    text = getattr(content, "text", None)
    return text if isinstance(text, str) else ""


def _command(command: Any) -> Command:
    given = command.input
    hint = getattr(getattr(given, "root", given), "hint", None) if given is not None else None
    return Command(command.name, command.description, hint)
