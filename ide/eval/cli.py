"""``arbor eval``: parse the options, check the model can answer, run the evaluation, print the table."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ide.client.process import on_stop_signals
from ide.protocol.eval import REPORT_FILE, EvalReport
from ide.protocol.modes import AUTO_CHOICES

if TYPE_CHECKING:
    from ide.eval.agents import AgentUnderTest
    from ide.eval.runner import Evaluation

MODES = AUTO_CHOICES
"""The architectures ``arbor eval`` compares: every one ``auto`` may choose (``auto`` is not one)."""

EXIT_OK = 0
EXIT_BAD = 2
EXIT_INTERRUPTED = 130
DEFAULT_OUT = "arbor-eval"
DEFAULT_BUDGET_TOKENS = 200_000
DEFAULT_BUDGET_S = 900.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """The ``eval`` subcommand's options."""
    parser = sub.add_parser(
        "eval",
        help="measure each agent architecture's solve rate and cost on the eval task set",
        description="Run every task of the eval set in each mode (and the retry baseline: ReAct retried "
        "until solved or the token budget is spent) through the backend, apply the changes in a scratch "
        "copy, run the task's check, and report solve rate with its 95% interval and cost per mode. "
        f"Writes OUT/{REPORT_FILE}, OUT/trees/*.arbor-tree.jsonl and OUT/chart.html; run the same "
        "command again to resume an interrupted evaluation.",
    )
    parser.add_argument("--tasks", default="*", help="glob(s) of task ids, comma-separated (default: all)")
    parser.add_argument(
        "--tasks-dir",
        default=None,
        help="directory of task YAML files (default: the shipped task set); their check commands run, "
        "so use only task files you trust",
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"Arbor's modes to compare, comma-separated, or none (default: {','.join(MODES)})",
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar='NAME|"CMD"',
        help="another agent to run on every task beside the modes (repeatable): a name of the [agents] "
        "settings or a command line (an ACP agent, or a CLI agent with {prompt}); {base_url} and {model} "
        "in it stand for the model server (through the metering proxy) and --model's name",
    )
    parser.add_argument(
        "--model-server",
        default=None,
        metavar="URL",
        help="the model server the agents use, metered by a local proxy in front of it (default: the "
        "server of --model: llm.openai_base_url or llm.ollama_host)",
    )
    parser.add_argument("--model", default=None, help="model as provider:model (default: llm.model)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each task in each mode (default: 1)")
    parser.add_argument(
        "--budget-tokens",
        type=int,
        default=DEFAULT_BUDGET_TOKENS,
        help=f"model tokens (in + out) one run may spend (default: {DEFAULT_BUDGET_TOKENS})",
    )
    parser.add_argument(
        "--budget-seconds",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"wall time one run may take, seconds (default: {DEFAULT_BUDGET_S:.0f})",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (default: 1)")
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS|local",
        help="make the runs as Ray tasks on the Ray cluster at ADDRESS (ray://host:10001, host:6379, auto), "
        "or on a Ray instance started here with --jobs CPUs (local); --jobs bounds the runs in flight. "
        "Needs pip install 'arbor-ide[ray]' here and arbor-ide[eval] on every worker",
    )
    parser.add_argument("--no-baseline", action="store_true", help="leave out the retry baseline")
    parser.add_argument(
        "--fresh", action="store_true", help="start over, discarding a report already in --out"
    )
    return parser


def _fail(err: TextIO, message: str) -> int:
    err.write(f"arbor eval: {message}\n")
    return EXIT_BAD


async def check_model(model: str) -> str | None:
    """Why ``model`` cannot answer (server down, model not pulled, script missing…), or None."""
    from ide.llm.errors import ModelError
    from ide.llm.health import probe_model
    from ide.llm.spec import parse_model_spec
    from ide.settings import SettingsError, load_settings

    try:
        settings = load_settings(None).settings
        spec = parse_model_spec(model, base_dir=Path.cwd())
    except (SettingsError, ModelError) as exc:
        return str(exc)
    checks = await probe_model(spec, settings)
    # Reachable and present are required; a capability warning (tools…) is the evaluation's to measure.
    for check in checks[:2]:
        if check.ok is False:
            return f"{model}: {check.name}: {check.detail}" + (f" ({check.fix})" if check.fix else "")
    return None


def run_eval(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``arbor eval``: 0 when the evaluation completed (whatever the solve rates), 2 on bad arguments, a
    missing task set or an unreachable model, 130 when interrupted (the report is kept for resuming)."""
    from ide.eval.runner import EvalError, EvalOptions, Evaluation
    from ide.eval.tasks import TaskError, load_tasks

    out = out or sys.stdout
    err = err or sys.stderr

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if modes == ["none"]:
        modes = []
    unknown = [m for m in modes if m not in MODES]
    if (not modes and not args.agent) or unknown:
        return _fail(
            err, f"--modes: unknown mode(s) {', '.join(unknown) or '(none given)'}; use {', '.join(MODES)}"
        )
    if len(set(modes)) != len(modes):
        return _fail(err, "--modes: a mode is named twice")
    for name, value in (
        ("--runs", args.runs),
        ("--budget-tokens", args.budget_tokens),
        ("--jobs", args.jobs),
    ):
        if value < 1:
            return _fail(err, f"{name} must be at least 1 (got {value})")
    if args.budget_seconds <= 0:
        return _fail(err, f"--budget-seconds must be positive (got {args.budget_seconds})")
    if args.ray is not None:
        from ide.eval.distributed import RayUnavailable, import_ray

        if not args.ray.strip():
            return _fail(err, "--ray: give the cluster's address, or local")
        try:
            import_ray()
        except RayUnavailable as exc:
            return _fail(err, str(exc))
    try:
        tasks = load_tasks(args.tasks, Path(args.tasks_dir).resolve() if args.tasks_dir else None)
    except TaskError as exc:
        return _fail(err, str(exc))
    if not tasks:
        return _fail(err, f"no task matches --tasks {args.tasks!r}")
    model = args.model
    if model is None:
        from ide.settings import SettingsError, load_settings

        try:
            model = load_settings(None).settings.llm.model
        except SettingsError as exc:
            return _fail(err, str(exc))
    if model.startswith("scripted:"):
        model = "scripted:" + str(Path(model.removeprefix("scripted:")).resolve())
    if modes or not args.no_baseline:  # Arbor's own runs need the model; the agents need only its server
        problem = asyncio.run(check_model(model))
        if problem is not None:
            return _fail(err, f"the model cannot be used: {problem}")
    try:
        agents, server, confine = _agents(args, model)
    except ValueError as exc:
        return _fail(err, str(exc))
    options = EvalOptions(
        out=Path(args.out).resolve(),
        model=model,
        modes=modes,
        tasks=tasks,
        runs=args.runs,
        budget_tokens=args.budget_tokens,
        budget_s=args.budget_seconds,
        jobs=args.jobs,
        baseline=not args.no_baseline,
        fresh=args.fresh,
        agents=agents,
        model_server=server,
        confine=confine,
        ray=args.ray.strip() if args.ray is not None else None,
    )
    try:
        evaluation = Evaluation(options, log=err)
    except EvalError as exc:
        return _fail(err, str(exc))
    done_before = len(evaluation.report.runs)
    total = done_before + len(evaluation.pending())
    err.write(f"[eval] {model}: {len(tasks)} task(s), modes {', '.join(options.all_modes)}, {total} run(s)")
    err.write(f", {done_before} already done (resuming)\n" if done_before else "\n")
    if options.ray is not None:
        err.write(f"[eval] the runs are Ray tasks on {options.ray}, {options.jobs} at most at once\n")
    try:
        report = asyncio.run(_run(evaluation))
    except EvalError as exc:
        return _fail(err, str(exc))
    except OSError as exc:
        return _fail(err, f"cannot write the report in {options.out}: {exc.strerror or exc}")
    out.write(evaluation.table())
    if report.finished_at is None:
        err.write(
            f"[eval] interrupted after {len(report.runs)} of {total} runs; {options.out / REPORT_FILE} "
            "is kept: run the same command again to resume\n"
        )
        return EXIT_INTERRUPTED
    out.write(f"report: {options.out / REPORT_FILE}\nchart: {options.out / (report.chart_file or '')}\n")
    return EXIT_OK


def _agents(
    args: argparse.Namespace, model: str
) -> tuple[list[AgentUnderTest], str | None, list[str] | None]:
    """The ``--agent`` agents, the model server their proxies front, and where a confined agent may write
    (None: not confined); ValueError says what is wrong."""
    from ide.client.agentproc import resolve_agent
    from ide.eval.agents import agents_under_test
    from ide.settings import SettingsError, load_settings

    if not args.agent:
        return [], None, None
    try:
        settings = load_settings(None).settings
    except SettingsError as exc:
        raise ValueError(str(exc)) from None
    agents = agents_under_test([resolve_agent(spec, settings.agents) for spec in args.agent])
    server = args.model_server or model_server(model, settings)
    if server is None:
        raise ValueError(
            f"--agent: which model server the agents use is not known from --model {model!r}; "
            "name it with --model-server URL"
        )
    if not server.startswith(("http://", "https://")):
        raise ValueError(f"--model-server {server!r}: not an http(s) URL")
    review = settings.review
    return agents, server, (list(review.agent_writable) if review.confine_agents else None)


def model_server(model: str, settings: Any) -> str | None:
    """The server of ``model`` (provider:name) as the settings and environment say: an OpenAI-compatible
    server's URL, Ollama's host, Anthropic's API; None for a scripted model or an unknown server."""
    import os

    provider = model.partition(":")[0]
    if provider == "openai":
        return (
            settings.llm.openai_base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        )
    if provider == "ollama":
        return str(settings.llm.ollama_host)
    if provider == "anthropic":
        return "https://api.anthropic.com"
    return None


async def _run(evaluation: Evaluation) -> EvalReport:
    evaluation.open()  # first: starting Ray replaces the process's SIGTERM handler
    with on_stop_signals(evaluation.stop):  # SIGTERM stops it as Ctrl-C does: each run's arbor acp is stopped
        return await evaluation.run()
