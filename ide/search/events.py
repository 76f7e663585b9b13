"""Progress events an architecture reports while it runs, typed: what the ACP layer turns into updates.

They stay plain dicts at run time (LangGraph's custom stream carries them and checkpoints must round-trip),
described by the TypedDicts below; :data:`ProgressEvent` is their union.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class StepStart(TypedDict):
    type: Literal["step_start"]
    step: int


class StepEnd(TypedDict):
    type: Literal["step_end"]
    step: int
    input_tokens: int
    output_tokens: int
    latency_ms: float
    truncated: NotRequired[dict[str, int] | None]
    """The model server evaluated fewer prompt tokens than were sent (``sent``, ``evaluated``)."""


class TextEvent(TypedDict):
    """A piece of the answer (``text``) or of the agent's reasoning (``thought``)."""

    type: Literal["text", "thought"]
    text: str


class ToolStart(TypedDict):
    type: Literal["tool_start"]
    id: str
    name: str
    args: dict[str, Any]
    title: str
    kind: str
    locations: list[tuple[str, int | None]]
    """(absolute path, line or None) of what the call touches."""


class ToolEnd(TypedDict):
    type: Literal["tool_end"]
    id: str
    failed: bool
    output: str
    diffs: NotRequired[tuple[Any, ...]]
    """``ide.tools.FileDiff`` of each file the call changed."""


class PlanEntry(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed", "failed"]


class PlanEvent(TypedDict):
    type: Literal["plan"]
    entries: list[PlanEntry]


def tool_start(
    ident: str,
    name: str,
    args: dict[str, Any],
    title: str,
    kind: str,
    locations: list[tuple[str, int | None]],
) -> ToolStart:
    """The event of a tool call starting (shown to the user as an ACP tool call in progress)."""
    return {
        "type": "tool_start",
        "id": ident,
        "name": name,
        "args": args,
        "title": title,
        "kind": kind,
        "locations": locations,
    }


def tool_end(ident: str, failed: bool, output: str, diffs: tuple[Any, ...] = ()) -> ToolEnd:
    """The event of a tool call ending: its output (already capped) and the diffs of what it changed."""
    return {"type": "tool_end", "id": ident, "failed": failed, "output": output, "diffs": diffs}


ProgressEvent = StepStart | StepEnd | TextEvent | ToolStart | ToolEnd | PlanEvent
"""Everything an architecture may report; ``event["type"]`` tells which."""

TREE_FLUSH_EVENTS = ("step_start", "step_end", "tool_start", "tool_end")
"""Events after which the run's tree events go to the client at once (the step or call is visible)."""


def cap_text(text: str, limit_bytes: int) -> str:
    """``text`` cut to about ``limit_bytes`` UTF-8 bytes, saying how much was left out."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    kept = data[:limit_bytes].decode("utf-8", errors="ignore")
    return f"{kept}\n… ({len(data) - len(kept.encode('utf-8'))} more bytes not shown)"


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters (node labels, titles)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
