"""The agent's memory tools: search what earlier sessions learned, and store or read insights.

What they return is quoted data with each entry's source (``ide.memory.store.quote_entries``): an
insight the agent stored may carry an injection it read somewhere, so it comes back labelled as the
agent's own unreviewed note, never as instructions. What ``store_insight`` stores is marked as written by
the agent (and by the session, when the memory is the session's view) and waits for the user's review."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ide.fs import ToolError
from ide.memory.store import quote_entries
from ide.settings import ToolSettings
from ide.tools.base import tool
from ide.tools.workspace import Workspace


class SearchMemoryArgs(BaseModel):
    query: str = Field(description="words of the task, a file, an error…")
    namespace: Literal["investigations", "insights", "patterns", "errors"] | None = Field(
        None, description="only this namespace (default: all)"
    )
    limit: int = Field(8, ge=1, le=30)


class StoreInsightArgs(BaseModel):
    title: str = Field(description="the insight in a few words")
    content: str = Field(description="what was learned, with file:line where it applies")


class GetInsightsArgs(BaseModel):
    query: str = Field("", description="words to match (empty: the newest insights)")
    limit: int = Field(8, ge=1, le=30)


def _memory(workspace: Workspace):  # type: ignore[no-untyped-def]
    if workspace.memory is None:
        raise ToolError("memory is not available in this session")
    return workspace.memory


@tool("search", lambda a: f"Search memory for {a.query!r}")
def search_memory(workspace: Workspace, settings: ToolSettings, args: SearchMemoryArgs) -> str:
    """Search what earlier sessions in this workspace learned: investigations (solved tasks with their
    solution paths and files), insights, tool patterns that worked, and errors."""
    namespaces = [args.namespace] if args.namespace else None
    items = _memory(workspace).search(args.query, namespaces, args.limit)
    if not items:
        return f"nothing in memory matches {args.query!r}"
    return quote_entries(items)


@tool("other", lambda a: f"Remember: {a.title}")
def store_insight(workspace: Workspace, settings: ToolSettings, args: StoreInsightArgs) -> str:
    """Remember an insight about this workspace for later sessions (a convention, a pitfall, where something
    lives)."""
    try:
        memory_id = _memory(workspace).add("insights", args.title, args.content, author="agent")
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return (
        f"stored as insight #{memory_id}, marked as written by you; the user reviews it before later "
        "sessions are reminded of it"
    )


@tool("search", lambda a: "Insights" + (f" about {a.query!r}" if a.query else ""))
def get_insights(workspace: Workspace, settings: ToolSettings, args: GetInsightsArgs) -> str:
    """Insights stored about this workspace, newest or best matching first."""
    items = _memory(workspace).search(args.query, ["insights"], args.limit)
    if not items:
        return "no insights stored yet" if not args.query else f"no insight matches {args.query!r}"
    return quote_entries(items)


MEMORY_TOOLS = (search_memory, store_insight, get_insights)
