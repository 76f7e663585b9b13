"""An ACP agent that is not Arbor and asks its client to authenticate, as agents from the ACP registry do: its
``initialize`` answer lists one method of each kind, and ``session/new`` is refused with "authentication
required" (JSON-RPC -32000) until one of them worked:

- ``api-key`` (env var): ``AUTH_AGENT_KEY`` set in its environment (the key ``wrong`` is refused), with an
  optional, non-secret ``AUTH_AGENT_REGION``; while ``STATE_DIR/strict`` exists the key counts only once
  ``authenticate`` was called with ``api-key`` (as Codex reads its key);
- ``browser`` (agent): ``authenticate`` called with it (refused while ``STATE_DIR/refuse`` exists, never
  answered while ``STATE_DIR/hang`` does, the agent exiting with 3 while ``STATE_DIR/die`` does);
- ``login`` (terminal): the agent's command run with ``--login`` and ``AUTH_AGENT_LOGIN=terminal`` in a
  terminal, which writes ``STATE_DIR/token``.

What happens is recorded as JSON lines in ``STATE_DIR/record.jsonl`` (each start with the key it was given,
each authenticate, each session/new and whether it was allowed).

    python auth_agent.py STATE_DIR [--login]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any
from uuid import uuid4

from acp import InitializeResponse, NewSessionResponse, PromptResponse, RequestError, run_agent
from acp.schema import (
    AuthenticateResponse,
    AuthEnvVar,
    AuthMethodAgent,
    EnvVarAuthMethod,
    Implementation,
    TerminalAuthMethod,
)

KEY, REGION, LOGIN = "AUTH_AGENT_KEY", "AUTH_AGENT_REGION", "AUTH_AGENT_LOGIN"
ASKED = "Sign in first: an API key, a browser sign-in or a terminal login"


def record(state: Path, **event: Any) -> None:
    with (state / "record.jsonl").open("a") as out:
        out.write(json.dumps(event) + "\n")


class AuthAgent:
    def __init__(self, state: Path) -> None:
        self.state = state
        self.signed_in = False
        self.key_sent = False
        """``authenticate`` was called with ``api-key`` (what a strict agent waits for)."""
        record(state, event="start", key=os.environ.get(KEY), region=os.environ.get(REGION))

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_info=Implementation(name="auth-agent", title="Auth agent", version="1"),
            auth_methods=[
                EnvVarAuthMethod(
                    type="env_var",
                    id="api-key",
                    name="API key",
                    description="A key from the example service",
                    vars=[
                        AuthEnvVar(name=KEY, label="API key"),
                        AuthEnvVar(name=REGION, label="Region", secret=False, optional=True),
                    ],
                    link="https://example.com/keys",
                ),
                AuthMethodAgent(
                    id="browser", name="Sign in with a browser", description="Opens your browser"
                ),
                TerminalAuthMethod(
                    type="terminal",
                    id="login",
                    name="Log in in a terminal",
                    description="Asks for your account in the terminal",
                    args=["--login"],
                    env={LOGIN: "terminal"},
                ),
            ],
        )

    def refusal(self) -> str | None:
        """Why a session is refused now, None when it is allowed."""
        if self.signed_in or (self.state / "token").exists():
            return None
        key = os.environ.get(KEY)
        if key == "wrong":
            return f"the key in {KEY} was refused"
        if key and (self.state / "strict").exists() and not self.key_sent:
            return ASKED
        return None if key else ASKED

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        record(self.state, event="authenticate", method=method_id)
        if method_id == "browser":
            if (self.state / "die").exists():  # the agent crashes while signing in
                os._exit(3)
            if (self.state / "hang").exists():  # the user never finishes the sign-in in the browser
                await asyncio.Event().wait()
            if (self.state / "refuse").exists():
                raise RequestError.internal_error({"message": "the browser sign-in was cancelled"})
            self.signed_in = True
        else:
            self.key_sent = method_id == "api-key"
            if self.refusal() is not None:
                raise RequestError.auth_required({"message": self.refusal()})
        return AuthenticateResponse()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        why = self.refusal()
        record(self.state, event="session/new", allowed=why is None)
        if why is not None:
            raise RequestError.auth_required({"message": why})
        return NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


def login(state: Path) -> int:
    if os.environ.get(LOGIN) != "terminal":
        print(f"auth_agent: --login needs {LOGIN}=terminal", file=sys.stderr)
        return 2
    (state / "token").write_text("signed in\n")
    print("Signed in.")
    return 0


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    if "--login" in sys.argv[2:]:
        sys.exit(login(folder))
    asyncio.run(run_agent(AuthAgent(folder)))
