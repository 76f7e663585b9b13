"""The bridge reads each session's ``session/update`` stream once, with one fold (ide.client), and gives the
parts its events: a tool call's later update carries what the call said before, a mode update moves the
bridge's mode, and another session starts from nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import start_tool_call, text_block, update_agent_message, update_tool_call
from acp.schema import CurrentModeUpdate

from ide.app.acp_client import BackendBridge
from ide.client.events import MessageChunk, ModeChanged, ToolCallDone, ToolCallStarted


def test_the_bridge_folds_each_sessions_updates_once(qapp: Any, tmp_path: Path) -> None:
    bridge = BackendBridge(tmp_path)
    events: list[Any] = []
    modes: list[str] = []
    bridge.sessionEvent.connect(events.append)
    bridge.modeChanged.connect(modes.append)

    def update(session_id: str, payload: Any) -> None:
        """What the connection's callback gets for a notification of ``session_id``."""
        bridge._on_update(bridge._link.generation, session_id, payload)

    bridge.session_id = "s1"
    update("s1", start_tool_call("c1", "Read a.py", kind="read", status="in_progress"))
    update("s1", update_tool_call("c1", status="completed", raw_output="x = 1"))
    update("old", update_agent_message(text_block("a session no longer shown")))
    update("s1", CurrentModeUpdate(session_update="current_mode_update", current_mode_id="lats"))
    started, done, mode = events
    assert isinstance(started, ToolCallStarted) and isinstance(done, ToolCallDone)
    assert (done.title, done.kind, done.raw_output) == ("Read a.py", "read", "x = 1")
    assert mode == ModeChanged("lats") and bridge.mode == "lats" and modes == ["lats"]

    bridge.session_id = "s2"
    update("s2", update_tool_call("c1", status="failed"))
    update("s2", update_agent_message(text_block("hi")))
    failed, chunk = events[3:]
    assert isinstance(failed, ToolCallDone) and (failed.title, failed.kind) == ("", None)
    assert isinstance(chunk, MessageChunk) and chunk.text == "hi"
