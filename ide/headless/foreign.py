"""``arbor run --agent NAME|"CMD ARGS"``: drive another ACP agent from a terminal, with its changes captured.

The agent never sees the workspace: Arbor's backend (``arbor acp``, started as ``arbor run`` starts it)
makes a shadow workspace (``_arbor/external/shadow``), the agent is started there and its ``session/new``
names it, and its ``fs/*`` calls are served from it. Whatever the agent changes there — through
``fs/write_text_file``, its own tools or a shell command — is captured after each tool call (stderr
names the files that call changed) and at the turn's end into a review session
(``_arbor/external/capture``), whose change set is printed as the unified diff ``arbor run`` prints for
Arbor's own agent; ``--apply`` accepts and applies it through the same Apply (checkpoint, three-way
merge, commit). Command permissions are answered allow-once with ``--allow-commands``, else rejected
with a note. The agent's environment is by allow-list (:func:`ide.childenv.agent_env`): the base set,
the variables its ``[agents]`` entry's ``pass_env`` names, its ``env``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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
from ide.client import agentconn
from ide.client.agentproc import (
    EOF_GRACE_S,
    AgentChoice,
    AgentProcess,
    StderrTail,
    cli_argv,
    drain_stderr,
    error_from_request,
    on_stop_signals,
    signal_group,
    spawn_agent,
)
from ide.client.events import SessionEvent, ToolCallDone
from ide.headless import (
    BACKEND_COMMAND,
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
from ide.lifetime import scratch_prefix
from ide.protocol import foreign as ex
from ide.protocol.standard import SESSION_NEW
from ide.sandbox import confined


class ForeignClient(TerminalClient):
    """The foreign agent's client: prints its turn, serves its ``fs/*`` from the shadow (through Arbor's
    backend), answers its command permissions."""

    def __init__(
        self, out: TextIO, err: TextIO, review: Any, review_id: str, *, allow_commands: bool
    ) -> None:
        super().__init__(out, err)
        self.review, self.review_id = review, review_id
        self.allow_commands = allow_commands
        self.refused = 0
        """Permissions refused (without ``--allow-commands``)."""
        self._seen: dict[str, tuple[str, ...]] = {}
        """Each captured file's hunk ids as of the last capture: what a tool call changed is what moved."""
        self._captures: list[asyncio.Future[None]] = []
        self._capturing = asyncio.Lock()

    def on_event(self, event: SessionEvent) -> None:
        """Print the event; after each tool call the agent reports done, capture the shadow and say which
        files that call changed (the turn's end captures again: that change set is the one printed)."""
        super().on_event(event)
        if isinstance(event, ToolCallDone):
            self._captures.append(asyncio.ensure_future(self._capture_after(event.title or "a tool call")))

    async def _capture_after(self, title: str) -> None:
        async with self._capturing:
            params = ex.ForeignCaptureParams(session_id=self.review_id)
            captured = await agentconn.call(self.review, ex.FOREIGN_CAPTURE, params)
        now = {f.path: (f.status, *(h.id for h in f.hunks)) for f in captured.changeset.files}
        moved = [path for path, state in now.items() if self._seen.get(path) != state]
        moved += [path for path in self._seen if path not in now]
        self._seen = now
        if moved:
            listed = ", ".join(f"{path} ({now[path][0] if path in now else 'reverted'})" for path in moved)
            self.err.write(f"[review] {title}: {listed}\n")

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
        params = ex.ForeignReadParams(session_id=self.review_id, path=path, line=line, limit=limit)
        answer = await agentconn.call(self.review, ex.FOREIGN_READ, params)
        return ReadTextFileResponse(content=answer.content)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        params = ex.ForeignWriteParams(session_id=self.review_id, path=path, content=content)
        await agentconn.call(self.review, ex.FOREIGN_WRITE, params)
        return WriteTextFileResponse()


@dataclass(frozen=True)
class CliTurn:
    """How a CLI agent's run ended: ``end_turn`` (exit 0), ``exited`` (another exit code, in
    :attr:`exit_code`) or ``cancelled``."""

    stop_reason: str
    exit_code: int | None = None


class ForeignRun:
    """Arbor's backend holding a shadow of the workspace and its review, and the foreign agent working in
    it, for as many turns as :meth:`turn` is called; ``async with`` starts and stops all of it (the shadow
    is removed, whatever happened)."""

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
    ) -> None:
        self.workspace, self.agent, self.out, self.err = workspace, agent, out, err
        self.confine = confine
        """Not None: the agent runs under bwrap, writing only its shadow, a private /tmp and these."""
        self.allow_commands = allow_commands
        self.backend_command = backend_command or BACKEND_COMMAND
        self.review: Any = None
        """The connection to Arbor's backend, where the review session is (``_arbor/review/*``)."""
        self.review_id: str | None = None
        self.shadow_cwd: str | None = None
        self.conn: Any = None
        """The connection to the foreign agent."""
        self.session_id: str | None = None
        self.client: ForeignClient | None = None
        self.log_tail = StderrTail(max_lines=LOG_TAIL_LINES)
        """The foreign agent's last stderr lines (what it said before it died)."""
        self._backend: AgentProcess | None = None
        self._foreign: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Future[None] | None = None
        self._turns = 0
        self._cancelled = False
        self._scratch: str | None = None
        """A confined agent's TMPDIR (removed with the run)."""

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
        self._backend = await AgentProcess.spawn(self.backend_command, os.environ.copy())
        callbacks = agentconn.ClientCallbacks(lambda *_: None, lambda: None, lambda *_: None)
        self.review = agentconn.connect(self._backend, callbacks)
        await agentconn.initialize(self.review, meta={"review": True}, client="arbor-run")
        params = ex.ForeignShadowParams(cwd=self.workspace, agent=self.agent.name)
        shadow = await agentconn.call(self.review, ex.FOREIGN_SHADOW, params)
        self.review_id, self.shadow_cwd = shadow.session_id, shadow.cwd
        for note in shadow.notes:
            self.err.write(f"[shadow] {note}\n")
        self.err.write(f"[shadow] {self.agent.name} works in a shadow of the workspace: {shadow.cwd}\n")
        if self.confine is not None:
            self._command(self.agent.command)  # refused now, before any turn, when it cannot be
            writable = ", ".join([shadow.cwd, f"{self._scratch} (its TMPDIR)", *self.confine])
            self.err.write(f"[shadow] confined with bwrap: it can write only {writable}\n")
        if self.agent.protocol == "cli":
            if self.allow_commands:
                self.err.write("[shadow] a CLI agent runs its commands itself, in the shadow: nothing asks\n")
            return  # started once per task, by turn()
        env = agent_env(self.agent.env, self.agent.pass_env, shadow.cwd)
        command = self._command(self.agent.command)
        self._foreign = foreign = await spawn_agent(command, env, shadow.cwd, keep=True)
        assert foreign.stdin is not None and foreign.stdout is not None and foreign.stderr is not None
        self._drain = asyncio.ensure_future(drain_stderr(foreign.stderr, self.log_tail))
        self.client = ForeignClient(
            self.out, self.err, self.review, shadow.session_id, allow_commands=self.allow_commands
        )
        agentconn.quiet_unknown_notifications()  # Qwen Code's own notifications, once a turn
        self.conn = connect_to_agent(self.client, foreign.stdin, foreign.stdout)  # type: ignore[arg-type]
        await agentconn.initialize(self.conn, meta={}, client="arbor-run", fs=True)
        new = self.conn.new_session(cwd=shadow.cwd, mcp_servers=[])
        session = await agentconn.within(new, SESSION_NEW)
        self.session_id = session.session_id

    async def turn(self, task: str) -> tuple[Any, ex.ForeignCapture]:
        """One prompt turn: the shadow first takes in what the user decided and edited since the last one
        (``_arbor/external/turn_start``, which also takes the first task as the commit's subject); then
        the agent works; then the shadow is captured. Returns the agent's ``PromptResponse`` and the
        capture."""
        assert self.review_id is not None
        params = ex.ForeignTurnStartParams(session_id=self.review_id, prompt=task)
        started = await agentconn.call(self.review, ex.FOREIGN_TURN_START, params)
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
        final = ex.ForeignCaptureParams(session_id=self.review_id, workspace=True)
        captured = await agentconn.call(self.review, ex.FOREIGN_CAPTURE, final)
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

    def _command(self, argv: list[str]) -> list[str]:
        """``argv`` as started: under bwrap when confined (ConfineError, an OSError, when it cannot be)."""
        if self.confine is None or self.shadow_cwd is None:
            return argv
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix=scratch_prefix("agent-tmp"))
        home = [self.agent.env["HOME"]] if "HOME" in self.agent.env else []  # a home of its own, read there
        return confined(argv, self.shadow_cwd, self._scratch, Path(self.workspace), self.confine, home)

    async def _cli_turn(self, task: str) -> CliTurn:
        """Run a CLI agent once for ``task`` in the shadow, its output streamed through; how it ended."""
        assert self.shadow_cwd is not None
        env = agent_env(self.agent.env, self.agent.pass_env, self.shadow_cwd)
        argv = self._command(cli_argv(self.agent.command, task))
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
            # As the window stops one (ide.app.foreign.review_backend): a second from the end of its input,
            # then SIGTERM.
            # codex-acp does not exit when its input closes; five seconds here kept every `arbor run
            # --agent` with Codex open five seconds after its answer.
            await close_backend(self.conn, self._foreign, EOF_GRACE_S)
        if self._drain is not None:
            await self.agent_said()  # its last words explain a death: read them before stopping the drain
            self._drain.cancel()
        if self.review_id is not None:
            params = ex.ForeignSessionParams(session_id=self.review_id)
            with contextlib.suppress(Exception):
                await agentconn.call(self.review, ex.FOREIGN_CLOSE, params)
        if self._backend is not None:
            await close_backend(self.review, self._backend.process)
        self._foreign = self._backend = self._drain = None
        self.review_id = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


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
