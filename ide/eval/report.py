"""The figures of an ``arbor eval`` report: a summary per mode, the text table, the HTML chart.

The summary of a mode counts every run of it: the solve rate with its 95% Wilson score interval (honest
for small samples and for rates of 0 or 1), median tokens and wall time per run, tokens spent per task
solved (all tokens of the mode ÷ runs solved), and the runs that went over the budget or ended in an
error. The retry baseline (ReAct retried until solved or the budget is spent) is the reference row: each
mode's cost is also given as a multiple of the baseline's tokens over the same tasks.
"""

from __future__ import annotations

import html
import math
import statistics
from pathlib import Path

from ide.protocol.eval import RETRY_MODE, EvalReport, EvalRun, ModeSummary, is_agent_mode, mode_label

CHART_FILE = "chart.html"
Z_95 = 1.959963984540054


def wilson_interval(solved: int, runs: int, z: float = Z_95) -> tuple[float, float]:
    """The 95% Wilson score interval of ``solved`` / ``runs``; (0, 1) when there are no runs."""
    if runs <= 0:
        return 0.0, 1.0
    p = solved / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize_runs(mode: str, runs: list[EvalRun]) -> ModeSummary:
    """The table row of ``mode`` over ``runs`` (its runs only)."""
    solved = sum(r.solved for r in runs)
    low, high = wilson_interval(solved, len(runs))
    total = sum(r.tokens for r in runs)
    metered = all(r.metered for r in runs)
    return ModeSummary(
        mode=mode,
        runs=len(runs),
        solved=solved,
        solve_rate=solved / len(runs) if runs else 0.0,
        ci_low=round(low, 4),
        ci_high=round(high, 4),
        median_tokens=float(statistics.median([r.tokens for r in runs])) if runs else 0.0,
        median_wall_s=round(float(statistics.median([r.wall_s for r in runs])), 3) if runs else 0.0,
        tokens_per_solved=round(total / solved, 1) if solved and metered else None,
        over_budget=sum(r.status == "over_budget" for r in runs),
        errors=sum(r.status == "error" for r in runs),
        metered=metered,
    )


def summarize(report: EvalReport) -> list[ModeSummary]:
    """One row per mode of the report, in its order (modes with no run yet included, with zero runs),
    each with its cost against the retry baseline (1.0 for the baseline itself, None without one)."""
    rows = [summarize_runs(mode, [r for r in report.runs if r.mode == mode]) for mode in report.modes]
    for row in rows:
        row.cost_vs_retry = cost_ratio(report, row.mode) if row.metered else None
    return rows


def cost_ratio(report: EvalReport, mode: str) -> float | None:
    """``mode``'s tokens over the tasks both it and the baseline ran, as a multiple of the baseline's."""
    base = {(r.task, r.attempt): r.tokens for r in report.runs if r.mode == RETRY_MODE}
    mine = {(r.task, r.attempt): r.tokens for r in report.runs if r.mode == mode}
    shared = base.keys() & mine.keys()
    base_total = sum(base[k] for k in shared)
    if not shared or base_total <= 0:
        return None
    return sum(mine[k] for k in shared) / base_total


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def row_name(mode: str) -> str:
    """A mode as the table names it: ``retry (reference)``, ``qwen (agent)``, or the mode."""
    if mode == RETRY_MODE:
        return f"{mode} (reference)"
    return f"{mode_label(mode)} (agent)" if is_agent_mode(mode) else mode


def format_table(report: EvalReport) -> str:
    """The text table ``arbor eval`` prints: one row per mode, the retry baseline last as the reference."""
    rows = summarize(report)
    rows.sort(key=lambda s: s.mode == RETRY_MODE)
    header = (
        "mode",
        "solved",
        "rate",
        "95% CI",
        "median tokens",
        "median s",
        "tokens/solved",
        "over budget",
        "errors",
        "cost ×retry",
    )
    lines = [header]
    for row in rows:
        ratio = row.cost_vs_retry
        lines.append(
            (
                row_name(row.mode),
                f"{row.solved}/{row.runs}",
                f"{row.solve_rate:.0%}",
                f"{row.ci_low:.0%}–{row.ci_high:.0%}",
                _number(row.median_tokens) if row.metered else "not counted",
                _number(row.median_wall_s, 1),
                _number(row.tokens_per_solved),
                str(row.over_budget),
                str(row.errors),
                f"{ratio:.2f}" if ratio is not None else "–",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    ]
    out.insert(1, "  ".join("-" * w for w in widths))
    title = (
        f"arbor eval: {report.model}, {len(report.tasks)} task(s) × {report.runs_per_task} run(s), "
        f"budget {report.budget_tokens:,} tokens / {report.budget_s:.0f} s per run"
    )
    return title + "\n" + "\n".join(line.rstrip() for line in out) + "\n"


BAR_W, GAP, LEFT, TOP, PLOT_H = 56, 28, 56, 40, 220
TITLE_CHAR_W = 7.5


def _svg_bars(
    title: str,
    modes: list[str],
    values: list[float | None],
    low_high: list[tuple[float, float] | None],
    *,
    top: float,
    label: str,
    css: str,
    unit: str = "",
) -> str:
    """One bar chart: a bar per mode (``class=css``), optional interval whiskers, value labels."""
    width = max(LEFT + len(modes) * (BAR_W + GAP) + GAP, int(len(title) * TITLE_CHAR_W) + 16)
    height = TOP + PLOT_H + 48
    scale = PLOT_H / top if top > 0 else 0.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}">',
        f'<text x="8" y="16" class="title">{html.escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{width - GAP / 2}" y2="{TOP + PLOT_H}" class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}" class="axis"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 4}" class="tick" text-anchor="end">{html.escape(label)}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + PLOT_H}" class="tick" text-anchor="end">0</text>',
    ]
    for index, (mode, value) in enumerate(zip(modes, values, strict=True)):
        x = LEFT + GAP + index * (BAR_W + GAP)
        shown = value or 0.0
        bar_h = shown * scale
        cls = f"{css} retry" if mode == RETRY_MODE else f"{css} agent" if is_agent_mode(mode) else css
        parts.append(
            f'<rect class="{cls}" data-mode="{html.escape(mode)}" x="{x}" y="{TOP + PLOT_H - bar_h:.1f}" '
            f'width="{BAR_W}" height="{bar_h:.1f}"><title>{html.escape(mode)}: '
            f"{'none solved' if value is None else f'{value:,.3g}{unit}'}</title></rect>"
        )
        interval = low_high[index]
        label_y = TOP + PLOT_H - bar_h - 4
        if interval is not None:
            label_y = min(label_y, TOP + PLOT_H - interval[1] * scale - 4)
            y1, y2 = TOP + PLOT_H - interval[0] * scale, TOP + PLOT_H - interval[1] * scale
            mid = x + BAR_W / 2
            parts.append(
                f'<path class="ci" d="M{mid} {y1:.1f} V{y2:.1f} M{mid - 8} {y1:.1f} H{mid + 8} '
                f'M{mid - 8} {y2:.1f} H{mid + 8}"/>'
            )
        text = "–" if value is None else (f"{value:.0%}" if unit == "%" else f"{value:,.0f}")
        parts.append(
            f'<text x="{x + BAR_W / 2}" y="{label_y:.1f}" class="value" '
            f'text-anchor="middle">{html.escape(text)}</text>'
        )
        parts.append(
            f'<text x="{x + BAR_W / 2}" y="{TOP + PLOT_H + 16}" class="mode" text-anchor="middle">'
            f"{html.escape(mode_label(mode))}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


STYLE = """
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 18px; } p.meta { color: #555; }
svg { margin: 8px 24px 24px 0; } .title { font-weight: 600; font-size: 13px; }
.axis { stroke: #888; } .tick, .mode, .value { font-size: 11px; fill: #333; }
.rate { fill: #4c78a8; } .cost { fill: #f58518; } .retry { fill: #9d9d9d; } .agent { fill: #54a24b; }
.ci { stroke: #222; stroke-width: 1.5; fill: none; }
table { border-collapse: collapse; }
td, th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
td:first-child, th:first-child { text-align: left; }
"""


def chart_html(report: EvalReport) -> str:
    """The report as one self-contained HTML page: solve rate per mode with its 95% interval, tokens per
    solved task, and the table."""
    rows = summarize(report)
    modes = [row.mode for row in rows]
    rate = _svg_bars(
        "Solve rate (95% Wilson interval)",
        modes,
        [row.solve_rate for row in rows],
        [(row.ci_low, row.ci_high) for row in rows],
        top=1.0,
        label="100%",
        css="rate",
        unit="%",
    )
    costs = [row.tokens_per_solved for row in rows]
    top = max((c for c in costs if c is not None), default=0.0)
    cost = _svg_bars(
        "Tokens per solved task",
        modes,
        costs,
        [None] * len(rows),
        top=top * 1.1,
        label=f"{top * 1.1:,.0f}",
        css="cost",
    )
    table = format_table(report)
    meta = (
        f"model {report.model} · {len(report.tasks)} task(s) × {report.runs_per_task} run(s) · budget "
        f"{report.budget_tokens:,} tokens / {report.budget_s:.0f} s per run · {len(report.runs)} run(s) done"
        + ("" if report.finished_at else " (unfinished)")
    )
    agents = "".join(
        f"<li>{html.escape(a.name)} ({a.protocol}): <code>{html.escape(a.command)}</code>"
        + (f", metered in front of {html.escape(a.model_server)}" if a.model_server else ", not metered")
        + "</li>"
        for a in report.agents
    )
    meta_agents = f'<p class="meta">Other agents (green):</p><ul>{agents}</ul>\n' if agents else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>arbor eval</title>'
        f'<style>{STYLE}</style></head><body>\n<h1>arbor eval</h1>\n<p class="meta">{html.escape(meta)}</p>\n'
        f"{meta_agents}{rate}\n{cost}\n<pre>{html.escape(table)}</pre>\n</body></html>\n"
    )


def write_chart(report: EvalReport, path: Path) -> Path:
    """Write :func:`chart_html` to ``path``; return it."""
    path.write_text(chart_html(report), encoding="utf-8")
    return path
