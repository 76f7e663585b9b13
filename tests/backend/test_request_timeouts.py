"""``arbor run --apply`` shares the window's request path (``ide.agentconn``): an Apply the backend never
answers ends with Arbor's error naming the method and the time, not a hang (issue 27, item 7)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from acp import RequestError

from ide import agentconn
from ide.agentproc import AgentProcess
from ide.protocol import error_info_from_data

SILENT_AGENT = [sys.executable, str(Path(__file__).parents[1] / "support" / "silent_agent.py")]
SHORT = 0.3


async def apply_without_answer() -> RequestError:
    agent = await AgentProcess.spawn(SILENT_AGENT, {**os.environ, "SILENT_METHODS": "_arbor/review/apply"})
    callbacks = agentconn.ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
    conn = agentconn.connect(agent, callbacks)
    try:
        await agentconn.initialize(conn, meta={"review": True}, client="arbor-run")
        timeouts = agentconn.RequestTimeouts({"_arbor/review/apply": SHORT})
        with pytest.raises(RequestError) as refused:
            await asyncio.wait_for(agentconn.apply_all(conn, "s", timeouts), 10)
        assert conn._conn._pending == {}  # the request was forgotten: a late answer matches nothing
        return refused.value
    finally:
        await agent.stop(conn)


def test_an_apply_without_an_answer_fails_with_the_reason() -> None:
    error = asyncio.run(apply_without_answer())
    info = error_info_from_data(error.data)
    assert info is not None
    assert info.message == f"The backend did not answer _arbor/review/apply within {SHORT:g} s."
    assert info.fix and "look before you repeat a change (Apply, Rollback)" in info.fix
