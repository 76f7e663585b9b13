"""``arbor eval``: every task × mode × attempt run through the backend exactly as a session runs, checked.

Each run builds the task's workspace in a scratch directory (:func:`ide.eval.tasks.build_workspace`),
spawns ``arbor acp`` with a config and data dir of its own (so runs never share memory, sessions or the
user's dirs) and ``llm.model`` pointed at the evaluated model, opens a session in the run's mode, sends
the task's prompt and collects the search tree as it streams. The run ends with the turn, or is cancelled
at the time budget (``timeout``) or once its model calls have spent more tokens than the token budget
(``over_budget``), mid-call: the backend reports the spend as answers stream (``_arbor/usage``), and a
cancelled turn's figures count what its cancelled calls spent. A turn whose final figures pass the budget
is over budget too, never solved. Then every hunk is accepted and applied
in the scratch copy (as the window's Apply all), and the task's check runs (a question's check reads the
agent's final message). The retry baseline (:data:`~ide.protocol.eval.RETRY_MODE`) is ReAct in a fresh
session on a fresh workspace, tried again until solved or the token budget is spent.

The report is saved after every run, so an interrupted evaluation resumes where it stopped when run again
with the same settings; :meth:`Evaluation.stop` (Ctrl-C) lets no new run start, cancels the running ones
and leaves the report as it was after the last finished run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ide.changes.worktree import prune_stale_worktrees
from ide.client.agentconn import ClientCallbacks, apply_all, cancel, connect, initialize, turn_meta, within
from ide.client.agentproc import AgentProcess, client_version, default_backend_command, error_from_request
from ide.client.events import MessageChunk
from ide.client.fold import SessionFold
from ide.eval.agents import AgentUnderTest, run_agent, tail, write_text
from ide.eval.report import CHART_FILE, format_table, summarize, write_chart
from ide.eval.tasks import EvalTask, TaskError, build_workspace, run_check
from ide.lifetime import scratch_prefix
from ide.protocol import RoleUsage, TurnMeta
from ide.protocol.eval import (
    REPORT_FILE,
    RETRY_MODE,
    EvalReport,
    EvalRun,
    RoleCost,
    is_agent_mode,
    load_report,
    save_report,
)
from ide.protocol.model import USAGE_NOTIFICATION
from ide.protocol.review import CHANGESET_NOTIFICATION
from ide.protocol.standard import SESSION_NEW
from ide.protocol.tree import TREE_NOTIFICATION, SearchTree, TreeError, TreeEvent, write_jsonl
from ide.settings import user_config_path

TREES_DIR = "trees"
AGENTS_DIR = "agents"
"""Other agents' runs: each one's diff (``.diff``) and transcript (``.txt``)."""
CANCEL_GRACE_S = 30.0
"""Time a cancelled turn may take to end before the backend is stopped."""
MAX_RETRY_TRIES = 10
"""Sessions the retry baseline starts at most for one task, however cheap each failure was."""
COMPACTOR_ROLE = "compactor"
EVAL_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "arbor eval",
    "GIT_AUTHOR_EMAIL": "eval@arbor.invalid",
    "GIT_COMMITTER_NAME": "arbor eval",
    "GIT_COMMITTER_EMAIL": "eval@arbor.invalid",
}


class EvalError(ValueError):
    """An evaluation that cannot start; the message says why and what to do."""


@dataclass
class EvalOptions:
    """What ``arbor eval`` was asked to do."""

    out: Path
    model: str
    modes: list[str]
    tasks: list[EvalTask]
    runs: int = 1
    budget_tokens: int = 200_000
    budget_s: float = 900.0
    jobs: int = 1
    baseline: bool = True
    fresh: bool = False
    backend_command: list[str] | None = None
    scratch_dir: Path | None = None
    """Where run workspaces are built (default: the system's temporary directory)."""
    agents: list[AgentUnderTest] = field(default_factory=list)
    """Other agents (``--agent``), each run on every task as a mode of its own (``agent:NAME``)."""
    model_server: str | None = None
    """The server the agents' metering proxies stand in front of (None: their tokens are not counted)."""
    confine: list[str] | None = None
    """Not None: the agents run under bwrap, writing only their shadow, their TMPDIR and these."""

    @property
    def all_modes(self) -> list[str]:
        agents = [agent.mode for agent in self.agents]
        return [*self.modes, *agents, RETRY_MODE] if self.baseline else [*self.modes, *agents]


@dataclass
class _Outcome:
    """One session's run, before it becomes an :class:`EvalRun`."""

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


def run_env(options: EvalOptions, scratch: Path, budget_tokens: int, budget_s: float) -> dict[str, str]:
    """The backend's environment for one run: its own config and data dirs under ``scratch`` (the user's
    config.toml copied in, so their server settings apply), the evaluated model and the budgets."""
    config = scratch / "config"
    config.mkdir(parents=True, exist_ok=True)
    user_config = user_config_path()
    if user_config.is_file():
        shutil.copyfile(user_config, config / user_config.name)
    env = dict(os.environ)
    env.update(
        {
            "ARBOR_CONFIG_DIR": str(config),
            "ARBOR_DATA_DIR": str(scratch / "data"),
            "ARBOR_MODEL": options.model,
            "ARBOR_LATS_MAX_TOKENS": str(max(1, budget_tokens)),
            "ARBOR_LATS_TIME_LIMIT_S": str(max(1.0, budget_s)),
            "ARBOR_TOT_TIME_LIMIT_S": str(max(1.0, budget_s)),
        }
    )
    # The run's Apply commits in its scratch copy: it needs a git identity, not the user's.
    for variable, value in EVAL_GIT_IDENTITY.items():
        env.setdefault(variable, value)
    return env


def run_from(task: str, mode: str, attempt: int, outcomes: Sequence[_Outcome], status: str) -> EvalRun:
    """The record of a run made of ``outcomes`` (one session each; several only for the retry baseline)."""
    usage: dict[str, RoleCost] = {}
    recovered = compactions = 0
    for outcome in outcomes:
        for role, used in outcome.usage.items():
            cost = usage.setdefault(role, RoleCost())
            cost.calls += used.calls
            cost.input_tokens += used.input_tokens
            cost.output_tokens += used.output_tokens
            recovered += used.recovered_calls
        # The turn's figures count every compacted request; without them, the compactor's summaries.
        counted = outcome.meta.figures.get("compactions") if outcome.meta is not None else None
        summaries = outcome.usage[COMPACTOR_ROLE].calls if COMPACTOR_ROLE in outcome.usage else 0
        compactions += counted if isinstance(counted, int) else summaries
    nodes = sum(tree_size(o.events) for o in outcomes)
    return EvalRun(
        task=task,
        mode=mode,
        attempt=attempt,
        status=status,  # type: ignore[arg-type]
        reason=outcomes[-1].reason if outcomes else "",
        usage=usage,
        model_calls=sum(c.calls for c in usage.values()),
        input_tokens=sum(c.input_tokens for c in usage.values()),
        output_tokens=sum(c.output_tokens for c in usage.values()),
        wall_s=round(sum(o.wall_s for o in outcomes), 3),
        tree_nodes=nodes,
        recovered_calls=recovered,
        compactions=compactions,
        tries=max(1, len(outcomes)),
    )


def tree_size(events: Sequence[TreeEvent]) -> int:
    """Nodes of every run the events describe (events that do not replay are not counted)."""
    trees: dict[str, SearchTree] = {}
    for event in events:
        with contextlib.suppress(TreeError):
            trees.setdefault(event.run_id, SearchTree()).apply(event)
    return sum(len(tree.nodes) for tree in trees.values())


class Evaluation:
    """One ``arbor eval``: opens (or resumes) the report, runs what is missing, saves after every run."""

    def __init__(
        self,
        options: EvalOptions,
        *,
        log: TextIO = sys.stderr,
        on_run: Callable[[EvalRun], None] | None = None,
    ) -> None:
        self.options = options
        self.log = log
        self.on_run = on_run
        self.report = self._open_report()
        self.stopped = False
        self._running: set[asyncio.Task[Any]] = set()

    @property
    def report_path(self) -> Path:
        return self.options.out / REPORT_FILE

    def _open_report(self) -> EvalReport:
        options = self.options
        fresh = EvalReport(
            model=options.model,
            modes=options.all_modes,
            agents=[agent.record(options.model_server) for agent in options.agents],
            tasks=[t.id for t in options.tasks],
            runs_per_task=options.runs,
            budget_tokens=options.budget_tokens,
            budget_s=options.budget_s,
            arbor_version=client_version(),
            started_at=time.time(),
        )
        if options.fresh or not self.report_path.exists():
            return fresh
        try:
            old = load_report(self.report_path)
        except ValueError as exc:
            raise EvalError(f"{exc}; use another --out, or --fresh to start over") from None
        differ = [
            f"{name} {mine!r} (the report has {theirs!r})"
            for name, mine, theirs in (
                ("model", fresh.model, old.model),
                ("modes", fresh.modes, old.modes),
                ("agents", [a.command for a in fresh.agents], [a.command for a in old.agents]),
                ("tasks", fresh.tasks, old.tasks),
                ("runs", fresh.runs_per_task, old.runs_per_task),
                ("budget tokens", fresh.budget_tokens, old.budget_tokens),
                ("budget seconds", fresh.budget_s, old.budget_s),
            )
            if mine != theirs
        ]
        if differ:
            raise EvalError(
                f"{self.report_path} holds an evaluation with other settings, so it cannot be resumed: "
                + "; ".join(differ)
                + ". Use another --out, or --fresh to start over."
            )
        old.finished_at = None
        return old

    def pending(self) -> list[tuple[EvalTask, str, int]]:
        """The runs the report does not hold yet, in task, mode, attempt order."""
        return [
            (task, mode, attempt)
            for task in self.options.tasks
            for mode in self.options.all_modes
            for attempt in range(self.options.runs)
            if self.report.run_of(task.id, mode, attempt) is None
        ]

    def stop(self) -> None:
        """Start no new run and cancel the running ones (Ctrl-C); finished runs stay in the report."""
        self.stopped = True
        for task in list(self._running):
            task.cancel()

    async def run(self) -> EvalReport:
        """Run every pending run (``jobs`` at once); the report, finished unless :meth:`stop` was called."""
        self.options.out.mkdir(parents=True, exist_ok=True)
        (self.options.out / TREES_DIR).mkdir(exist_ok=True)
        if self.options.fresh:
            for old in (
                *(self.options.out / TREES_DIR).glob("*"),
                *(self.options.out / AGENTS_DIR).glob("*"),
            ):
                old.unlink()
        self._save()
        # What a killed evaluation (or backend) left in the temporary directory goes before this one starts.
        await asyncio.to_thread(prune_stale_worktrees, None, self.options.scratch_dir)
        queue = iter(self.pending())

        async def worker() -> None:
            for task, mode, attempt in queue:
                if self.stopped:
                    return
                job = asyncio.ensure_future(self.run_one(task, mode, attempt))
                self._running.add(job)
                try:
                    run = await job
                except asyncio.CancelledError:
                    if self.stopped:
                        return
                    raise
                finally:
                    self._running.discard(job)
                self._record(run)

        await asyncio.gather(*(worker() for _ in range(max(1, self.options.jobs))))
        if not self.stopped:
            self.report.finished_at = time.time()
            write_chart(self.report, self.options.out / CHART_FILE)
            self.report.chart_file = CHART_FILE
            self._save()
        return self.report

    def _record(self, run: EvalRun) -> None:
        self.report.runs.append(run)
        self._save()
        tries = f", {run.tries} tries" if run.tries > 1 else ""
        self.log.write(
            f"[eval] {run.task} {run.mode}#{run.attempt}: {run.status} "
            f"({run.tokens} tokens, {run.wall_s:.1f} s{tries})\n"
        )
        self.log.flush()
        if self.on_run is not None:
            self.on_run(run)

    def _save(self) -> None:
        self.report.summary = summarize(self.report)
        save_report(self.report, self.report_path)

    def table(self) -> str:
        return format_table(self.report)

    async def run_one(self, task: EvalTask, mode: str, attempt: int) -> EvalRun:
        """One run of ``task`` in ``mode`` (the retry baseline: several sessions), its tree file written."""
        budget = self.options.budget_tokens
        if is_agent_mode(mode):
            return await self.agent_run(task, mode, attempt)
        if mode != RETRY_MODE:
            outcome = await self.session(task, mode, budget, self.options.budget_s)
            outcomes, status = [outcome], outcome.status
        else:
            outcomes, status = await self._retry(task, budget)
        run = run_from(task.id, mode, attempt, outcomes, status)
        events = [
            e.model_copy(update={"run_id": f"try{i}:{e.run_id}"}) if len(outcomes) > 1 else e
            for i, outcome in enumerate(outcomes, start=1)
            for e in outcome.events
        ]
        if events:
            name = f"{task.id}.{mode}.{attempt}"
            written = write_jsonl(events, self.options.out / TREES_DIR / name)
            run.tree_file = written.relative_to(self.options.out).as_posix()
        return run

    async def agent_run(self, task: EvalTask, mode: str, attempt: int) -> EvalRun:
        """One run of another agent on ``task``: a fresh workspace, its turn in a shadow, apply, check; its
        diff and transcript written beside the report."""
        options = self.options
        agent = next(a for a in options.agents if a.mode == mode)
        scratch = Path(
            tempfile.mkdtemp(prefix=scratch_prefix(f"eval-{task.id[:40]}"), dir=options.scratch_dir)
        )
        try:
            workspace = scratch / "workspace"
            try:
                await asyncio.to_thread(build_workspace, task, workspace)
            except TaskError as exc:
                return EvalRun(task=task.id, mode=mode, attempt=attempt, status="error", reason=str(exc))
            env = run_env(options, scratch, options.budget_tokens, options.budget_s)
            backend_env = {k: env[k] for k in ("ARBOR_CONFIG_DIR", "ARBOR_DATA_DIR", *EVAL_GIT_IDENTITY)}
            outcome = await run_agent(
                agent,
                task,
                workspace,
                model_server=options.model_server,
                model=options.model.partition(":")[2],
                budget_tokens=options.budget_tokens,
                budget_s=options.budget_s,
                backend_env=backend_env,
                confine=options.confine,
                backend_command=options.backend_command,
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        run = outcome.as_run(task.id, mode, attempt)
        stem = f"{AGENTS_DIR}/{agent.name}.{task.id}.{attempt}"
        for suffix, text, name in (
            (".diff", outcome.diff, "diff_file"),
            (".txt", outcome.transcript, "transcript_file"),
        ):
            if text:
                await asyncio.to_thread(write_text, options.out / (stem + suffix), text)
                setattr(run, name, stem + suffix)
        return run

    async def _retry(self, task: EvalTask, budget: int) -> tuple[list[_Outcome], str]:
        """ReAct, a fresh session on a fresh workspace each try, until solved or the budget is spent."""
        outcomes: list[_Outcome] = []
        spent_tokens, spent_s = 0, 0.0
        for _ in range(MAX_RETRY_TRIES):
            left_s = self.options.budget_s - spent_s
            if spent_tokens >= budget or left_s <= 0:
                break
            outcome = await self.session(task, "react", budget - spent_tokens, left_s)
            outcomes.append(outcome)
            spent_tokens += outcome.tokens
            spent_s += outcome.wall_s
            if outcome.status in ("solved", "over_budget", "timeout"):
                return outcomes, outcome.status
            if outcome.status == "error" and outcome.tokens == 0:
                return outcomes, "error"  # nothing was spent: another try would fail the same way
        if spent_tokens >= budget:
            return outcomes, "over_budget"
        if spent_s >= self.options.budget_s:
            return outcomes, "timeout"
        return outcomes, outcomes[-1].status if outcomes else "error"

    async def session(self, task: EvalTask, mode: str, budget_tokens: int, budget_s: float) -> _Outcome:
        """One session: a fresh workspace and backend, the prompt in ``mode``, apply, check."""
        base = self.options.scratch_dir
        if base is not None:
            base.mkdir(parents=True, exist_ok=True)
        # Named with this process's pid: one a killed evaluation left is removed by the next start.
        scratch = Path(tempfile.mkdtemp(prefix=scratch_prefix(f"eval-{task.id[:40]}"), dir=base))
        started = time.monotonic()
        try:
            workspace = scratch / "workspace"
            try:
                await asyncio.to_thread(build_workspace, task, workspace)
            except TaskError as exc:
                return _Outcome("error", f"the workspace could not be built: {exc}")
            env = run_env(self.options, scratch, budget_tokens, budget_s)
            outcome = await self._drive(task, mode, workspace, env, budget_tokens, budget_s)
            outcome.wall_s = round(time.monotonic() - started, 3)
            return outcome
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def _drive(
        self,
        task: EvalTask,
        mode: str,
        workspace: Path,
        env: dict[str, str],
        budget_tokens: int,
        budget_s: float,
    ) -> _Outcome:
        from acp import RequestError, text_block

        command = self.options.backend_command or default_backend_command()
        try:
            agent = await AgentProcess.spawn(command, env)
        except OSError as exc:
            return _Outcome("error", f"the backend could not start: {exc.strerror or exc}")
        client = _RunClient(budget_tokens)
        conn = connect(
            agent, ClientCallbacks(client.on_update, lambda: client.permission, client.on_notification)
        )
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
                return _Outcome(status, why, meta, client.events, spent=client.spent)
            response = turn.result()
            meta = turn_meta(response.field_meta)
            outcome = _Outcome("failed", "", meta, client.events)
            if outcome.tokens > budget_tokens:
                outcome.status = "over_budget"
                outcome.reason = f"the turn spent {outcome.tokens} tokens, over the budget of {budget_tokens}"
                return outcome
            if client.has_changes:
                problem = await self._apply(conn, sid)
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
            return _Outcome("error", error_from_request(exc).message, None, client.events, spent=client.spent)
        except (ConnectionError, TimeoutError) as exc:
            last = agent.stderr.text(lines=8)
            why = (
                "the backend did not answer in time"
                if isinstance(exc, TimeoutError)
                else "the backend stopped"
            )
            said = f"{why}{': ' + last if last else ''}"
            return _Outcome("error", said, None, client.events, spent=client.spent)
        except Exception as exc:  # an answer the client cannot read: this run's error, not the evaluation's
            said = f"unexpected {type(exc).__name__}: {exc}"
            return _Outcome("error", said, None, client.events, spent=client.spent)
        finally:
            await agent.stop(conn)

    async def _apply(self, conn: Any, session_id: str) -> str:
        """Accept every hunk and apply it in the scratch copy; what went wrong, or ''."""
        from acp import RequestError

        try:
            result = await apply_all(conn, session_id)
        except RequestError as exc:
            return f"the changes could not be applied: {error_from_request(exc).message}"
        problems = [f"{c.path}: {c.message}" for c in result.conflicts]
        problems += [f"{f.path} needs its own accept ({f.meta})" for f in result.changeset.files if f.meta]
        return "not applied: " + "; ".join(problems) if problems else ""
