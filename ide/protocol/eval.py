"""The report of ``arbor eval``: every run of every task in every mode, and a summary per mode.

``arbor eval`` writes it as JSON (``report.json`` in its output directory) beside one
``.arbor-tree.jsonl`` per run (the run's search tree, the format the Search tree dock opens) and a chart;
the window's Eval dock reads it with :func:`load_report`. It lives in the protocol package because both
sides read it: the evaluator (Qt-free) writes it and the window (which sees only ``ide.protocol``) shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from ide.protocol.wire import WireModel

REPORT_VERSION = 1
REPORT_FILE = "report.json"

RETRY_MODE = "retry"
"""The reference: ReAct retried (fresh session, same task) until solved or the token budget is spent."""
AGENT_PREFIX = "agent:"
"""The mode of another agent's runs is ``agent:NAME`` (``arbor eval --agent``): never one of Arbor's."""

RunStatus = Literal["solved", "failed", "over_budget", "timeout", "error"]


class RoleCost(WireModel):
    """What one model role cost in a run."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class EvalRun(WireModel):
    """One run of one task in one mode."""

    task: str
    mode: str = Field(description="react, lats, tot, plan, workflow, or retry (the baseline)")
    attempt: int = Field(0, description="0, 1, … when each task × mode runs several times (--runs)")
    status: RunStatus
    reason: str = Field(
        "", description="Why it was not solved: the failing check's tail, the budget, the error"
    )
    usage: dict[str, RoleCost] = Field(default_factory=dict, description="Cost per model role")
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_s: float = 0.0
    tree_nodes: int = 0
    recovered_calls: int = Field(0, description="Tool calls recovered from text")
    compactions: int = Field(0, description="Times the context was compacted to fit the model")
    tries: int = Field(1, description="Sessions the run used (more than one only for the retry baseline)")
    tree_file: str | None = Field(None, description="The run's tree, relative to the report's directory")
    diff_file: str | None = Field(
        None, description="Another agent's run: the changes it made (a unified diff), relative to the report"
    )
    transcript_file: str | None = Field(
        None, description="Another agent's run: what it said and did (text), relative to the report"
    )
    metered: bool = Field(
        True,
        description="False: another agent that was not pointed at the metering proxy, so its tokens are "
        "unknown (shown as such, never as 0)",
    )

    @property
    def solved(self) -> bool:
        return self.status == "solved"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task, self.mode, self.attempt)


class ModeSummary(WireModel):
    """One row of the table: a mode over every task and run."""

    mode: str
    runs: int
    solved: int
    solve_rate: float
    ci_low: float = Field(description="95% Wilson interval of the solve rate, lower end")
    ci_high: float
    median_tokens: float
    median_wall_s: float
    tokens_per_solved: float | None = Field(None, description="All tokens spent ÷ tasks solved; None if none")
    over_budget: int = 0
    errors: int = 0
    metered: bool = Field(
        True, description="False: another agent's tokens were not counted (its token figures mean nothing)"
    )
    cost_vs_retry: float | None = Field(
        None,
        description="Tokens over the tasks both this mode and the retry baseline ran ÷ the baseline's "
        "(ide.eval.report.cost_ratio); None without a baseline. The window shows it as written",
    )


class EvalAgent(WireModel):
    """Another agent of the evaluation (``--agent``): its runs are the mode ``agent:NAME``."""

    mode: str = Field(description="agent:NAME, the mode its runs carry")
    name: str
    command: str = Field(description="Its command line as run (shell-quoted), before the proxy's URL")
    protocol: Literal["acp", "cli"] = "acp"
    model_server: str | None = Field(
        None, description="The model server its metering proxy stood in front of (None: not metered)"
    )


def is_agent_mode(mode: str) -> bool:
    """The mode of another agent's runs (``agent:NAME``), not one of Arbor's."""
    return mode.startswith(AGENT_PREFIX)


def mode_label(mode: str) -> str:
    """How a mode is shown: an agent's name for ``agent:NAME``, else the mode."""
    return mode.removeprefix(AGENT_PREFIX)


class EvalReport(WireModel):
    """The whole report; ``runs`` grows as runs finish, so a report on disk is also the resume point."""

    version: int = REPORT_VERSION
    model: str = Field(description="The model spec the runs used (llm.model, or --model)")
    modes: list[str]
    agents: list[EvalAgent] = Field(
        default_factory=list, description="Other agents (--agent); their modes are in modes too"
    )
    tasks: list[str]
    runs_per_task: int = 1
    budget_tokens: int
    budget_s: float
    arbor_version: str = ""
    started_at: float = 0.0
    finished_at: float | None = Field(None, description="None while the evaluation is unfinished")
    runs: list[EvalRun] = Field(default_factory=list)
    summary: list[ModeSummary] = Field(default_factory=list)
    chart_file: str | None = Field(None, description="The chart (HTML with SVG), relative to the report")

    def run_of(self, task: str, mode: str, attempt: int = 0) -> EvalRun | None:
        return next((r for r in self.runs if r.key == (task, mode, attempt)), None)


class ReportError(ValueError):
    """A report file that cannot be read; the message says which file and why."""


def load_report(path: Path) -> EvalReport:
    """Read a report (``report.json`` or the directory holding it); :class:`ReportError` if it cannot."""
    file = path / REPORT_FILE if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{file}: cannot be read ({exc.strerror or exc})") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"{file}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or data.get("version") != REPORT_VERSION:
        found = data.get("version") if isinstance(data, dict) else type(data).__name__
        raise ReportError(f"{file}: not an Arbor eval report of version {REPORT_VERSION} (found {found!r})")
    try:
        return EvalReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReportError(f"{file}: {where}: {first['msg']}") from exc


def save_report(report: EvalReport, path: Path) -> None:
    """Write ``report`` atomically (a crash mid-write leaves the previous report, so resume still works)."""
    file = path / REPORT_FILE if path.is_dir() else path
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(report.model_dump_json(indent=1), encoding="utf-8")
    tmp.replace(file)
