"""One session of Arbor's backend on one eval task: a fresh workspace, ``arbor acp``, the prompt, apply,
check.

:func:`run_session` builds the task's workspace in a scratch directory
(:func:`ide.eval.tasks.build_workspace`), spawns ``arbor acp`` with a config and data dir of its own (so
runs never share memory, sessions or the user's dirs) and ``llm.model`` pointed at the evaluated model,
opens a session in the run's mode, sends the task's prompt and collects the search tree as it streams.
The turn ends by itself, or is cancelled at the time budget (``timeout``) or once its model calls have
spent more tokens than the token budget (``over_budget``), mid-call: the backend reports the spend as
answers stream (``_arbor/usage``), and a cancelled turn's figures count what its cancelled calls spent. A
turn whose final figures pass the budget is over budget too, never solved. Then every hunk is accepted
and applied in the scratch copy (as the window's Apply all), and the task's check runs (a question's
check reads the agent's final message).

It runs wherever the run runs: in ``arbor eval``'s own process, or on a Ray worker
(:mod:`ide.eval.distributed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ide.client.agentconn import ClientCallbacks, apply_all, cancel, connect, initialize, turn_meta, within
from ide.client.agentproc import AgentProcess, default_backend_command, error_from_request
from ide.client.events import MessageChunk
from ide.client.fold import SessionFold
from ide.eval.agents import tail
from ide.eval.tasks import EvalTask, TaskError, build_workspace, run_check
from ide.lifetime import scratch_prefix
from ide.protocol import RoleUsage, TurnMeta
from ide.protocol.model import USAGE_NOTIFICATION
from ide.protocol.review import CHANGESET_NOTIFICATION
from ide.protocol.standard import SESSION_NEW
from ide.protocol.tree import TREE_NOTIFICATION, TreeEvent

CANCEL_GRACE_S = 30.0
"""Time a cancelled turn may take to end before the backend is stopped."""
CONFIG_FILE = "config.toml"
EVAL_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "arbor eval",
    "GIT_AUTHOR_EMAIL": "eval@arbor.invalid",
    "GIT_COMMITTER_NAME": "arbor eval",
    "GIT_COMMITTER_EMAIL": "eval@arbor.invalid",
}


@dataclass(frozen=True)
class RunSettings:
    """What every run of one evaluation shares, sent with each run to where it runs (picklable)."""

    model: str
    budget_tokens: int
    budget_s: float
    backend_command: list[str] | None = None
    scratch_dir: Path | None = None
    """Where run workspaces are built, on the machine that runs them (default: its temporary directory)."""
    config_text: str | None = None
    """The user's config.toml as the driver read it (its server settings apply to every run), or None."""
    agents: tuple[Any, ...] = ()
    """Other agents (:class:`ide.eval.agents.AgentUnderTest`), each run as the mode ``agent:NAME``."""
    model_server: str | None = None
    """The server the agents' metering proxies stand in front of (None: their tokens are not counted)."""
    confine: list[str] | None = None
    """Not None: the agents run under bwrap, writing only their shadow, their TMPDIR and these."""


@dataclass
class Outcome:
    """One session's run, before it becomes an :class:`~ide.protocol.eval.EvalRun`."""

    status: str
    reason: str = ""
    meta: TurnMeta | None = None
    events: list[TreeEvent] = field(default_factory=list)
    wall_s: float = 0.0
    spent: dict[str, RoleUsage] = field(default_factory=dict)
    """The last spend the backend reported: the figures of a turn that ended without its own (it failed,
    or did not answer its cancel)."""

    @property
    def usage(self) -> dict[str, RoleUsage]:
        return self.meta.usage if self.meta is not None else self.spent

    @property
    def tokens(self) -> int:
        return sum(u.input_tokens + u.output_tokens for u in self.usage.values())


class _RunClient:
    """The ACP client of one run: collects the answer, the tree, the change set and the spend so far
    (setting ``over_budget`` once it passes the budget); allows test runs (the workspace is the task's own
    scratch copy) and refuses anything else."""

    def __init__(self, budget_tokens: int) -> None:
        self.budget_tokens = budget_tokens
        self.session_id: str | None = None
        self.answer: list[str] = []
        self.events: list[TreeEvent] = []
        self.has_changes = False
        self.over_budget = asyncio.Event()
        self.spent: dict[str, RoleUsage] = {}
        self.fold = SessionFold()
        """The session's updates, read (one session per run)."""

    def on_update(self, session_id: str, update: Any) -> None:
        event = self.fold.apply(update)
        if isinstance(event, MessageChunk):
            self.answer.append(event.text)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == TREE_NOTIFICATION:
            with contextlib.suppress(ValueError):
                self.events.extend(TREE_NOTIFICATION.payload.model_validate(params).events)
        elif method == CHANGESET_NOTIFICATION:
            self.has_changes = bool(params.get("files"))
        elif method == USAGE_NOTIFICATION:
            with contextlib.suppress(ValueError):
                spent = USAGE_NOTIFICATION.payload.model_validate(params)
                self.spent = spent.usage
                if spent.tokens > self.budget_tokens:
                    self.over_budget.set()

    async def permission(self, session_id: str, tool_call: Any, options: list[Any]) -> str | None:
        if getattr(tool_call, "kind", None) != "execute":
            return None
        return next((o.option_id for o in options if o.kind == "allow_once"), None)


def run_env(settings: RunSettings, scratch: Path, budget_tokens: int, budget_s: float) -> dict[str, str]:
    """The backend's environment for one run: its own config and data dirs under ``scratch`` (the user's
    config.toml written in, so their server settings apply), the evaluated model and the budgets."""
    config = scratch / "config"
    config.mkdir(parents=True, exist_ok=True)
    if settings.config_text is not None:
        (config / CONFIG_FILE).write_text(settings.config_text, encoding="utf-8")
    env = dict(os.environ)
    env.update(
        {
            "ARBOR_CONFIG_DIR": str(config),
            "ARBOR_DATA_DIR": str(scratch / "data"),
            "ARBOR_MODEL": settings.model,
            "ARBOR_LATS_MAX_TOKENS": str(max(1, budget_tokens)),
            "ARBOR_LATS_TIME_LIMIT_S": str(max(1.0, budget_s)),
            "ARBOR_TOT_TIME_LIMIT_S": str(max(1.0, budget_s)),
        }
    )
    # The run's Apply commits in its scratch copy: it needs a git identity, not the user's.
    for variable, value in EVAL_GIT_IDENTITY.items():
        env.setdefault(variable, value)
    return env


def make_scratch(task: EvalTask, settings: RunSettings) -> Path:
    """A scratch directory for one run, named with this process's pid (one a killed evaluation or worker
    left is removed by the next start, :func:`ide.changes.worktree.prune_stale_worktrees`)."""
    base = settings.scratch_dir
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(f"eval-{task.id[:40]}"), dir=base))


async def run_session(
    task: EvalTask, mode: str, settings: RunSettings, budget_tokens: int, budget_s: float
) -> Outcome:
    """One session: a fresh workspace and backend, the prompt in ``mode``, apply, check."""
    scratch = await asyncio.to_thread(make_scratch, task, settings)
    started = time.monotonic()
    try:
        workspace = scratch / "workspace"
        try:
            await asyncio.to_thread(build_workspace, task, workspace)
        except TaskError as exc:
            return Outcome("error", f"the workspace could not be built: {exc}")
        env = run_env(settings, scratch, budget_tokens, budget_s)
        command = settings.backend_command or default_backend_command()
        outcome = await _drive(task, mode, command, workspace, env, budget_tokens, budget_s)
        outcome.wall_s = round(time.monotonic() - started, 3)
        return outcome
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


async def _drive(
    task: EvalTask,
    mode: str,
    command: list[str],
    workspace: Path,
    env: dict[str, str],
    budget_tokens: int,
    budget_s: float,
) -> Outcome:
    from acp import RequestError, text_block

    try:
        agent = await AgentProcess.spawn(command, env)
    except OSError as exc:
        return Outcome("error", f"the backend could not start: {exc.strerror or exc}")
    client = _RunClient(budget_tokens)
    callbacks = ClientCallbacks(client.on_update, lambda: client.permission, client.on_notification)
    conn = connect(agent, callbacks)
    try:
        # Each within the limit its request declares (ide.protocol.standard): NoAnswer is a TimeoutError.
        await initialize(conn, meta={"review": True, "tree": True}, client="arbor-eval")
        session = await within(conn.new_session(cwd=str(workspace), mcp_servers=[]), SESSION_NEW)
        sid = client.session_id = session.session_id
        current = session.modes.current_mode_id if session.modes else None
        if mode != current:
            await conn.set_session_mode(session_id=sid, mode_id=mode)
        # The time budget is the agent's, from its prompt: the backend's start depends on the machine's
        # load, not on the mode, and has its own limits (INITIALIZE's and SESSION_NEW's).
        deadline = time.monotonic() + budget_s
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(task.prompt)]))
        # Retrieved even when this run is cancelled (Ctrl-C) and the connection closes under it.
        turn.add_done_callback(lambda done: done.cancelled() or done.exception())
        over = asyncio.ensure_future(client.over_budget.wait())
        try:
            done, _ = await asyncio.wait(
                {turn, over},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            over.cancel()
        if turn not in done:
            status = "over_budget" if client.over_budget.is_set() else "timeout"
            await cancel(conn, sid)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(turn), CANCEL_GRACE_S)
            turn.cancel()
            meta = (
                turn_meta(turn.result().field_meta)
                if turn.done() and not turn.cancelled() and turn.exception() is None
                else None
            )
            why = (
                f"its model calls passed the budget of {budget_tokens} tokens"
                if status == "over_budget"
                else f"the turn ran past the time budget of {budget_s:.0f} s"
            )
            return Outcome(status, why, meta, client.events, spent=client.spent)
        response = turn.result()
        meta = turn_meta(response.field_meta)
        outcome = Outcome("failed", "", meta, client.events)
        if outcome.tokens > budget_tokens:
            outcome.status = "over_budget"
            outcome.reason = f"the turn spent {outcome.tokens} tokens, over the budget of {budget_tokens}"
            return outcome
        if client.has_changes:
            problem = await _apply(conn, sid)
            if problem:
                outcome.reason = problem
        answer = "".join(client.answer)
        check = await asyncio.to_thread(run_check, task, workspace, answer)
        if check.passed:
            outcome.status, outcome.reason = "solved", ""
        elif meta is not None and meta.error is not None:
            outcome.status, outcome.reason = "error", meta.error.message
        else:
            outcome.reason = "; ".join(p for p in (outcome.reason, tail(check.output)) if p)
        return outcome
    except RequestError as exc:
        return Outcome("error", error_from_request(exc).message, None, client.events, spent=client.spent)
    except (ConnectionError, TimeoutError) as exc:
        last = agent.stderr.text(lines=8)
        why = "the backend did not answer in time" if isinstance(exc, TimeoutError) else "the backend stopped"
        said = f"{why}{': ' + last if last else ''}"
        return Outcome("error", said, None, client.events, spent=client.spent)
    except Exception as exc:  # an answer the client cannot read: this run's error, not the evaluation's
        said = f"unexpected {type(exc).__name__}: {exc}"
        return Outcome("error", said, None, client.events, spent=client.spent)
    finally:
        await agent.stop(conn)


async def _apply(conn: Any, session_id: str) -> str:
    """Accept every hunk and apply it in the scratch copy; what went wrong, or ''."""
    from acp import RequestError

    try:
        result = await apply_all(conn, session_id)
    except RequestError as exc:
        return f"the changes could not be applied: {error_from_request(exc).message}"
    problems = [f"{c.path}: {c.message}" for c in result.conflicts]
    problems += [f"{f.path} needs its own accept ({f.meta})" for f in result.changeset.files if f.meta]
    return "not applied: " + "; ".join(problems) if problems else ""
