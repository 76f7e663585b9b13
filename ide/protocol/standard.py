"""ACP's own requests a client sends, each with how long the client waits for its answer.

Arbor's ``_arbor/*`` methods carry their limits in their :class:`~ide.protocol.method.Method`
declarations; these are the SDK's calls (``conn.initialize``, ``conn.new_session``, …), named here so that
``ide.client.agentconn.within`` takes every limit from a declaration. ``session/cancel`` is a notification: it
waits for nothing.
"""

from __future__ import annotations

from ide.protocol.method import Request

INITIALIZE = Request("initialize", 60.0)  # the backend imports LangGraph and friends before it answers
SESSION_NEW = Request("session/new", 60.0)
SESSION_LOAD = Request("session/load", 120.0)  # replays the session's whole history first
SESSION_LIST = Request("session/list", 30.0)
SESSION_SET_MODE = Request("session/set_mode", 30.0)
SESSION_PROMPT = Request("session/prompt", None)  # a turn lasts as long as the model works; Stop ends it
SESSION_SET_CONFIG_OPTION = Request("session/set_config_option", 30.0)
AUTHENTICATE = Request("authenticate", 300.0)  # an agent method may wait for the user to sign in in a browser
