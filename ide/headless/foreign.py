"""``arbor run --agent NAME|"CMD ARGS"``: drive another ACP agent from a terminal, with its changes captured.

The terminal's adapter over the one foreign-agent session (:class:`~ide.client.foreign.ForeignSession`),
as the window's is its Qt one. The agent never sees the workspace: Arbor's backend (``arbor acp``, started
as ``arbor run`` starts it) makes a shadow workspace (``_arbor/external/shadow``), the agent is started
there and its ``session/new`` names it, and its ``fs/*`` calls are served from it. Whatever the agent
changes there — through ``fs/write_text_file``, its own tools or a shell command — is captured after each
tool call (stderr names the files that call changed) and at the turn's end into a review session
(``_arbor/external/capture``), whose change set is printed as the unified diff ``arbor run`` prints for
Arbor's own agent; ``--apply`` accepts and applies it through the same Apply (checkpoint, three-way
merge, commit). Command permissions are answered allow-once with ``--allow-commands``, else rejected
with a note. The agent's environment is by allow-list (:func:`ide.childenv.agent_env`): the base set,
the variables its ``[agents]`` entry's ``pass_env`` names, its ``env``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from acp import RequestError, connect_to_agent, text_block
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from ide.childenv import agent_env
from ide.client import agentconn, auth, signin
from ide.client.agentproc import ARBOR_AGENT, AgentChoice, cli_argv, error_from_request
from ide.client.events import SessionEvent, ToolCallDone
from ide.client.foreign import ForeignSession
from ide.client.notifications import quiet_unknown_notifications
from ide.client.process import (
    EOF_GRACE_S,
    StderrTail,
    drain_stderr,
    on_stop_signals,
    signal_group,
    spawn_agent,
)
from ide.headless import (
    BACKEND_COMMAND,
    BACKEND_GRACE_S,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    LOG_TAIL_LINES,
    EscapedText,
    TerminalClient,
    apply_and_report,
    close_backend,
    marked_diff,
)
from ide.protocol.foreign import ForeignCapture
from ide.protocol.standard import SESSION_NEW


class ForeignClient(TerminalClient):
    """The foreign agent's client: prints its turn, serves its ``fs/*`` from the shadow (through the
    session's backend), answers its command permissions."""

    def __init__(self, out: TextIO, err: TextIO, session: ForeignSession, *, allow_commands: bool) -> None:
        super().__init__(out, err)
        self.session = session
        self.allow_commands = allow_commands
        self.refused = 0
        """Permissions refused (without ``--allow-commands``)."""
        self._captures: list[asyncio.Future[None]] = []

    def on_event(self, event: SessionEvent) -> None:
        """Print the event; after each tool call the agent reports done, capture the shadow and say which
        files that call changed (the turn's end captures again: that change set is the one printed)."""
        super().on_event(event)
        if isinstance(event, ToolCallDone):
            self._captures.append(asyncio.ensure_future(self._capture_after(event.title or "a tool call")))

    async def _capture_after(self, title: str) -> None:
        captured = await self.session.capture_after(final=False)
        if captured is not None and captured[1].files:
            self.err.write(f"[review] {title}: {captured[1].listed}\n")

    async def captures_done(self) -> None:
        """Wait for the captures started after tool calls (their failures only cost the attribution)."""
        await asyncio.gather(*self._captures, return_exceptions=True)

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        """Allow once with ``--allow-commands`` (the command runs in the shadow), else reject once."""
        kind = "allow_once" if self.allow_commands else "reject_once"
        choice = next((o for o in options if o.kind == kind), None)
        title = getattr(tool_call, "title", None) or "a command"
        if self.allow_commands and choice is not None:
            self.err.write(f"\n[permission] {title}: allowed once (it runs in the shadow workspace)\n")
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=choice.option_id)
            )
        self.refused += 1
        self.err.write(f"\n[permission] {title}: refused (run with --allow-commands to let it run)\n")
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice.option_id)
        )

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=await self.session.read(path, line, limit))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        await self.session.write(path, content)
        return WriteTextFileResponse()


@dataclass(frozen=True)
class CliTurn:
    """How a CLI agent's run ended: ``end_turn`` (exit 0), ``exited`` (another exit code, in
    :attr:`exit_code`) or ``cancelled``."""

    stop_reason: str
    exit_code: int | None = None


class ForeignRun:
    """Arbor's backend holding a shadow of the workspace and its review (the :class:`ForeignSession`), and
    the foreign agent working in it, for as many turns as :meth:`turn` is called; ``async with`` starts and
    stops all of it (the shadow is removed, whatever happened)."""

    def __init__(
        self,
        workspace: str,
        agent: AgentChoice,
        out: TextIO,
        err: TextIO,
        *,
        allow_commands: bool = False,
        backend_command: list[str] | None = None,
        confine: Sequence[str] | None = None,
        backend_env: dict[str, str] | None = None,
    ) -> None:
        self.workspace, self.agent, self.out, self.err = workspace, agent, out, err
        self.allow_commands = allow_commands
        # backend_env: what Arbor's backend adds to its environment (an evaluation's config and data dirs).
        backend = AgentChoice(ARBOR_AGENT, backend_command or BACKEND_COMMAND, dict(backend_env or {}))
        self.session = ForeignSession(workspace, backend, meta=lambda: {"review": True}, client="arbor-run")
        self.session.writable = confine  # not None: under bwrap, writing only its shadow, its /tmp and these
        self.conn: Any = None
        """The connection to the foreign agent."""
        self.session_id: str | None = None
        self.client: ForeignClient | None = None
        self.log_tail = StderrTail(max_lines=LOG_TAIL_LINES)
        """The foreign agent's last stderr lines (what it said before it died)."""
        self._foreign: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Future[None] | None = None
        self._turns = 0
        self._cancelled = False

    @property
    def review(self) -> Any:
        """The connection to Arbor's backend, where the review session is (``_arbor/review/*``)."""
        return self.session.conn

    @property
    def review_id(self) -> str | None:
        return self.session.session_id

    @property
    def shadow_cwd(self) -> str | None:
        return self.session.shadow

    async def __aenter__(self) -> ForeignRun:
        try:
            await self._start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _start(self) -> None:
        session = self.session
        await session.start()
        shadow = await session.open_shadow(self.agent.name)
        for note in shadow.notes:
            self.err.write(f"[shadow] {note}\n")
        self.err.write(f"[shadow] {self.agent.name} works in a shadow of the workspace: {shadow.cwd}\n")
        if session.writable is not None:
            session.command(
                self.agent.command, self.agent.env
            )  # refused now, before any turn, if it cannot be
            writable = ", ".join([shadow.cwd, f"{session.scratch} (its TMPDIR)", *session.writable])
            self.err.write(f"[shadow] confined with bwrap: it can write only {writable}\n")
        if self.agent.protocol == "cli":
            if self.allow_commands:
                self.err.write("[shadow] a CLI agent runs its commands itself, in the shadow: nothing asks\n")
            return  # started once per task, by turn()
        env = agent_env(self.agent.env, self.agent.pass_env, shadow.cwd)
        command = session.command(self.agent.command, self.agent.env)
        self._foreign = foreign = await spawn_agent(command, env, shadow.cwd, keep=True)
        assert foreign.stdin is not None and foreign.stdout is not None and foreign.stderr is not None
        self._drain = asyncio.ensure_future(drain_stderr(foreign.stderr, self.log_tail))
        self.client = ForeignClient(self.out, self.err, session, allow_commands=self.allow_commands)
        quiet_unknown_notifications()  # Qwen Code's own notifications, once a turn
        self.conn = connect_to_agent(self.client, foreign.stdin, foreign.stdout)  # type: ignore[arg-type]
        hello = await agentconn.initialize(self.conn, meta={}, client="arbor-run", fs=True)
        try:
            created = await agentconn.within(
                self.conn.new_session(cwd=shadow.cwd, mcp_servers=[]), SESSION_NEW
            )
        except RequestError as exc:
            if not auth.is_auth_required(exc):
                raise
            methods = auth.read_methods(hello.auth_methods)
            refusal = auth.error_message(exc)
            await signin.sign_in_unattended(
                self.conn, self.agent.name, self.agent.command, methods, env, refusal
            )
            created = await agentconn.within(
                self.conn.new_session(cwd=shadow.cwd, mcp_servers=[]), SESSION_NEW
            )
        self.session_id = created.session_id

    async def turn(self, task: str) -> tuple[Any, ForeignCapture]:
        """One prompt turn: the shadow first takes in what the user decided and edited since the last one
        (``_arbor/external/turn_start``, which also takes the first task as the commit's subject); then
        the agent works; then the shadow is captured. Returns the agent's ``PromptResponse`` and the
        capture."""
        started = await self.session.turn_start(task)
        assert started is not None  # it works in a shadow
        for path in started.conflicts:
            self.err.write(f"[shadow] {path}: your edits and the agent's overlap; the agent keeps its own\n")
        self._turns += 1
        if self.agent.protocol == "cli":
            response: Any = await self._cli_turn(task)
        else:
            assert self.conn is not None and self.client is not None
            response = await self.conn.prompt(session_id=self.session_id, prompt=[text_block(task)])
            self.out.write("\n")
            self.err.write(f"[done] {response.stop_reason}\n")
            await self.client.captures_done()
        captured = await self.session.capture(workspace=True)
        assert captured is not None
        for path, why in captured.skipped.items():
            self.err.write(f"[review] not captured: {path}: {why}\n")
        if captured.workspace_changed:
            listed = ", ".join(captured.workspace_changed)
            self.err.write(
                f"[review] written outside review: {listed} changed in the workspace itself during the turn "
                "(not by Arbor: the agent wrote outside its shadow, or you edited meanwhile)\n"
            )
        for change in captured.git_changed:
            self.err.write(f"[review] your repository's git state changed during the turn: {change}\n")
        return response, captured

    async def _cli_turn(self, task: str) -> CliTurn:
        """Run a CLI agent once for ``task`` in the shadow, its output streamed through; how it ended."""
        assert self.shadow_cwd is not None
        env = agent_env(self.agent.env, self.agent.pass_env, self.shadow_cwd)
        argv = self.session.command(cli_argv(self.agent.command, task), self.agent.env)
        self._foreign = process = await spawn_agent(argv, env, self.shadow_cwd, keep=True)
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.close()  # a question on stdin is answered with end of file, never waits
        self._drain = asyncio.ensure_future(drain_stderr(process.stderr, self.log_tail, self.err))
        while chunk := await process.stdout.read(4096):
            self.out.write(chunk.decode("utf-8", errors="replace"))
        code = await process.wait()
        await self.agent_said()
        self.out.write("\n")
        if self._cancelled:
            self.err.write("[done] cancelled\n")
            return CliTurn("cancelled")
        self.err.write(f"[done] exit {code}\n")
        return CliTurn("end_turn", code) if code == 0 else CliTurn("exited", code)

    def cancel(self) -> None:
        """Ask the agent to end the running turn (Ctrl-C); a CLI agent's process group gets SIGTERM."""
        self._cancelled = True
        if self.agent.protocol == "cli" and self._foreign is not None and self._foreign.returncode is None:
            signal_group(self._foreign, signal.SIGTERM)
            return
        if self.conn is not None and self.session_id is not None:
            task = asyncio.ensure_future(agentconn.cancel(self.conn, self.session_id))
            task.add_done_callback(lambda _: None)

    async def agent_said(self) -> str:
        """The foreign agent's last stderr lines, once it has written them."""
        if self._drain is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._drain), 1.0)
        return self.log_tail.text()

    async def aclose(self) -> None:
        """Stop the agent, remove the shadow, stop Arbor's backend."""
        if self._foreign is not None:
            # As the window stops one (ide.client.link): a second from the end of its input, then SIGTERM.
            # codex-acp does not exit when its input closes; five seconds here kept every `arbor run
            # --agent` with Codex open five seconds after its answer.
            await close_backend(self.conn, self._foreign, EOF_GRACE_S)
        if self._drain is not None:
            await self.agent_said()  # its last words explain a death: read them before stopping the drain
            self._drain.cancel()
        await self.session.aclose(eof_grace=BACKEND_GRACE_S)
        self._foreign = self._drain = None
        self.session.remove_scratch()


async def run_foreign(
    workspace: str,
    task: str,
    agent: AgentChoice,
    *,
    allow_commands: bool = False,
    apply: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    backend_command: list[str] | None = None,
    confine: Sequence[str] | None = None,
) -> int:
    """Run one turn of ``agent`` on a shadow of ``workspace`` (absolute) and print or apply what it
    changed; the exit code says how it ended."""
    out, err = EscapedText(out), EscapedText(err)  # type: ignore[assignment]
    run = ForeignRun(
        workspace,
        agent,
        out,
        err,
        allow_commands=allow_commands,
        backend_command=backend_command,
        confine=confine,
    )
    # SIGTERM ends the turn as Ctrl-C does: agent, backend and shadow go.
    stop_handlers = contextlib.ExitStack()
    stop_handlers.enter_context(on_stop_signals(run.cancel))
    try:
        async with run:
            response, captured = await run.turn(task)
            if response.stop_reason == "cancelled":
                return EXIT_CANCELLED
            if not captured.changeset.files:
                err.write("[review] the agent changed nothing\n")
            elif not apply:
                out.write(marked_diff(captured.changeset))
                err.write("[review] nothing was written; run again with --apply to apply these changes\n")
            elif response.stop_reason != "end_turn":
                out.write(marked_diff(captured.changeset))
                code = getattr(response, "exit_code", None)
                why = f"it exited with code {code}" if code is not None else response.stop_reason
                err.write(
                    f"[review] not applied: the agent did not finish its turn ({why}); nothing was written\n"
                )
            elif not await apply_and_report(run.review, run.review_id, err):
                return EXIT_FAILED
            return EXIT_OK if response.stop_reason == "end_turn" else EXIT_FAILED
    except RequestError as exc:
        err.write(f"\narbor: {error_from_request(exc).text()}\n")
        return EXIT_FAILED
    except agentconn.NoAnswer as exc:
        err.write(f"\narbor: {exc.info.text()}\n")
        return EXIT_FAILED
    except signin.SignInNeeded as exc:
        err.write(f"\narbor: {exc}\n")
        return EXIT_FAILED
    except ConnectionError:
        err.write("\narbor: the agent or Arbor's backend stopped unexpectedly\n")
        said = run.log_tail.text()
        err.write(f"{said}\n" if said else "")
        return EXIT_FAILED
    except OSError as exc:  # after ConnectionError, which is one too
        err.write(f"\narbor: cannot start the agent `{shlex.join(agent.command)}`: {exc.strerror or exc}\n")
        return EXIT_FAILED
    finally:
        stop_handlers.close()
