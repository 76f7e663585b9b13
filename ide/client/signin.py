"""Signing in to another agent where nobody can be asked (``arbor run --agent``, ``arbor eval --agent``):
an env-var method whose variables the agent's environment holds is sent with ``authenticate``, else what
to do is said. The window asks in its dialog instead (:mod:`ide.app.sessions.auth`); both read the
methods with :mod:`ide.client.auth`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ide.client.auth import AuthMethod, EnvVarMethod, TerminalMethod, authenticate, terminal_command


class SignInNeeded(Exception):
    """An agent that will not open a session until the user signs in, where no one can be asked (``arbor
    run --agent``, ``arbor eval --agent``); the message says what the agent said and each way to sign in."""


async def sign_in_unattended(
    conn: Any,
    agent: str,
    command: Sequence[str],
    methods: Sequence[AuthMethod],
    env: Mapping[str, str],
    refusal: str,
) -> None:
    """Sign in without a user: an env-var method whose required variables are all in the agent's ``env``
    is sent with ``authenticate`` (as the window does after its dialog; Codex reads its key only then).
    :class:`SignInNeeded` when no method can be done so, or the agent refused it; the message names every
    method and how to do it."""
    for method in methods:
        if isinstance(method, EnvVarMethod) and not method.missing(env):
            said = await authenticate(conn, method.id)
            if said is None:
                return
            raise SignInNeeded(f"{agent} refused to sign in with {method.name}: {said}")
    raise SignInNeeded(sign_in_advice(agent, command, methods, refusal))


def sign_in_advice(agent: str, command: Sequence[str], methods: Sequence[AuthMethod], refusal: str) -> str:
    """What to tell a user at a terminal whose agent asks to sign in: its words, then each method."""
    lines = [f"{agent} needs you to sign in first ({refusal})."]
    for method in methods:
        if isinstance(method, EnvVarMethod):
            names = ", ".join(v.name + (" (optional)" if v.optional else "") for v in method.vars)
            lines.append(
                f"- {method.name}: set {names} in its [agents.{agent}] env (Arbor's window stores it: "
                "the sign-in dialog), then run again"
            )
        elif isinstance(method, TerminalMethod):
            lines.append(f"- {method.name}: run once in a terminal: {terminal_command(command, method)}")
        else:
            lines.append(f"- {method.name}: sign in from Arbor's window (the agent does it itself)")
    if not methods:
        lines.append("- it lists no way to sign in: see its own documentation")
    return "\n".join(lines)
