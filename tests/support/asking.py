"""Test helpers for MCP sessions: a client that answers permission asks from a list (and may act first),
and the processes a backend started."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import AllowedOutcome, RequestPermissionResponse, ToolCallProgress, ToolCallStart

from tests.support.acp_client import RecordingClient


@dataclass
class AskingClient(RecordingClient):
    """Answers the agent's permission asks with ``answers`` in order (an option id each); with none left
    it refuses like a bare client. ``before_answer`` runs first (e.g. to kill a server between calls)."""

    answers: list[str] = field(default_factory=list)
    before_answer: Callable[[Any], Awaitable[None]] | None = None

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.permission_requests.append((tool_call, options))
        if self.before_answer is not None:
            await self.before_answer(tool_call)
        if not self.answers:
            raise RequestError.method_not_found("session/request_permission")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answers.pop(0))
        )

    def tool_calls(self) -> list[tuple[ToolCallStart, ToolCallProgress]]:
        """Each announced tool call with its result, in order."""
        starts = [u for _, u in self.updates if isinstance(u, ToolCallStart)]
        ends = {u.tool_call_id: u for _, u in self.updates if isinstance(u, ToolCallProgress)}
        return [(start, ends[start.tool_call_id]) for start in starts]


def children(parent: int, marker: str) -> list[int]:
    """Live (not zombie) child processes of ``parent`` whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == parent and state != "Z" and marker in cmdline:
            found.append(int(entry.name))
    return found


async def exited(pid: int, timeout: float = 10) -> None:
    """Wait until ``pid`` (not our child) has ended: its pidfd becomes readable then."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()
    loop.add_reader(fd, gone.set)
    try:
        await asyncio.wait_for(gone.wait(), timeout)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def kill(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it has ended."""
    os.kill(pid, signal.SIGKILL)
    await exited(pid)
