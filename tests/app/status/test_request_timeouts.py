"""Every request the window sends has a timeout and an answer (issue 27, item 7): a backend that never
answers — as ``arbor acp`` does for a line over its 50 MB limit, whose error carries no id — gives the
caller an error naming the method and the time, the request is forgotten, and a late answer is dropped.

The peer is a real process speaking ACP on stdio (``tests/support/silent_agent.py``); the test's own
method is declared with a short limit, and the real ones are given short ones through the bridge's
``timeouts``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from pydantic import BaseModel

from ide.app.acp_client import BackendBridge
from ide.app.background import spawn
from ide.app.foreign.review_backend import ReviewBackend
from ide.client import agentconn
from ide.client.agentproc import AgentChoice
from ide.protocol import ErrorInfo
from ide.protocol.foreign import FOREIGN_WRITE
from ide.protocol.method import Method
from ide.protocol.standard import SESSION_NEW, SESSION_SET_MODE
from tests.support.window import BACKEND_START_TIMEOUT_MS

pytestmark = pytest.mark.window

SILENT_AGENT = [sys.executable, str(Path(__file__).parents[2] / "support" / "silent_agent.py")]
SHORT = 0.3
WAIT_MS = 10_000


class Nothing(BaseModel):
    pass


class Answer(BaseModel):
    ok: bool
    late: bool


SLOW = Method("arbor/test/slow", Nothing, Answer, timeout_s=SHORT)
RELEASE = Method("arbor/test/release", Nothing, Answer)


def reaped(process: Any) -> bool:
    return process is None or process.returncode is not None


@pytest.fixture
def make_bridge(qtbot: Any, qloop: Any, tmp_path: Path) -> Iterator[Any]:
    bridges: list[BackendBridge] = []

    def make(silent: str, timeouts: agentconn.RequestTimeouts | None = None) -> BackendBridge:
        bridge = BackendBridge(tmp_path, AgentChoice("silent", SILENT_AGENT, {"SILENT_METHODS": silent}))
        if timeouts is not None:
            bridge.timeouts = timeouts
        bridges.append(bridge)
        return bridge

    yield make
    for bridge in bridges:
        bridge.kill()
        qtbot.waitUntil(lambda b=bridge: reaped(b.process), timeout=WAIT_MS)


def started(qtbot: Any, bridge: BackendBridge) -> BackendBridge:
    with qtbot.waitSignal(bridge.sessionReady, timeout=BACKEND_START_TIMEOUT_MS):
        bridge.start()
    return bridge


def pending_requests(bridge: BackendBridge) -> dict[int, Any]:
    """The SDK connection's requests still waiting for an answer."""
    return bridge._link.conn._conn._pending  # type: ignore[union-attr]


def test_a_query_without_an_answer_gets_an_error_and_its_late_answer_is_dropped(
    qtbot: Any, make_bridge: Any
) -> None:
    bridge = started(qtbot, make_bridge("_arbor/test/slow"))
    results: list[Answer] = []
    errors: list[ErrorInfo] = []
    assert bridge.request(SLOW, Nothing(), results.append, errors.append)

    qtbot.waitUntil(lambda: bool(errors), timeout=WAIT_MS)
    assert errors[0].message == f"The backend did not answer _arbor/test/slow within {SHORT:g} s."
    assert "It may still finish" in (errors[0].fix or "")
    assert results == [] and pending_requests(bridge) == {}

    # The peer now answers the slow request, then this one: by this answer, the late one was read too.
    assert bridge.request(RELEASE, Nothing(), results.append, errors.append)
    qtbot.waitUntil(lambda: bool(results), timeout=WAIT_MS)
    assert results == [Answer(ok=True, late=False)] and len(errors) == 1
    assert bridge.state == "ready"


def test_an_unanswered_request_without_a_handler_is_reported_by_the_window(
    qtbot: Any, make_bridge: Any
) -> None:
    bridge = started(qtbot, make_bridge("_arbor/test/slow"))
    with qtbot.waitSignal(bridge.errorRaised, timeout=WAIT_MS) as raised:
        assert bridge.request(SLOW, Nothing(), lambda _answer: None)
    assert "did not answer _arbor/test/slow" in raised.args[0].message


def test_a_session_that_is_never_opened_stops_the_backend_with_the_reason(
    qtbot: Any, make_bridge: Any
) -> None:
    bridge = make_bridge("session/new", agentconn.RequestTimeouts({SESSION_NEW: SHORT}))
    with qtbot.waitSignal(bridge.errorRaised, timeout=BACKEND_START_TIMEOUT_MS) as raised:
        bridge.start()
    assert raised.args[0].message == f"The backend did not answer session/new within {SHORT:g} s."
    qtbot.waitUntil(lambda: bridge.state == "stopped", timeout=WAIT_MS)


def test_a_mode_switch_without_an_answer_keeps_the_mode_and_says_why(qtbot: Any, make_bridge: Any) -> None:
    bridge = started(qtbot, make_bridge("session/set_mode"))
    bridge.timeouts = agentconn.RequestTimeouts({SESSION_SET_MODE: SHORT})
    errors: list[ErrorInfo] = []
    modes: list[str] = []
    bridge.errorRaised.connect(errors.append)
    bridge.modeChanged.connect(modes.append)
    assert bridge.set_mode("plan")
    qtbot.waitUntil(lambda: bool(errors and modes), timeout=WAIT_MS)
    assert errors[0].message == f"The backend did not answer session/set_mode within {SHORT:g} s."
    assert modes == [""] and bridge.mode is None


def test_a_foreign_agents_write_the_review_backend_drops_fails_instead_of_hanging(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    review = ReviewBackend(tmp_path, AgentChoice("silent", SILENT_AGENT, {}))
    review.session.timeouts = agentconn.RequestTimeouts({FOREIGN_WRITE: SHORT})
    target = tmp_path / "big.py"
    task = spawn(review.write_text_file("foreign", str(target), "x = 1\n"), name="foreign write")
    try:
        qtbot.waitUntil(task.done, timeout=BACKEND_START_TIMEOUT_MS)
        error = task.exception()
        assert isinstance(error, RequestError)
        said = f"Arbor's review backend did not answer _arbor/external/write within {SHORT:g} s"
        assert str(error) == f"fs/write_text_file: {said}"
        assert review.session.conn is not None and review.session.conn._conn._pending == {}
    finally:
        task.cancel()
        spawn(review.aclose(), name="close review")
        qtbot.waitUntil(lambda: reaped(review.process), timeout=WAIT_MS)
