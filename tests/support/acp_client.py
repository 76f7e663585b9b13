"""An ACP client for tests: spawns ``arbor acp`` and records every session update it receives (and, when
asked for with :data:`WANTS_TREE`, the search-tree events)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, connect_to_agent
from acp.core import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation, InitializeResponse

from ide.headless import ReadOnlyClient, close_backend
from ide.protocol import META_KEY
from ide.protocol.tree import TREE_NOTIFICATION, TreeEvent

if TYPE_CHECKING:
    from tests.support.wire import WireTap

BACKEND = [sys.executable, "-m", "ide", "acp"]


@dataclass
class RecordingClient(ReadOnlyClient):
    """Client callbacks: keeps updates in arrival order; the agent must not need fs or terminal."""

    updates: list[tuple[str, Any]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permission_answer: str | None = None
    """Option id to pick when the agent asks permission; None refuses the request like a bare client."""
    permission_requests: list[Any] = field(default_factory=list)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))
        self.arrived.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.permission_requests.append((tool_call, options))
        if self.permission_answer is None:
            return await super().request_permission(session_id, tool_call, options, **kwargs)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.permission_answer)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.arrived.set()

    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(getattr(u.content, "text", "") for _, u in self.updates if u.session_update == kind)

    async def wait_for(self, kind: str, timeout: float = 20) -> None:
        await self.wait_until(lambda: kind in self.kinds(), timeout)

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 20) -> None:
        """Wait until ``condition()`` holds, checking it whenever an update or notification arrives."""

        async def _wait() -> None:
            while not condition():
                self.arrived.clear()
                await self.arrived.wait()

        await asyncio.wait_for(_wait(), timeout)


@dataclass
class Backend:
    conn: ClientSideConnection
    client: RecordingClient
    proc: asyncio.subprocess.Process
    init: InitializeResponse


@contextlib.asynccontextmanager
async def acp_backend(
    env: dict[str, str] | None = None,
    capabilities: ClientCapabilities | None = None,
    client: RecordingClient | None = None,
    tap: WireTap | None = None,
) -> AsyncIterator[Backend]:
    """A real ``arbor acp`` subprocess, initialized by the SDK's own client connection; ``tap`` records
    the traffic from the first byte (tests/support/wire.py)."""
    proc = await asyncio.create_subprocess_exec(
        *BACKEND,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        limit=50 * 1024 * 1024,
    )
    assert proc.stdin is not None and proc.stdout is not None
    if tap is not None:
        tap.attach(proc)
    client = client or RecordingClient()
    conn = connect_to_agent(client, proc.stdin, proc.stdout)
    try:
        init = await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=capabilities or ClientCapabilities(),
                client_info=Implementation(name="arbor-tests", version="0"),
            ),
            timeout=30,
        )
        yield Backend(conn, client, proc, init)
    finally:
        await close_backend(conn, proc)


WANTS_TREE = ClientCapabilities(field_meta={META_KEY: {"tree": True}})


def tree_events(client: RecordingClient) -> list[TreeEvent]:
    return [
        TreeEvent.model_validate(event)
        for method, params in client.notifications
        if method == TREE_NOTIFICATION
        for event in params["events"]
    ]
