"""One run of ``arbor eval`` — a task × mode × attempt — and what it leaves: the one function every run goes
through, in ``arbor eval``'s own process (:mod:`ide.eval.runner`) or on a Ray worker
(:mod:`ide.eval.distributed`).

:func:`execute` runs a :class:`RunSpec` and returns a :class:`RunRecord`: the report's
:class:`~ide.protocol.eval.EvalRun` and the files the driver writes beside the report, by their path
relative to it — the run's search tree (``trees/TASK.MODE.N.arbor-tree.jsonl``), and for another agent's run
its diff and transcript (``agents/NAME.TASK.N.diff`` and ``.txt``). Nothing is written to the report's
directory here, so a run needs nothing of the driver's disk: its workspace is built where it runs, from the
pinned packages installed there. The retry baseline (:data:`~ide.protocol.eval.RETRY_MODE`) is ReAct in a
fresh session on a fresh workspace, tried again until solved or the token budget is spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ide.eval.agents import run_agent
from ide.eval.session import EVAL_GIT_IDENTITY, Outcome, RunSettings, make_scratch, run_env, run_session
from ide.eval.tasks import EvalTask, TaskError, build_workspace
from ide.protocol.eval import RETRY_MODE, EvalRun, RoleCost, is_agent_mode
from ide.protocol.tree import TREE_FILE_SUFFIX, SearchTree, TreeError, TreeEvent

TREES_DIR = "trees"
AGENTS_DIR = "agents"
"""Other agents' runs: each one's diff (``.diff``) and transcript (``.txt``)."""
MAX_RETRY_TRIES = 10
"""Sessions the retry baseline starts at most for one task, however cheap each failure was."""
COMPACTOR_ROLE = "compactor"


@dataclass(frozen=True)
class RunSpec:
    """One run to make: the task (sent whole, so a worker needs no task files), mode, attempt, settings."""

    task: EvalTask
    mode: str
    attempt: int
    settings: RunSettings

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task.id, self.mode, self.attempt)

    @property
    def label(self) -> str:
        return f"{self.task.id} {self.mode}#{self.attempt}"


@dataclass
class RunRecord:
    """What a run returns to the driver: its record and its files (path relative to the report → text)."""

    run: EvalRun
    files: dict[str, str] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        """Plain JSON data, as a Ray worker sends it back (read with :meth:`from_wire`)."""
        return {"run": self.run.model_dump(mode="json"), "files": dict(self.files)}

    @classmethod
    def from_wire(cls, data: Any) -> RunRecord:
        """A record sent back by :meth:`to_wire`; ValueError when it is not one, or names a file outside
        the report's ``trees/`` and ``agents/`` folders."""
        if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
            raise ValueError(f"not a run record: {type(data).__name__}")
        run = EvalRun.model_validate(data.get("run"))
        files = data["files"]
        for path, text in files.items():
            if not isinstance(path, str) or not isinstance(text, str) or not is_record_path(path):
                raise ValueError(f"a run record names the file {path!r}, outside trees/ and agents/")
        return cls(run, dict(files))


def is_record_path(path: str) -> bool:
    """A file a run may leave: one name inside ``trees/`` or ``agents/``, nothing else."""
    parts = PurePosixPath(path).parts
    return (
        len(parts) == 2
        and parts[0] in (TREES_DIR, AGENTS_DIR)
        and parts[1] not in (".", "..")
        and "\\" not in path
        and not parts[1].startswith(".")
    )


def error_record(key: tuple[str, str, int], reason: str) -> RunRecord:
    """The record of a run that could not be made (its worker died, it raised): an error saying why."""
    task, mode, attempt = key
    return RunRecord(EvalRun(task=task, mode=mode, attempt=attempt, status="error", reason=reason))


async def execute(spec: RunSpec) -> RunRecord:
    """Make one run of ``spec.task`` in ``spec.mode`` (the retry baseline: several sessions; another agent:
    one turn of it); its record and files."""
    task, mode, attempt, settings = spec.task, spec.mode, spec.attempt, spec.settings
    if is_agent_mode(mode):
        return await _agent_run(spec)
    if mode != RETRY_MODE:
        outcome = await run_session(task, mode, settings, settings.budget_tokens, settings.budget_s)
        outcomes, status = [outcome], outcome.status
    else:
        outcomes, status = await _retry(task, settings)
    run = run_from(task.id, mode, attempt, outcomes, status)
    events = [
        e.model_copy(update={"run_id": f"try{i}:{e.run_id}"}) if len(outcomes) > 1 else e
        for i, outcome in enumerate(outcomes, start=1)
        for e in outcome.events
    ]
    files: dict[str, str] = {}
    if events:
        # The .arbor-tree.jsonl format of ide.protocol.tree.write_jsonl: one event per line.
        name = f"{TREES_DIR}/{task.id}.{mode}.{attempt}{TREE_FILE_SUFFIX}"
        files[name] = "".join(event.model_dump_json(exclude_defaults=True) + "\n" for event in events)
        run.tree_file = name
    return RunRecord(run, files)


async def _agent_run(spec: RunSpec) -> RunRecord:
    """One run of another agent on the task: a fresh workspace, its turn in a shadow, apply, check; its
    diff and transcript kept as the run's files."""
    task, mode, attempt, settings = spec.task, spec.mode, spec.attempt, spec.settings
    agent = next(a for a in settings.agents if a.mode == mode)
    scratch = await asyncio.to_thread(make_scratch, task, settings)
    try:
        workspace = scratch / "workspace"
        try:
            await asyncio.to_thread(build_workspace, task, workspace)
        except TaskError as exc:
            return error_record(spec.key, str(exc))
        env = run_env(settings, scratch, settings.budget_tokens, settings.budget_s)
        backend_env = {k: env[k] for k in ("ARBOR_CONFIG_DIR", "ARBOR_DATA_DIR", *EVAL_GIT_IDENTITY)}
        outcome = await run_agent(
            agent,
            task,
            workspace,
            model_server=settings.model_server,
            model=settings.model.partition(":")[2],
            budget_tokens=settings.budget_tokens,
            budget_s=settings.budget_s,
            backend_env=backend_env,
            confine=settings.confine,
            backend_command=settings.backend_command,
        )
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)
    run = outcome.as_run(task.id, mode, attempt)
    stem = f"{AGENTS_DIR}/{agent.name}.{task.id}.{attempt}"
    files: dict[str, str] = {}
    for suffix, text, name in (
        (".diff", outcome.diff, "diff_file"),
        (".txt", outcome.transcript, "transcript_file"),
    ):
        if text:
            files[stem + suffix] = text
            setattr(run, name, stem + suffix)
    return RunRecord(run, files)


async def _retry(task: EvalTask, settings: RunSettings) -> tuple[list[Outcome], str]:
    """ReAct, a fresh session on a fresh workspace each try, until solved or the budget is spent."""
    budget = settings.budget_tokens
    outcomes: list[Outcome] = []
    spent_tokens, spent_s = 0, 0.0
    for _ in range(MAX_RETRY_TRIES):
        left_s = settings.budget_s - spent_s
        if spent_tokens >= budget or left_s <= 0:
            break
        outcome = await run_session(task, "react", settings, budget - spent_tokens, left_s)
        outcomes.append(outcome)
        spent_tokens += outcome.tokens
        spent_s += outcome.wall_s
        if outcome.status in ("solved", "over_budget", "timeout"):
            return outcomes, outcome.status
        if outcome.status == "error" and outcome.tokens == 0:
            return outcomes, "error"  # nothing was spent: another try would fail the same way
    if spent_tokens >= budget:
        return outcomes, "over_budget"
    if spent_s >= settings.budget_s:
        return outcomes, "timeout"
    return outcomes, outcomes[-1].status if outcomes else "error"


def run_from(task: str, mode: str, attempt: int, outcomes: Sequence[Outcome], status: str) -> EvalRun:
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
