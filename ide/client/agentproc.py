"""The ACP agent, Qt-free: which agent to run (Arbor's backend, an ``[agents]`` entry, a command line), the
running agent as a client holds it, and what to tell the user when it cannot start or answer. Its
operating-system process (spawn, stderr, signals, stop): :mod:`ide.client.process`; the connection:
:mod:`ide.client.agentconn` and :mod:`ide.client.sessions`.

The window's :class:`~ide.app.acp_client.BackendBridge` and ``arbor run`` (:mod:`ide.headless`) share it.
The ACP SDK is imported only inside functions: the window loads it on a worker thread while the process
starts. So are the wire models (pydantic): the window's first frame does without them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide import self_command
from ide.childenv import agent_env
from ide.client.process import EOF_GRACE_S, StderrTail, drain_stderr, signal_group, spawn_agent, stop_agent
from ide.lifetime import end_group

if TYPE_CHECKING:
    import asyncio

    from acp import RequestError

    from ide.protocol import ErrorInfo
    from ide.settings import AgentServerSettings

log = logging.getLogger(__name__)

BACKEND_COMMAND_ENV = "ARBOR_BACKEND_COMMAND"


def default_backend_command() -> list[str]:
    """``ARBOR_BACKEND_COMMAND`` (shell-quoted) if set, else ``python -m ide acp`` of this interpreter."""
    override = os.environ.get(BACKEND_COMMAND_ENV, "").strip()
    if override:
        return shlex.split(override)
    return self_command("acp")


ARBOR_AGENT = "arbor"
"""The agent name that means Arbor's own backend."""
PROMPT = "{prompt}"
"""Where a CLI agent's command line takes the task (``claude -p {prompt}``)."""


@dataclass(frozen=True)
class AgentChoice:
    """The agent the window drives: a name for menus, its command line and the environment it adds."""

    name: str
    command: list[str]
    env: dict[str, str]
    shadow: bool = True
    """Whether an agent that is not Arbor works in a shadow of the workspace, its changes captured for
    review (False: a backend command given directly — tests — started in the workspace as is)."""
    protocol: str = "acp"
    """``acp``: an ACP agent on stdio; ``cli``: a command run once per task, :data:`PROMPT` in its
    arguments replaced by the task."""
    pass_env: tuple[str, ...] = ()
    """Names of the window's environment variables another agent also gets, as they are (its settings
    entry's ``pass_env``; :mod:`ide.childenv`)."""

    @property
    def is_arbor(self) -> bool:
        return self.name == ARBOR_AGENT

    @property
    def works_in_shadow(self) -> bool:
        return self.shadow and not self.is_arbor

    def environment(self, cwd: str | None = None) -> dict[str, str]:
        """The agent's environment, ``PWD`` = ``cwd`` when given. Another agent's is by allow-list
        (:func:`ide.childenv.agent_env`: the base set, its ``pass_env``, its ``env``); Arbor's backend, or
        one given as is (``shadow=False``), gets the window's whole environment plus its ``env``: it needs
        the keys that reach models."""
        if self.works_in_shadow:
            return agent_env(self.env, self.pass_env, cwd)
        return {**os.environ, **self.env, **({"PWD": cwd} if cwd else {})}

    async def start(self, cwd: str | None = None, command: Sequence[str] | None = None) -> AgentProcess:
        """Start the agent with its :meth:`environment`, in ``cwd`` when given, as ``command`` when given
        (its own, confined); OSError when it cannot be run. Another agent than Arbor runs under the keeper
        (:func:`ide.lifetime.kept`): what it starts ends with this process too."""
        env = self.environment(cwd)
        return await AgentProcess.spawn(command or self.command, env, cwd, keep=not self.is_arbor)

    @classmethod
    def from_settings(cls, name: str, entry: AgentServerSettings) -> AgentChoice:
        """The agent of an ``[agents.NAME]`` entry."""
        return cls(
            name,
            [entry.command, *entry.args],
            dict(entry.env),
            protocol=entry.protocol,
            pass_env=tuple(entry.pass_env),
        )


def arbor_agent() -> AgentChoice:
    """Arbor's own backend (``ARBOR_BACKEND_COMMAND`` when set)."""
    return AgentChoice(ARBOR_AGENT, default_backend_command(), {})


def resolve_agent(spec: str, agents: Mapping[str, Any]) -> AgentChoice:
    """``--agent`` as given: ``arbor``, a name of the ``[agents]`` settings table (each with ``command``,
    ``args``, ``env``, ``pass_env``, ``protocol``), else a shell-quoted command line whose program must
    exist — a CLI agent when an argument holds :data:`PROMPT`. ValueError says why not."""
    text = spec.strip()
    if text.lower() == ARBOR_AGENT:
        return arbor_agent()
    if text in agents:
        return AgentChoice.from_settings(text, agents[text])
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"--agent {spec!r}: not a command line ({exc})") from None
    if not argv:
        raise ValueError("--agent needs a name from [agents] in the settings, or a command line")
    import shutil

    if shutil.which(argv[0]) is None:
        known = ", ".join([ARBOR_AGENT, *agents]) or ARBOR_AGENT
        raise ValueError(
            f"--agent {spec!r}: no agent of that name in the settings ({known}) and no program "
            f"{argv[0]!r} on PATH"
        )
    protocol = "cli" if any(PROMPT in word for word in argv[1:]) else "acp"
    return AgentChoice(command_name(argv), argv, {}, protocol=protocol)


def cli_argv(command: Sequence[str], task: str) -> list[str]:
    """A CLI agent's command line for ``task``: :data:`PROMPT` in its arguments replaced by the task (one
    argument, never through a shell), else the task added as the last argument.

    The task never reads as one of the agent's own options (``claude -p {prompt}`` with the task
    ``--dangerously-skip-permissions``): an argument made from it that would begin with ``-`` where the
    command's word does not begins with a space instead, unless a ``--`` comes before it. Not ``--``
    before ``{prompt}``: after an option that takes a value (``aider --message {prompt}``, ``gemini -p
    {prompt}``) that ``--`` would be taken as the value, or refused; a leading space is a value and a
    positional argument alike, never an option, to any parser. ``--opt={prompt}`` is one option's value
    as it is."""
    words = list(command[1:]) if any(PROMPT in word for word in command[1:]) else [*command[1:], PROMPT]
    argv = [command[0]]
    ended = False
    for word in words:
        argument = word.replace(PROMPT, task)
        if not ended and PROMPT in word and argument.startswith("-") and not word.startswith("-"):
            argument = " " + argument
        argv.append(argument)
        ended = ended or word == "--"
    return argv


INTERPRETERS = re.compile(
    r"^(?:node(?:js)?|bun|deno|npx|pnpm|yarn|python[0-9.]*|pypy[0-9.]*|uv|uvx|pipx|sh|bash|zsh|env|exec)$"
)
"""Programs that run the agent rather than being it: its name is the next word that is not an option."""
GENERIC_STEMS = frozenset({"cli", "main", "index", "run", "__main__", "app", "bin", "start"})
BUILD_DIRS = frozenset({".", "bin", "dist", "build", "lib", "src", "out"})
"""File names that say nothing of the agent (``…/qwen-code/cli.js``): its directory names it then."""


def command_name(argv: Sequence[str]) -> str:
    """A short name for an agent given as a command line, for menus, the review and commit messages: its
    program's name (past an interpreter such as ``node`` or ``python -m``, options and ``VAR=value``
    words), never its arguments — they may carry a key (``--api-key sk-…``)."""
    for word in argv:
        if not word or word.startswith("-") or ("=" in word and "/" not in word.split("=", 1)[0]):
            continue
        path = Path(word)
        name = path.name or word
        if INTERPRETERS.match(name):
            continue
        stem = name.split(".", 1)[0] or name
        if stem in GENERIC_STEMS:
            folder = next((p.name for p in path.parents if p.name and p.name not in BUILD_DIRS), "")
            stem = folder or stem
        return stem[:60]
    return Path(argv[0]).name[:60] if argv else "agent"


def client_version() -> str:
    """Arbor's version as installed (``ide.__version__`` would import the package root's siblings)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("arbor-ide")
    except PackageNotFoundError:
        return "0.0.0+source"


def error_from_request(exc: RequestError) -> ErrorInfo:
    """What to tell the user about a JSON-RPC error: Arbor's classified ErrorInfo, or its plain message."""
    from ide.protocol import ERROR_CODE, ErrorInfo, error_info_from_data

    if exc.code == ERROR_CODE:
        info = error_info_from_data(exc.data)
        if info is not None:
            return info
    message = str(exc)
    if isinstance(exc.data, dict):
        detail = exc.data.get("message") or exc.data.get("details")
        if isinstance(detail, str) and detail:
            message = detail
    kind = "bad_request" if exc.code in (-32600, -32601, -32602) else "internal"
    return ErrorInfo(kind=kind, message=f"The backend refused the request: {message}")


class BackendState(StrEnum):
    """Where the backend is in its life; the status bar shows it and the chat enables buttons by it."""

    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPED = "stopped"


class AgentProcess:
    """A running agent: its process, the tail of its stderr (drained continuously), its polite stop."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        import asyncio

        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self.stderr = StderrTail()
        self._group_ended = False
        self._drain = asyncio.ensure_future(drain_stderr(process.stderr, self.stderr))

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        *,
        keep: bool = False,
    ) -> AgentProcess:
        """Start ``command`` (see :func:`spawn_agent`); OSError when it cannot be run."""
        return cls(await spawn_agent(command, env, cwd, keep=keep))

    async def wait(self) -> int:
        """The exit code, once the process is reaped (what it left in its group SIGKILLed) and its last
        stderr lines are in the tail."""
        import asyncio

        code = await self.process.wait()
        if not self._group_ended:  # once, as it ends: the pid may be another process's group later on
            self._group_ended = True
            end_group(self.process.pid)
        # The last stderr lines explain a death; a grandchild holding the pipe must not delay us.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drain), 1.0)
        return code

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the agent's process group."""
        signal_group(self.process, sig)

    async def stop(self, conn: Any = None, *, eof_grace: float = EOF_GRACE_S) -> None:
        """See :func:`stop_agent`."""
        await stop_agent(self.process, conn, eof_grace=eof_grace)


def start_error(command: Sequence[str], exc: OSError, *, arbor: bool = True) -> ErrorInfo:
    """What to tell the user when the backend command (``arbor``), or another agent's, cannot be run."""
    from ide.protocol import ErrorInfo

    if not arbor:
        return ErrorInfo(
            kind="internal",
            message=f"Cannot start the agent `{shlex.join(command)}`: {exc.strerror or exc}",
            fix="Check its command (Agent menu, [agents] in the settings); `arbor doctor` says whether "
            "bubblewrap can confine it.",
        )
    return ErrorInfo(
        kind="internal",
        message=f"Cannot start the backend `{shlex.join(command)}`: {exc.strerror or exc}",
        fix=f"Check that Arbor is installed in this Python, or set {BACKEND_COMMAND_ENV}.",
    )


def no_answer_error(seconds: float, method: str = "initialize") -> ErrorInfo:
    """What to tell the user when the backend does not answer the request ``method`` in time."""
    from ide.protocol import ErrorInfo

    doctor = "Run `arbor doctor` in a terminal to see what it is waiting for."
    return ErrorInfo(
        kind="internal",
        message=f"The backend did not answer {method} within {seconds:g} s.",
        fix=doctor
        if method == "initialize"
        else "It may still finish: look before you repeat a change (Apply, Rollback). " + doctor,
    )
