"""How the Eval dock words an ``arbor eval`` report: numbers, the header and the unfinished note. No Qt here.

The figures come from the report as ``arbor eval`` wrote it (:mod:`ide.protocol.eval`); nothing here
recomputes a statistic, it only says them in a few characters each.
"""

from __future__ import annotations

import datetime
import html
import math
import re

from ide.app.tree.verdict import RunCheck
from ide.protocol.eval import RETRY_MODE, EvalAgent, EvalReport, EvalRun, ModeSummary, is_agent_mode
from ide.protocol.eval import mode_label as agent_name

NONE = "—"
NOT_COUNTED = "not counted"
"""Another agent's tokens that its metering proxy never saw: unknown, never shown as 0."""
AGENT_MARK = "agent"
STATUS_TEXT = {
    "solved": "solved",
    "failed": "failed",
    "over_budget": "over budget",
    "timeout": "timeout",
    "error": "error",
}


def tokens_text(tokens: float | None) -> str:
    """``850``, ``12.3k``, ``1.25M``; ``—`` for None."""
    if tokens is None or not math.isfinite(tokens):
        return NONE
    if abs(tokens) < 1000:
        return f"{tokens:.0f}"
    if abs(tokens) < 1_000_000:
        return f"{tokens / 1000:.3g}k" if abs(tokens) < 100_000 else f"{tokens / 1000:.0f}k"
    return f"{tokens / 1_000_000:.3g}M"


def seconds_text(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``3 min 05 s``, ``1 h 02 min``; ``—`` for None."""
    if seconds is None or not math.isfinite(seconds):
        return NONE
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def percent(rate: float) -> str:
    """A rate 0–1 as a whole percentage."""
    return f"{rate * 100:.0f}%"


def rate_text(row: ModeSummary) -> str:
    """``62% (41–79%)``: the solve rate and its 95% interval; ``—`` before the mode's first run."""
    if not row.runs:
        return NONE
    return f"{percent(row.solve_rate)} ({row.ci_low * 100:.0f}–{row.ci_high * 100:.0f}%)"


def baseline_of(summary: list[ModeSummary]) -> ModeSummary | None:
    """The retry baseline's row, if the report has one."""
    return next((row for row in summary if row.mode == RETRY_MODE), None)


def cost_vs_baseline(row: ModeSummary, baseline: ModeSummary | None) -> tuple[str, str]:
    """The mode's cost relative to the retry baseline as ``arbor eval`` wrote it: (cell text, tooltip);
    blank for another agent whose tokens were not counted."""
    if not row.metered:
        return "", f"{mode_label(row.mode)}: its tokens were not counted, so it has no cost to compare"
    if row.cost_vs_retry is not None:
        ratio = ratio_text(row.cost_vs_retry)
        if row.mode == RETRY_MODE:
            return ratio, "The baseline: ReAct retried until solved or out of budget"
        return ratio, f"{row.mode} spent {ratio} the tokens the retry baseline spent on the tasks both ran"
    if baseline is None:
        return NONE, "The report has no retry baseline (arbor eval --modes without retry)"
    if not row.runs:
        return NONE, f"{row.mode} has no finished run yet"
    return NONE, "The report gives no cost ratio for this mode (no task ran both in it and in the baseline)"


def ratio_text(ratio: float) -> str:
    """A cost ratio as ``arbor eval`` prints it, two decimals (``0.05×``; one decimal read 0.05 as 0.0)."""
    return f"{ratio:.2f}×"


def mode_label(mode: str) -> str:
    """The mode as the tables and chart name it: the baseline and another agent (``agent:NAME``, shown by
    its name) say what they are."""
    if is_agent_mode(mode):
        return f"{agent_name(mode)} ({AGENT_MARK})"
    return f"{mode} (baseline)" if mode == RETRY_MODE else mode


def agent_of(report: EvalReport | None, mode: str) -> EvalAgent | None:
    """The other agent whose runs carry ``mode``, if it is one the report lists."""
    if report is None or not is_agent_mode(mode):
        return None
    return next((agent for agent in report.agents if agent.mode == mode), None)


def agent_tip(mode: str, agent: EvalAgent | None) -> str:
    """What a row or bar of another agent is: its name, kind and command line as run."""
    if agent is None:
        return f"{agent_name(mode)}: another agent (arbor eval --agent), not one of Arbor's modes"
    kind = "an ACP agent" if agent.protocol == "acp" else "a CLI agent"
    said = f"{agent.name}: another agent ({kind}, arbor eval --agent), run in a shadow workspace"
    return f"{said}\n{agent.command}"


def unmetered_tip(mode: str) -> str:
    """Why another agent's tokens read "not counted"."""
    return (
        f"{agent_name(mode)}'s tokens were not counted: its command and env did not name the model server "
        "({base_url} in its --agent command or [agents] entry), so Arbor's metering proxy could not stand "
        "in front of it. They are unknown, not 0; its transcript says the same."
    )


def summary_tokens(row: ModeSummary, value: float | None) -> str:
    """A summary row's token figure: ``not counted`` for an unmetered agent, ``—`` before any run."""
    if not row.metered:
        return NOT_COUNTED
    return tokens_text(value) if row.runs else NONE


def run_tokens(run: EvalRun) -> str:
    """A run's tokens: ``not counted`` for an unmetered agent's run."""
    return tokens_text(run.tokens) if run.metered else NOT_COUNTED


def when(timestamp: float) -> str:
    """A report time in local time, to the minute; ``—`` when unset."""
    if not timestamp:
        return NONE
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def expected_runs(report: EvalReport) -> int:
    """How many runs a finished report holds: tasks × modes × runs per task."""
    return len(report.tasks) * len(report.modes) * report.runs_per_task


def header_text(report: EvalReport) -> str:
    """One line about the report: model, what ran, budgets, when, and which Arbor."""
    runs = "run" if report.runs_per_task == 1 else "runs"
    parts = [
        f"Model {report.model}",
        f"{len(report.tasks)} tasks × {len(report.modes)} modes × {report.runs_per_task} {runs}",
        f"budget {tokens_text(report.budget_tokens)} tokens and {seconds_text(report.budget_s)} per run",
        f"started {when(report.started_at)}",
    ]
    if report.finished_at is not None:
        took = seconds_text(report.finished_at - report.started_at) if report.started_at else NONE
        parts.append(f"finished {when(report.finished_at)} (took {took})")
    if report.arbor_version:
        parts.append(f"Arbor {report.arbor_version}")
    return " · ".join(parts)


def unfinished_text(report: EvalReport) -> str | None:
    """The note of an unfinished evaluation, None when it finished."""
    if report.finished_at is not None:
        return None
    return (
        f"unfinished: {len(report.runs)} of {expected_runs(report)} runs — "
        "rerun arbor eval with the same --out to resume"
    )


CHECK_MARKS = {"solved": "✓ ", "failed": "✗ "}
"""Before a run's status: its task check passed (✓) or failed (✗); other ends ran no check."""


def run_status(run: EvalRun) -> str:
    """The run's status in words, marked by what its check said."""
    return CHECK_MARKS.get(run.status, "") + STATUS_TEXT.get(run.status, run.status)


def run_check(run: EvalRun) -> RunCheck:
    """What the run's task check said, for its tree: the answer it verified, or what it refuted."""
    why = reason_line(run.reason) if run.reason else ""
    if run.solved:
        return RunCheck(True, "the eval check passed")
    if run.status == "failed":
        return RunCheck(False, f"the eval check failed{': ' + why if why else ''}")
    ended = STATUS_TEXT.get(run.status, run.status)
    return RunCheck(None, f"the eval run ended {ended}{' (' + why + ')' if why else ''}; no check passed it")


PYTEST_COUNTS = re.compile(r"^=*\s*(\d+ (failed|passed|error|errors)\b.*?)\s*=*$")


def reason_line(reason: str) -> str:
    """The line of a run's reason worth a table cell: for a failing check's pytest tail, its first error
    (``E …``) and the counts (``2 failed in 0.17s``); otherwise the last line that says something."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    error = next((line[1:].strip() for line in lines if line.startswith("E ")), None)
    failed = next((line for line in lines if line.startswith("FAILED ")), None)
    counts = next((m.group(1) for line in reversed(lines) if (m := PYTEST_COUNTS.match(line))), None)
    if error or failed:
        head = error or failed or ""
        return one_line(f"{head} ({counts})" if counts else head)
    meaningful = [line for line in lines if not re.fullmatch(r"exit -?\d+", line)]
    return one_line(meaningful[-1] if meaningful else reason)


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs folded), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def plain_tip(text: str) -> str:
    """``text`` as a tooltip that shows it as written: report strings are input, and Qt would render a
    tooltip that looks like HTML as HTML."""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>" if text else ""
