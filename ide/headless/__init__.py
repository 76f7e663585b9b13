"""``arbor run``: drive the ACP backend from a terminal, streaming the answer to stdout.

It spawns ``arbor acp`` exactly as the window does, so a headless run exercises the same path.
The answer goes to stdout; thoughts and tool calls go to stderr, so ``arbor run ... > answer.md`` works.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    RequestPermissionResponse,
)

from ide import __version__, self_command
from ide.client.agentconn import apply_all, call
from ide.client.events import MessageChunk, SessionEvent, ThoughtChunk, ToolCallDone, ToolCallStarted
from ide.client.fold import SessionFold
from ide.client.process import StderrTail, drain_stderr, on_stop_signals, spawn_agent, stop_agent
from ide.protocol import META_KEY, error_info_from_data
from ide.protocol.hidden import describe
from ide.protocol.review import (
    CHANGESET_NOTIFICATION,
    ChangeSetView,
    unified_diff,
)
from ide.protocol.steer import FORK, ForkParams
from ide.termout import EscapedText

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANCELLED = 130

BACKEND_COMMAND = self_command("acp")
BACKEND_GRACE_S = 5.0
"""How long Arbor's backend may take to exit once its input closed, before it is signalled."""
LOG_TAIL_LINES = 20


class ReadOnlyClient:
    """An ACP client with no fs, terminal or permission support: what a plain viewer of a turn offers.

    The agent must complete a turn for such a client; permission requests and extensions are refused.
    """

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


class TerminalClient(ReadOnlyClient):
    """ACP client callbacks that print the turn as it streams."""

    def __init__(self, out: TextIO, err: TextIO, *, allow_tests: bool = False) -> None:
        self.out = out
        self.err = err
        self.allow_tests = allow_tests
        self._in_thought = False
        self.changeset: ChangeSetView | None = None
        self.fold = SessionFold()
        """The turn's session updates, read (one session per client)."""
        self.muted = False
        """A loaded session's history is being replayed: none of it is printed."""

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        """Test runs (LATS, a workflow's test stage) are allowed with --allow-tests; anything else — a
        command an agent chose, an MCP tool — is refused."""
        raw = getattr(tool_call, "raw_input", None)
        purpose = raw.get("purpose", "tests") if isinstance(raw, dict) else None
        is_test = getattr(tool_call, "kind", None) == "execute" and purpose == "tests"
        allowed = self.allow_tests and is_test
        choice = next((o for o in options if o.kind == "allow_once"), None) if allowed else None
        why = "see --allow-tests" if is_test else "arbor run allows only test runs"
        self.err.write(f"\n[permission] {tool_call.title}: {'allowed' if choice else f'refused ({why})'}\n")
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice.option_id)
        )

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == CHANGESET_NOTIFICATION:
            self.changeset = CHANGESET_NOTIFICATION.payload.model_validate(params)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """The SDK's callback: the update, folded into its event, goes to :meth:`on_event`."""
        if not self.muted:
            self.on_event(self.fold.apply(update))

    def on_event(self, event: SessionEvent) -> None:
        """Print one event of the turn: the answer to stdout, thoughts and tool calls to stderr."""
        if isinstance(event, ThoughtChunk):
            if not self._in_thought:
                self.err.write("\n[thinking] ")
                self._in_thought = True
            self.err.write(event.text)
            self.err.flush()
            return
        if self._in_thought:
            self.err.write("\n")
            self._in_thought = False
        if isinstance(event, MessageChunk):
            self.out.write(event.text)
            self.out.flush()
        elif isinstance(event, ToolCallStarted):
            self.err.write(f"\n[tool] {event.title} …\n")
        elif isinstance(event, ToolCallDone):
            self.err.write(f"[tool] {event.status}\n")
        self.err.flush()


async def run_task(
    workspace: Path,
    task: str,
    *,
    mode: str | None = None,
    apply: bool = False,
    workflow: str | None = None,
    allow_tests: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    command: list[str] | None = None,
    fork: tuple[str, str, str] | None = None,
) -> int:
    """Run one prompt turn in a new session on ``workspace`` (absolute); the exit code says how it ended.

    The turn's change set is printed as a unified diff and nothing is written, unless ``apply``: then
    every hunk is accepted and applied (checkpoint, writes, commit) exactly as the window's Apply all.

    With ``fork`` (session id, run id, node id) the turn continues from that node of a run of that stored
    session instead (``_arbor/tree/fork``), ``task`` its hint: the session is loaded (its history not
    printed), the continuation runs in ``mode`` or the run's own architecture, and the diff printed is the
    session's whole resulting change set.
    """
    out, err = EscapedText(out), EscapedText(err)  # type: ignore[assignment]
    # Its own process group, as the window does: stopping it also stops the language servers it spawned.
    proc = await spawn_agent(command or BACKEND_COMMAND, os.environ.copy())
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    # The backend's log is shown only when it dies; drained continuously so it can never block.
    log_tail = StderrTail(max_lines=LOG_TAIL_LINES)
    drain = asyncio.ensure_future(drain_stderr(proc.stderr, log_tail))
    client = TerminalClient(out, err, allow_tests=allow_tests)
    conn = connect_to_agent(client, proc.stdin, proc.stdout)  # type: ignore[arg-type]
    session_id: str | None = None

    pending: set[asyncio.Future[None]] = set()

    def on_interrupt() -> None:
        if session_id is not None:
            future = asyncio.ensure_future(conn.cancel(session_id=session_id))
            pending.add(future)
            future.add_done_callback(pending.discard)

    # SIGTERM (a supervisor, a timeout) ends the turn as Ctrl-C does, until the backend is being closed.
    stop_handlers = contextlib.ExitStack()
    stop_handlers.enter_context(on_stop_signals(on_interrupt))
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(field_meta={META_KEY: {"review": True}}),
            client_info=Implementation(name="arbor-run", version=__version__),
        )
        if fork is not None:
            session_id = await continue_from(conn, client, workspace, fork, mode, err)
        else:
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            session_id = session.session_id
            if mode and mode != (session.modes.current_mode_id if session.modes else None):
                await conn.set_session_mode(session_id=session_id, mode_id=mode)
        text = f"/workflow {workflow} {task}" if workflow else task
        response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
        out.write("\n")
        turn = client.fold.answer(response).meta
        if turn is not None:
            calls = sum(u.calls for u in turn.usage.values())
            tokens = sum(u.input_tokens + u.output_tokens for u in turn.usage.values())
            recovered = sum(u.recovered_calls for u in turn.usage.values())
            note = f", {recovered} tool call(s) recovered from text" if recovered else ""
            figures = f"{turn.steps} steps, {calls} model calls, {tokens} tokens{note}"
            err.write(f"[done] {response.stop_reason}: {figures}\n")
        if response.stop_reason == "cancelled":
            return EXIT_CANCELLED
        if client.changeset is not None and client.changeset.files:
            if not apply:
                out.write(marked_diff(client.changeset))
                err.write("[review] nothing was written; run again with --apply to apply these changes\n")
            elif not await apply_and_report(conn, session_id, err):
                return EXIT_FAILED
        return EXIT_OK if response.stop_reason == "end_turn" else EXIT_FAILED
    except RequestError as exc:
        info = error_info_from_data(exc.data)
        err.write(f"\narbor: {info.text() if info else exc}\n")
        return EXIT_FAILED
    except ConnectionError:
        await asyncio.wait_for(proc.wait(), timeout=5)
        err.write(f"\narbor: the backend stopped unexpectedly (exit code {proc.returncode})\n")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(drain), 1.0)
        tail = log_tail.text()
        err.write(f"{tail}\n" if tail else "")
        return EXIT_FAILED
    finally:
        stop_handlers.close()
        await close_backend(conn, proc)
        drain.cancel()


async def continue_from(
    conn: Any,
    client: TerminalClient,
    workspace: Path,
    fork: tuple[str, str, str],
    mode: str | None,
    err: TextIO,
) -> str:
    """Load the stored session of ``fork`` (quietly) and arm its next prompt to continue from the node;
    says on ``err`` where it goes on from and what it will not have. Returns the session's id."""
    session_id, run_id, node_id = fork
    client.muted = True
    try:
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        params = ForkParams(session_id=session_id, run_id=run_id, node_id=node_id, mode=mode)
        armed = await call(conn, FORK, params)  # answered after every replayed update was handled
    finally:
        client.muted = False
    files = f", starting from {len(armed.files)} changed file(s)" if armed.files else ""
    err.write(
        f"[continue] run {run_id} from {node_id} ({len(armed.path)} steps) in {armed.mode} mode{files}\n"
    )
    if armed.note:
        err.write(f"[continue] {armed.note}\n")
    return session_id


async def apply_and_report(conn: Any, session_id: str, err: TextIO, message: str | None = None) -> bool:
    """Accept every hunk and apply (committed with ``message``, default: from the session's title); False
    when some file could not be written."""
    result = await apply_all(conn, session_id, message=message)
    if result.batch is not None:
        commit = f", commit {result.batch.commit[:12]}" if result.batch.commit else ""
        err.write(f"[review] applied batch {result.batch.id}: {len(result.batch.paths)} file(s){commit}\n")
    for conflict in result.conflicts:
        err.write(f"[review] not written: {conflict.path}: {conflict.message}\n")
    for file in result.changeset.files:
        if file.meta:
            err.write(
                f"[review] not applied: {file.path} needs its own accept ({file.meta}); "
                "review it in Arbor's window\n"
            )
        elif any(hunk.hidden for hunk in file.hunks):
            hidden = [finding for hunk in file.hunks for finding in hunk.hidden]
            err.write(
                f"[review] not applied: {file.path} hides characters ({describe(hidden)}); "
                "review it in Arbor's window\n"
            )
    return not result.conflicts


def marked_diff(changeset: ChangeSetView) -> str:
    """The change set's unified diff, with a ``# !`` note before each hunk that hides characters."""
    text = unified_diff(changeset)
    notes = {hunk.header: describe(hunk.hidden) for f in changeset.files for hunk in f.hunks if hunk.hidden}
    if not notes:
        return text
    lines = []
    for line in text.splitlines(keepends=True):
        note = notes.get(line.rstrip("\r\n")) if line.startswith("@@") else None
        if note:
            lines.append(f"# ! this hunk hides characters: {note}\n")
        lines.append(line)
    return "".join(lines)


async def close_backend(
    conn: Any, proc: asyncio.subprocess.Process, grace_s: float = BACKEND_GRACE_S
) -> None:
    """Close the connection, then stdin (the backend's cue to exit); SIGTERM, then SIGKILL its process
    group if it lingers."""
    await stop_agent(proc, conn, eof_grace=grace_s)
