"""A client's session requests (ide.client.sessions): a session's config options come from the agent's
``session/new`` answer, and ``session/set_config_option`` gives the options after it, a refusal or nothing."""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import NewSessionResponse, SessionConfigOptionBoolean, SetSessionConfigOptionResponse

from ide.client import sessions
from ide.protocol import ErrorInfo

FAST = SessionConfigOptionBoolean(type="boolean", id="fast", name="Fast", current_value=True)


class FakeConn:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.sets: list[tuple[str, str, Any]] = []

    async def new_session(self, cwd: str, mcp_servers: list[Any]) -> NewSessionResponse:
        return NewSessionResponse(session_id="s1", config_options=[FAST])

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool) -> Any:
        self.sets.append((session_id, config_id, value))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_a_new_sessions_config_options_are_the_agents_answer() -> None:
    opened = await sessions.open_session(FakeConn(None), "/w", None, False, lambda: None, lambda _m: None)
    assert opened.session_id == "s1" and opened.config_options == (FAST,)


async def test_setting_an_option_gives_the_options_after_it_a_refusal_or_nothing() -> None:
    conn = FakeConn(SetSessionConfigOptionResponse(config_options=[FAST]))
    assert await sessions.set_config_option(conn, "s1", "fast", True) == (FAST,)
    assert conn.sets == [("s1", "fast", True)]
    refused = await sessions.set_config_option(
        FakeConn(RequestError.invalid_params({"why": "no"})), "s1", "x", "y"
    )
    assert isinstance(refused, ErrorInfo)
    assert await sessions.set_config_option(FakeConn(None), "s1", "fast", False) is None  # updates tell
