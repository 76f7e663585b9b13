"""A minimal ACP agent that is not Arbor: echoes each prompt back and cannot load sessions.

The window must drive any ACP agent; this one has no ``_meta.arbor``, no modes and no session/load.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

from acp import InitializeResponse, NewSessionResponse, PromptResponse, run_agent, text_block
from acp import update_agent_message as agent_message
from acp.schema import Implementation


class EchoAgent:
    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version, agent_info=Implementation(name="echo", version="1")
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        for block in prompt:
            text = getattr(block, "text", "")
            await self._conn.session_update(
                session_id=session_id, update=agent_message(text_block(f"echo: {text}"))
            )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))
