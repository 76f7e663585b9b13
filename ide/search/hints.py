"""The workspace memory's hint for a run's task, capped, for architectures other than ReAct to prompt with."""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, SystemMessage

from ide.memory.store import QUOTE_TAG

if TYPE_CHECKING:
    from ide.search.base import RunContext

HINT_CAP = 2000
"""Characters of the memory hint that reach a prompt: whole quoted blocks, the rest left to search_memory."""

_CLOSE = f"</{QUOTE_TAG}>"
_PER_RUN: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
"""Hints already read, per run (its tree recorder) and task: a workflow's stage agents share one."""


def cap_hint(hint: str, cap: int = HINT_CAP) -> str:
    """``hint`` cut to at most ``cap`` characters at a block boundary, so every quote stays closed."""
    if len(hint) <= cap:
        return hint
    pieces = [p + _CLOSE for p in hint.split(_CLOSE)[:-1]]
    note = "\n(more memory entries left out to save room; search_memory finds them)"
    kept = ""
    for piece in pieces:
        if len(kept) + len(piece) + len(note) > cap:
            break
        kept += piece
    if not kept:
        # Even the first block is too long: keep its head and close the quote again.
        room = max(0, cap - len(note) - len(_CLOSE) - 1)
        kept = hint[:room].rsplit("\n", 1)[0] + "\n" + _CLOSE
    return kept + note


async def memory_hint(ctx: RunContext) -> str:
    """What the workspace memory suggests for ``ctx.task`` (quoted, capped); empty when memory is off or
    has nothing. Reads the store off the event loop, once per run and task."""
    memory = ctx.services.memory
    if memory is None:
        return ""
    known = _PER_RUN.setdefault(ctx.recorder, {})
    if ctx.task not in known:
        known[ctx.task] = cap_hint(await asyncio.to_thread(memory.hint, ctx.task))
    return known[ctx.task]


def hint_messages(hint: str) -> list[BaseMessage]:
    """The hint as its own system message (after an architecture's system prompt), or nothing."""
    # The hint quotes every entry with its source (MemoryStore.hint): data, not instructions.
    return [SystemMessage(hint)] if hint else []
