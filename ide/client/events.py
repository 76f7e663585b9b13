"""What a session's ``session/update`` stream and its prompt's answer say, as typed events.

:class:`~ide.client.fold.SessionFold` makes them; the window's parts and ``arbor run`` read them. They are
plain frozen dataclasses with no wire model in their definition, so importing them costs nothing before
the window's first frame; a field that holds ACP content (a content block, a tool call's content items and
locations, an unknown update) holds the SDK's object as it came.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ide.protocol import ErrorInfo, TurnMeta

DONE_STATUSES = ("completed", "failed")
"""A tool call's statuses that end it."""
TOOL_CALL_FIELDS = ("title", "kind", "status", "raw_input", "raw_output", "content", "locations")
"""What a tool call notification may set; a later one carries only what changed."""


@dataclass(frozen=True)
class SessionEvent:
    """One notification of a session's update stream (or its prompt's answer), read."""


@dataclass(frozen=True)
class TextChunk(SessionEvent):
    """A piece of a message: ``text`` is a text block's text ('' for an image, a resource or a link, whose
    block is ``content``); chunks with the same ``message_id`` (or none) continue one message."""

    text: str
    content: Any = None
    message_id: str | None = None


@dataclass(frozen=True)
class UserChunk(TextChunk):
    """The user's prompt, as an agent replays it when a session is loaded."""


@dataclass(frozen=True)
class MessageChunk(TextChunk):
    """A piece of the agent's answer."""


@dataclass(frozen=True)
class ThoughtChunk(TextChunk):
    """A piece of the agent's reasoning."""


@dataclass(frozen=True)
class ToolCallEvent(SessionEvent):
    """A tool call as it stands after a notification about it: every field is the call's whole state
    (what earlier notifications set and this one did not change is kept), and ``changed`` names the fields
    this notification set (of :data:`TOOL_CALL_FIELDS`). ``content`` and ``locations`` are None until set,
    then the SDK's items; a title is set only when not empty."""

    id: str
    title: str = ""
    kind: str | None = None
    status: str | None = None
    raw_input: Any = None
    raw_output: Any = None
    content: tuple[Any, ...] | None = None
    locations: tuple[Any, ...] | None = None
    changed: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class ToolCallStarted(ToolCallEvent):
    """The agent announced the call (``tool_call``); one announced again keeps what it had and takes what
    the new announcement sets."""


@dataclass(frozen=True)
class ToolCallUpdated(ToolCallEvent):
    """The call changed (``tool_call_update``) and this notification did not end it; the call may be new
    to the client (an agent that never announced it)."""


@dataclass(frozen=True)
class ToolCallDone(ToolCallEvent):
    """This notification set the call's status to one of :data:`DONE_STATUSES` (once per such
    notification: an agent that says it twice gives two)."""


@dataclass(frozen=True)
class PlanEntry:
    content: str
    status: str
    priority: str


@dataclass(frozen=True)
class PlanChanged(SessionEvent):
    """The agent's plan is now ``entries`` (each plan replaces the one before, as ACP specifies)."""

    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True)
class ModeChanged(SessionEvent):
    """The agent switched the session's mode."""

    mode_id: str


@dataclass(frozen=True)
class Command:
    """A slash command the agent offers; ``hint`` says what input it takes (None: none)."""

    name: str
    description: str
    hint: str | None = None


@dataclass(frozen=True)
class CommandsAvailable(SessionEvent):
    """The agent's slash commands are now ``commands``."""

    commands: tuple[Command, ...]


@dataclass(frozen=True)
class UsageUpdated(SessionEvent):
    """How full the agent's context window is (``used`` of ``size`` tokens) and, if it says, the session's
    cost (``amount`` in ``currency``)."""

    used: int
    size: int
    amount: float | None = None
    currency: str | None = None


@dataclass(frozen=True)
class SessionInfoChanged(SessionEvent):
    """The session's title or last-update time changed (None: not said)."""

    title: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class ConfigOptionsChanged(SessionEvent):
    """The session's configuration options are now ``options`` (the SDK's objects)."""

    options: tuple[Any, ...]


@dataclass(frozen=True)
class Unknown(SessionEvent):
    """An update no reader here takes: ``kind`` is its wire name, ``update`` the object as it came."""

    kind: str
    update: Any


@dataclass(frozen=True)
class PromptSent(SessionEvent):
    """The user's prompt went to the agent as a new turn (an agent does not echo it: it replays it, as
    :class:`UserChunk`, only when a session is loaded)."""

    text: str


@dataclass(frozen=True)
class TurnEnded(SessionEvent):
    """The prompt was answered: its stop reason and Arbor's figures of the turn (None: the agent sent
    none, or they could not be read)."""

    stop_reason: str
    meta: TurnMeta | None = None


@dataclass(frozen=True)
class TurnFailed(SessionEvent):
    """The prompt was refused, or not answered in time: the turn is over, and ``error`` says why."""

    error: ErrorInfo
