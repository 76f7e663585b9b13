"""The chat as data: blocks built from the session's events (:mod:`ide.client.events`), with no Qt in sight.

The chat view is a pure function of the events, which is what lets ``session/load`` rebuild it: replaying
the stored updates' events into an empty :class:`Conversation` gives the same blocks the live turn
produced. Content is read by its wire discriminator (``type``), not by SDK class, so this module does not
import ``acp.schema``: that import costs most of a second, and the window paints first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ide.client.events import PlanChanged, PlanEntry, SessionEvent, ToolCallEvent

RAW_DISPLAY_CHARS = 6000
"""Raw tool input/output shown in a block; the rest is cut with a note (the agent already caps it)."""


@dataclass(eq=False)
class TextBlock:
    """A run of text chunks of one kind: ``user``, ``assistant`` or ``thought``."""

    kind: str
    text: str = ""
    message_id: str | None = None


@dataclass(frozen=True)
class Location:
    """A file a tool call touched; ``line`` is 1-based."""

    path: str
    line: int | None = None


@dataclass(eq=False)
class ToolBlock:
    """One tool call, updated in place as its events arrive."""

    tool_call_id: str
    title: str
    kind: str = "other"
    status: str = "pending"
    locations: list[Location] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    content: str = ""

    @property
    def input_text(self) -> str:
        return _display(self.raw_input)

    @property
    def output_text(self) -> str:
        """The tool's result as text: its content blocks if any, else its raw output."""
        return _cap(self.content) if self.content else _display(self.raw_output)


@dataclass(eq=False)
class PlanBlock:
    """The agent's current plan; each plan update replaces the entries (as ACP specifies)."""

    items: list[PlanEntry] = field(default_factory=list)


@dataclass(eq=False)
class NoticeBlock:
    """A line the window adds at a turn's end: ``error`` (the turn failed, and why) or ``stopped``."""

    kind: str
    title: str
    detail: str = ""


@dataclass(frozen=True)
class TurnNotice:
    """A window-made event the chat takes like the agent's, so a restore that fails keeps it too."""

    kind: str
    title: str
    detail: str = ""


Block = TextBlock | ToolBlock | PlanBlock | NoticeBlock


class Conversation:
    """Blocks in display order, built from events one at a time by :meth:`apply`."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._tools: dict[str, ToolBlock] = {}
        self._plan: PlanBlock | None = None

    def apply(self, event: SessionEvent | TurnNotice) -> tuple[Block, bool] | None:
        """Take one event in; returns the block it changed and whether that block is new.

        Events the chat does not show (commands, modes, usage, a turn's end, …) return None.
        """
        # The events' module (a score of frozen dataclasses, ~6 ms) loads with the first event, not for the
        # window's first frame.
        from ide.client.events import (
            MessageChunk,
            PlanChanged,
            PromptSent,
            ThoughtChunk,
            ToolCallEvent,
            UserChunk,
        )

        match event:
            case PromptSent():
                return self._append_text("user", event.text, None)
            case UserChunk():
                return self._append_text("user", content_text(event.content), event.message_id)
            case MessageChunk():
                return self._append_text("assistant", content_text(event.content), event.message_id)
            case ThoughtChunk():
                return self._append_text("thought", content_text(event.content), event.message_id)
            case ToolCallEvent():
                return self._tool_call(event)
            case PlanChanged():
                return self._plan_update(event)
            case TurnNotice():
                block = NoticeBlock(event.kind, event.title, event.detail)
                self.blocks.append(block)
                return block, True
        return None

    def _append_text(self, kind: str, text: str, message_id: str | None) -> tuple[Block, bool]:
        last = self.blocks[-1] if self.blocks else None
        if (
            isinstance(last, TextBlock)
            and last.kind == kind
            and _same_message(kind, last.message_id, message_id)
        ):
            last.text += text
            last.message_id = last.message_id or message_id
            return last, False
        block = TextBlock(kind, text, message_id)
        self.blocks.append(block)
        return block, True

    def _tool_call(self, call: ToolCallEvent) -> tuple[Block, bool]:
        """The call's block, made or updated to the call's whole state (what was never said keeps the
        block's defaults)."""
        block = self._tools.get(call.id)
        created = block is None
        if block is None:
            block = ToolBlock(call.id, title=call.id)
            self._tools[call.id] = block
            self.blocks.append(block)
        block.title = call.title or block.title
        block.kind = call.kind or block.kind
        block.status = call.status or block.status
        if call.locations is not None:
            block.locations = [Location(loc.path, loc.line) for loc in call.locations]
        block.raw_input, block.raw_output = call.raw_input, call.raw_output
        if call.content is not None:
            block.content = "\n".join(_tool_content_text(item) for item in call.content)
        return block, created

    def _plan_update(self, plan: PlanChanged) -> tuple[Block, bool]:
        items = list(plan.entries)
        created = self._plan is None
        if self._plan is None:
            self._plan = PlanBlock()
            self.blocks.append(self._plan)
        self._plan.items = items
        return self._plan, created


def _same_message(kind: str, last_id: str | None, new_id: str | None) -> bool:
    """Whether a chunk continues the text block before it.

    Agent chunks stream a message piece by piece, so they continue unless ids say otherwise. A user
    prompt arrives whole, one chunk per turn, so two user chunks in a row (a turn that produced no
    answer, then the next prompt) are two messages unless they carry the same id.
    """
    if kind == "user":
        return last_id is not None and last_id == new_id
    return last_id is None or new_id is None or last_id == new_id


def content_text(content: Any) -> str:
    """Text of one ACP content block; non-text content becomes a short placeholder."""
    kind = getattr(content, "type", None)
    if kind == "text":
        return str(content.text)
    if kind == "resource_link":
        return f"[{content.name or content.uri}]({content.uri})"
    if kind == "resource":
        text = getattr(content.resource, "text", None)
        return text if isinstance(text, str) else f"[{getattr(content.resource, 'uri', 'resource')}]"
    return f"[{kind or 'content'}]"


def _tool_content_text(item: Any) -> str:
    kind = getattr(item, "type", None)
    if kind == "content":
        return content_text(item.content)
    if kind == "diff":
        return f"(edit of {item.path})"
    if kind == "terminal":
        return f"(terminal {item.terminal_id})"
    return ""


def _display(value: Any) -> str:
    import json

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return _cap(text)


def _cap(text: str) -> str:
    if len(text) <= RAW_DISPLAY_CHARS:
        return text
    return text[:RAW_DISPLAY_CHARS] + f"\n… ({len(text) - RAW_DISPLAY_CHARS} more characters)"
