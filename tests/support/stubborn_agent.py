"""An ACP agent that is not Arbor and behaves as codex-acp 0.16 does when its client goes: it started a
child of its own (codex-acp's node launcher starts the native ``codex-acp``; here a ``sleep``), and it does
not exit when its input ends. A prompt is answered a chunk at a time, on and on, until it is cancelled;
first comes a notification of its own, as Qwen Code sends one each turn
(``qwen/notify/session/prompt-suggestion``), which no client knows.

    python stubborn_agent.py [CHILD_SECONDS]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any
from uuid import uuid4

from acp import InitializeResponse, NewSessionResponse, PromptResponse, run_agent, text_block
from acp import update_agent_message as agent_message
from acp.schema import Implementation

CHUNK_S = 0.05
OWN_NOTIFICATION = "qwen/notify/session/prompt-suggestion"


class StubbornAgent:
    def __init__(self) -> None:
        self._cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version, agent_info=Implementation(name="stubborn", version="1")
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        # The SDK sends an agent's own notifications only with a leading underscore; Qwen Code's has none.
        await self._conn._conn.send_notification(OWN_NOTIFICATION, {"sessionId": session_id, "text": "next?"})
        while session_id not in self._cancelled:
            await self._conn.session_update(session_id=session_id, update=agent_message(text_block("word ")))
            await asyncio.sleep(CHUNK_S)
        self._cancelled.discard(session_id)
        return PromptResponse(stop_reason="cancelled")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.add(session_id)


async def serve() -> None:
    await run_agent(StubbornAgent())


def main(child_seconds: str) -> None:
    child = subprocess.Popen(["sleep", child_seconds])  # in this process's group, as node's child is
    asyncio.run(serve())
    child.wait()  # the input ended: it stays, as codex-acp does, and so does its child


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "3600")
