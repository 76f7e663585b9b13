"""``arbor eval``'s driver: every task × mode × attempt run through the backend exactly as a session runs,
checked, into one report.

Each run is :func:`ide.eval.execute.execute` (a scratch workspace, ``arbor acp`` or another agent, apply,
check; :mod:`ide.eval.session`), made in this process (``jobs`` at once) or, with ``--ray``, as a Ray task
on a cluster (:mod:`ide.eval.distributed`); either way it returns its record and files, which the driver
writes here: the report is saved after every run, so an interrupted evaluation resumes where it stopped
when run again with the same settings. :meth:`Evaluation.stop` (Ctrl-C) lets no new run start, cancels
the running ones and leaves the report as it was after the last finished run.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from ide.changes.worktree import prune_stale_worktrees
from ide.client.agentproc import client_version
from ide.eval.agents import AgentUnderTest
from ide.eval.execute import AGENTS_DIR, TREES_DIR, RunRecord, RunSpec, execute, is_record_path
from ide.eval.report import CHART_FILE, format_table, summarize, write_chart
from ide.eval.session import RunSettings
from ide.eval.tasks import EvalTask
from ide.protocol.eval import REPORT_FILE, RETRY_MODE, EvalReport, EvalRun, load_report, save_report
from ide.protocol.tree import write_text_atomic
from ide.settings import user_config_path


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
    ray: str | None = None
    """Not None: the runs are Ray tasks on the cluster at this address (``local``: one started here with
    ``jobs`` CPUs); ``jobs`` bounds the runs in flight either way."""
    ray_temp_dir: Path | None = None
    """``local``: the Ray instance's session directory (default: Ray's own)."""

    @property
    def all_modes(self) -> list[str]:
        agents = [agent.mode for agent in self.agents]
        return [*self.modes, *agents, RETRY_MODE] if self.baseline else [*self.modes, *agents]

    def run_settings(self) -> RunSettings:
        """What every run shares, with the user's config.toml as read here (the driver)."""
        config = user_config_path()
        return RunSettings(
            model=self.model,
            budget_tokens=self.budget_tokens,
            budget_s=self.budget_s,
            backend_command=self.backend_command,
            scratch_dir=self.scratch_dir,
            config_text=config.read_text(encoding="utf-8") if config.is_file() else None,
            agents=tuple(self.agents),
            model_server=self.model_server,
            confine=self.confine,
        )


class Runs(Protocol):
    """Where the runs are made: this process, or a Ray cluster (:class:`ide.eval.distributed.RayRuns`)."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    async def run(self, spec: RunSpec) -> RunRecord: ...


class LocalRuns:
    """The runs made in this process (``jobs`` at once, by the driver's workers)."""

    def __init__(self, scratch_dir: Path | None) -> None:
        self.scratch_dir = scratch_dir

    def open(self) -> None:
        # What a killed evaluation (or backend) left in the temporary directory goes before this one starts.
        prune_stale_worktrees(None, self.scratch_dir)

    def close(self) -> None:
        pass

    async def run(self, spec: RunSpec) -> RunRecord:
        return await execute(spec)


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
        self._runs: Runs | None = None

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

    def open(self) -> None:
        """Get where the runs are made ready: for ``--ray``, connect to the cluster (or start ``local``),
        which :class:`EvalError` says how to fix when it cannot. Called by :meth:`run` when not before;
        ``arbor eval`` calls it first, since starting Ray replaces the process's SIGTERM handler."""
        if self._runs is not None:
            return
        options = self.options
        if options.ray is None:
            runs: Runs = LocalRuns(options.scratch_dir)
            runs.open()
        else:
            from ide.eval.distributed import RayRuns, RayUnavailable

            runs = RayRuns(options.ray, options.jobs, temp_dir=options.ray_temp_dir)
            try:
                runs.open()
            except RayUnavailable as exc:
                raise EvalError(str(exc)) from None
        self._runs = runs

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
        self.open()
        runs = self._runs
        assert runs is not None
        settings = self.options.run_settings()
        queue = iter(self.pending())

        async def worker() -> None:
            for task, mode, attempt in queue:
                if self.stopped:
                    return
                job = asyncio.ensure_future(runs.run(RunSpec(task, mode, attempt, settings)))
                self._running.add(job)
                try:
                    record = await job
                except asyncio.CancelledError:
                    if self.stopped:
                        return
                    raise
                finally:
                    self._running.discard(job)
                run = await asyncio.to_thread(self._store, record)
                self._record(run)

        try:
            await asyncio.gather(*(worker() for _ in range(max(1, self.options.jobs))))
        finally:
            self._runs = None
            await asyncio.to_thread(runs.close)
        if not self.stopped:
            self.report.finished_at = time.time()
            write_chart(self.report, self.options.out / CHART_FILE)
            self.report.chart_file = CHART_FILE
            self._save()
        return self.report

    def _store(self, record: RunRecord) -> EvalRun:
        """Write a run's files beside the report (each atomically); its record."""
        for rel, text in record.files.items():
            if not is_record_path(rel):  # RunRecord.from_wire refuses these; a local record never has one
                continue
            target = self.options.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text)
        return record.run

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
