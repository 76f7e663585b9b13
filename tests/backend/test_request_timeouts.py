"""Every request's time limit is declared with it — an ``_arbor/*`` :class:`Method` in ``ide/protocol``,
ACP's own requests in ``ide.protocol.standard`` — and ``ide.client.agentconn`` waits exactly that long (issue
47,
item 4). ``arbor run --apply`` shares the window's request path: an Apply the backend never answers ends
with Arbor's error naming the method and the time, not a hang (issue 27, item 7)."""

from __future__ import annotations

import asyncio
import copy
import importlib
import os
import pickle
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from pydantic import BaseModel

import ide.protocol
from ide.client import agentconn, sessions
from ide.client.agentproc import AgentProcess
from ide.protocol import ErrorInfo, error_info_from_data
from ide.protocol import foreign as ex
from ide.protocol import model as md
from ide.protocol import review as rv
from ide.protocol import standard as st
from ide.protocol.method import QUERY_TIMEOUT_S, Method, Request

SILENT_AGENT = [sys.executable, str(Path(__file__).parents[1] / "support" / "silent_agent.py")]
SHORT = 0.3
TINY = 0.05

WORK = {
    rv.APPLY: 600.0,  # a checkpoint, the writes and a git commit
    rv.ROLLBACK: 600.0,
    md.MODEL_PROBE: 300.0,
    ex.FOREIGN_WRITE: 120.0,
    ex.FOREIGN_SHADOW: 600.0,
    ex.FOREIGN_CAPTURE: 300.0,
    ex.FOREIGN_TURN_START: 300.0,
}
"""The ``_arbor/*`` methods that do work rather than answer a query, with their limits."""

STANDARD = {
    st.INITIALIZE: 60.0,
    st.SESSION_NEW: 60.0,
    st.SESSION_LOAD: 120.0,
    st.SESSION_LIST: 30.0,
    st.SESSION_SET_MODE: 30.0,
    st.SESSION_SET_CONFIG_OPTION: 30.0,
    st.AUTHENTICATE: 300.0,  # an agent method may wait for a browser sign-in
    st.SESSION_PROMPT: None,  # a turn: as long as the model works, until Stop
}


def declared() -> list[tuple[str, Request]]:
    """Every request declared in ``ide/protocol``, as (module.NAME, declaration)."""
    found = []
    for info in pkgutil.iter_modules(ide.protocol.__path__, "ide.protocol."):
        module = importlib.import_module(info.name)
        found += [
            (f"{info.name}.{name}", value)
            for name, value in vars(module).items()
            if isinstance(value, Request)
        ]
    return found


def test_every_declared_request_has_the_limit_of_its_kind() -> None:
    requests = {request: name for name, request in declared()}
    methods = [request for request in requests if isinstance(request, Method)]
    assert len(methods) >= 29 and set(WORK) <= set(methods)
    assert QUERY_TIMEOUT_S == 60.0
    for method in methods:
        if method in WORK:
            assert method.timeout_s == WORK[method], requests[method]
        else:  # a query: someone waits for its answer
            assert method.timeout_s is not None and 0 < method.timeout_s <= 60.0, requests[method]
    standard = {request: request.timeout_s for request in requests if not isinstance(request, Method)}
    assert standard == STANDARD
    assert (rv.APPLY.wire_name, st.SESSION_NEW.wire_name) == ("_arbor/review/apply", "session/new")


def test_a_declaration_keeps_its_limit_through_copy_and_pickle() -> None:
    for request in (rv.APPLY, ex.FOREIGN_READ, st.SESSION_PROMPT, st.SESSION_LOAD):
        for clone in (copy.deepcopy(request), pickle.loads(pickle.dumps(request))):
            assert clone == request and type(clone) is type(request) and vars(clone) == vars(request)


class Nothing(BaseModel):
    pass


NEVER = Method("arbor/test/never", Nothing, Nothing, timeout_s=TINY)


class Unanswering:
    """A client connection that sends every request and never hears an answer; it notes the waits that
    were given up."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.abandoned: list[str] = []

    async def _never(self, method: str) -> Any:
        self.sent.append(method)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.abandoned.append(method)
            raise

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._never(f"_{method}")

    async def new_session(self, **kwargs: Any) -> Any:
        return await self._never("session/new")


async def test_call_and_ask_wait_as_long_as_the_method_says() -> None:
    conn = Unanswering()
    with pytest.raises(agentconn.NoAnswer) as late:
        await asyncio.wait_for(agentconn.call(conn, NEVER, Nothing()), 10)
    assert (late.value.method, late.value.seconds) == ("_arbor/test/never", TINY)
    asked = await asyncio.wait_for(agentconn.ask(conn, NEVER, Nothing()), 10)
    assert isinstance(asked, ErrorInfo)
    assert asked.message == f"The backend did not answer _arbor/test/never within {TINY:g} s."
    assert conn.sent == conn.abandoned == ["_arbor/test/never"] * 2  # each wait was given up, not left


async def test_a_caller_may_wait_less_than_declared() -> None:
    conn = Unanswering()
    shorter = agentconn.RequestTimeouts({st.SESSION_NEW: TINY, rv.APPLY: TINY})
    opened = sessions.open_session(conn, "/ws", None, False, lambda: None, lambda _why: None, shorter)
    with pytest.raises(agentconn.NoAnswer) as late:
        await asyncio.wait_for(opened, 10)
    assert (late.value.method, late.value.seconds) == ("session/new", TINY)
    assert shorter.of(rv.APPLY) == TINY and shorter.of(rv.ROLLBACK) == 600.0
    assert agentconn.DEFAULT_TIMEOUTS.of(rv.APPLY) == 600.0
    assert agentconn.DEFAULT_TIMEOUTS.of(st.SESSION_PROMPT) is None


async def apply_without_answer() -> RequestError:
    agent = await AgentProcess.spawn(SILENT_AGENT, {**os.environ, "SILENT_METHODS": "_arbor/review/apply"})
    callbacks = agentconn.ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
    conn = agentconn.connect(agent, callbacks)
    try:
        await agentconn.initialize(conn, meta={"review": True}, client="arbor-run")
        timeouts = agentconn.RequestTimeouts({rv.APPLY: SHORT})
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
