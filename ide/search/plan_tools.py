"""Plan / execute / replan: each agent's own tools (seed 002), beside the toolbox's read and edit tools.

- planner: ``create_subtask(title, detail?, files?)`` appends a subtask to the plan it is drafting (at most
  ``plan.max_tasks``, no duplicates); the subtasks are the plan, shown to the user as they are made.
- executor: ``run_command(argv, timeout_s?)`` runs a program — an argument list, never a shell — in a
  scratch git worktree holding the session's change set (``ide.changes.testrun``), after the user allowed
  it (``RunContext.permit``, the path the workflow and LATS test runs take), killed after its timeout
  (at most ``plan.command_timeout_s``); the model reads the exit status and the output's tail, or the
  refusal. ``attempt_completion(status, summary)`` ends the task, done or failed.
- replanner: ``analyze_failure(task?)`` gives a digest of a failed task from the run's state: its summary,
  its failed tool calls with their errors and its last command's output tail.

Argument lists are hostile input (the workspace steers the model): nothing runs without the user's
permission, and a run with no user to ask (``RunContext.ask_permission`` is None) runs nothing.
The graph (``ide.search.plan``) binds these schemas and routes calls to them here; the results change the
graph's state (``PlanState``: ``tasks``, ``details``, ``completion``, ``step_log``, ``failures``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, ValidationError

from ide.changes.testrun import run_tests
from ide.search.base import RunContext
from ide.search.events import cap_text, first_line
from ide.search.plan_prompts import EXECUTOR, PLANNER, REPLANNER

CREATE_SUBTASK = "create_subtask"
RUN_COMMAND = "run_command"
ATTEMPT_COMPLETION = "attempt_completion"
ANALYZE_FAILURE = "analyze_failure"

OWN_TOOLS: dict[str, tuple[str, ...]] = {
    PLANNER: (CREATE_SUBTASK,),
    EXECUTOR: (RUN_COMMAND, ATTEMPT_COMPLETION),
    REPLANNER: (ANALYZE_FAILURE,),
}
"""The tools each role has beside the toolbox's."""

TITLE_MAX = 200
DETAIL_MAX = 2000
FILES_MAX = 20
ARGV_MAX = 64
"""Arguments one run_command may pass."""
ARG_MAX = 4000
"""Characters of one argument."""
OUTPUT_TAIL = 4000
"""Characters of a command's output the executor reads (the tail: where failures are summarised)."""
DIGEST_TAIL = 1500
"""Characters of a command's output, or of a failed call's error, kept in a failure digest."""
DIGEST_CALLS = 8
"""Failed calls of one task kept in its digest (the last ones)."""


class SubtaskArgs(BaseModel):
    title: str = Field(description="the subtask: one concrete, checkable step, in one line")
    detail: str = Field("", description="how to do it and how to check it (optional)")
    files: list[str] = Field(
        default_factory=list, description="files it reads or changes, relative (optional)"
    )


class RunCommandArgs(BaseModel):
    argv: list[str] = Field(
        description='the program and its arguments, one string each, e.g. ["python", "-m", "pytest", "-q"];'
        " there is no shell: no pipes, &&, redirections or $VARS"
    )
    timeout_s: float | None = Field(
        None, description="seconds before it is killed (default and cap: the setting)"
    )


class CompletionArgs(BaseModel):
    status: Literal["done", "failed"] = Field(description='"done" or "failed"')
    summary: str = Field(description="what was done, or why it cannot be done, in one or two sentences")


class AnalyzeArgs(BaseModel):
    task: int | str | None = Field(
        None, description="the failed task's number, or words of its text; default: the last failed task"
    )


DESCRIPTIONS = {
    CREATE_SUBTASK: (
        SubtaskArgs,
        "Add one subtask to the plan, in order. The subtasks you create are the plan the executor runs.",
    ),
    RUN_COMMAND: (
        RunCommandArgs,
        "Run a program (tests, a linter, a script) in a scratch copy of the workspace holding your edits, "
        "after the user allows it. Returns the exit status and the end of its output.",
    ),
    ATTEMPT_COMPLETION: (
        CompletionArgs,
        "End the current task: done, or failed with why. Call it once the task is finished or impossible.",
    ),
    ANALYZE_FAILURE: (
        AnalyzeArgs,
        "What went wrong in a failed task: its summary, its failed tool calls with their errors and the "
        "output of its last command.",
    ),
}


@dataclass
class ToolResult:
    """A plan tool's answer to the model and what the graph's state gains from it."""

    output: str
    failed: bool = False
    label: str | None = None
    """The tree action's label after the call (run_command: with its exit status)."""
    changes: dict[str, Any] = field(default_factory=dict)
    """State keys the call sets (PlanState)."""


def _unused(**_kwargs: Any) -> str:
    raise RuntimeError("plan tools are run by the plan graph, not through LangChain")


def tool_schemas(role: str) -> list[BaseTool]:
    """The LangChain schemas of ``role``'s own tools, for binding beside the toolbox's."""
    return [
        StructuredTool.from_function(
            func=_unused, name=name, description=DESCRIPTIONS[name][1], args_schema=DESCRIPTIONS[name][0]
        )
        for name in OWN_TOOLS.get(role, ())
    ]


def offers(role: str, name: str) -> bool:
    return name in OWN_TOOLS.get(role, ())


def describe(name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    """Title and ACP tool kind of a call, for the user's tool-call card and the tree's action label."""
    if name == RUN_COMMAND:
        argv = args.get("argv")
        shown = shlex.join(argv) if _is_argv(argv) else str(argv)
        return f"Run {first_line(shown, 100)}", "execute"
    if name == ATTEMPT_COMPLETION:
        return f"Complete the task: {args.get('status', '?')}", "other"
    if name == ANALYZE_FAILURE:
        which = args.get("task")
        return ("Analyze the failure" + (f" of task {which}" if which not in (None, "") else "")), "think"
    if name == CREATE_SUBTASK:
        return f"Subtask: {first_line(str(args.get('title', '')), 100)}", "think"
    return name, "other"


def _is_argv(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(arg, str) for arg in value)


def _parse(model: type[BaseModel], args: Mapping[str, Any]) -> BaseModel:
    """``args`` validated, or ValueError listing each problem as ``field: message``."""
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(problems) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def create_subtask(
    args: Mapping[str, Any], tasks: Sequence[str], details: Mapping[str, str], max_tasks: int
) -> ToolResult:
    """Append a subtask to ``tasks`` (the plan being drafted); refused when empty, duplicate or too many."""
    try:
        parsed = _parse(SubtaskArgs, args)
    except ValueError as exc:
        return ToolResult(f"not added: {exc}", failed=True)
    assert isinstance(parsed, SubtaskArgs)
    title = _one_line(parsed.title)
    if not title:
        return ToolResult("not added: title is empty; say what the step does", failed=True)
    if len(title) > TITLE_MAX:
        return ToolResult(
            f"not added: the title has {len(title)} characters (at most {TITLE_MAX}); put the rest in detail",
            failed=True,
        )
    if any(_one_line(task).casefold() == title.casefold() for task in tasks):
        return ToolResult(f"not added: the plan already holds the subtask {title!r}", failed=True)
    if len(tasks) >= max_tasks:
        return ToolResult(
            f"not added: the plan already holds {len(tasks)} subtasks, the most it may (plan.max_tasks); "
            "stop adding and reply, or fold this step into an earlier subtask",
            failed=True,
        )
    files = [_one_line(path) for path in parsed.files if _one_line(path)][:FILES_MAX]
    parts = [cap_text(parsed.detail.strip(), DETAIL_MAX)] if parsed.detail.strip() else []
    if files:
        parts.append("Files: " + ", ".join(files))
    new_tasks = [*tasks, title]
    new_details = dict(details)
    if parts:
        new_details[title] = "\n".join(parts)
    return ToolResult(
        f"Subtask {len(new_tasks)} added: {title}. The plan holds {len(new_tasks)} of at most {max_tasks}. "
        "Add the next one, or reply with a one-line summary when the plan is complete.",
        changes={"tasks": new_tasks, "details": new_details},
    )


def check_argv(args: Mapping[str, Any]) -> tuple[list[str], float | None]:
    """The argument list and timeout of a run_command call, or ValueError saying what is wrong."""
    argv = args.get("argv")
    if isinstance(argv, str) and argv.lstrip().startswith("["):
        try:  # a list sent JSON-encoded, as some models do: still one string per argument
            args = {**args, "argv": json.loads(argv)}
        except ValueError:
            pass
        else:
            argv = args["argv"]
    if isinstance(argv, str):
        raise ValueError(
            "argv must be a list with one string per argument, e.g. "
            '["python", "-m", "pytest", "-q"]; a command line in one string is not run (there is no shell)'
        )
    parsed = _parse(RunCommandArgs, args)
    assert isinstance(parsed, RunCommandArgs)
    argv = parsed.argv
    if not argv or not argv[0].strip():
        raise ValueError('argv: name the program to run first, e.g. ["python", "-m", "pytest"]')
    if len(argv) > ARGV_MAX:
        raise ValueError(f"argv: {len(argv)} arguments, at most {ARGV_MAX}")
    for arg in argv:
        if "\x00" in arg:
            raise ValueError("argv: an argument holds a NUL character")
        if len(arg) > ARG_MAX:
            raise ValueError(f"argv: an argument has {len(arg)} characters, at most {ARG_MAX}")
    if parsed.timeout_s is not None and not parsed.timeout_s > 0:
        raise ValueError("timeout_s: give a number of seconds above 0, or leave it out")
    return argv, parsed.timeout_s


async def run_command(ctx: RunContext, args: Mapping[str, Any], step_log: Mapping[str, Any]) -> ToolResult:
    """Ask the user, then run the argument list in a scratch worktree of the session's change set."""
    try:
        argv, asked_timeout = check_argv(args)
    except ValueError as exc:
        return ToolResult(f"not run: {exc}", failed=True, label="Run: not run (bad arguments)")
    command = shlex.join(argv)
    cap = ctx.settings.plan.command_timeout_s
    timeout = min(asked_timeout or cap, cap)
    if ctx.ask_permission is None:
        return ToolResult(
            f"not run: {command} — this run has no user to ask for permission, and commands run only "
            "when the user allows them. Finish the task without running anything.",
            failed=True,
            label=f"Run {first_line(command, 60)} → not allowed",
        )
    title = f"Run in a scratch worktree with the proposed changes: {first_line(command, 160)}"
    if not await ctx.permit(title, command, purpose="command"):
        return ToolResult(
            f"not run: the user did not allow {command}. Do not ask for it again in this run; carry on "
            "without it, or end the task with attempt_completion.",
            failed=True,
            label=f"Run {first_line(command, 60)} → refused",
        )
    run = await run_tests(ctx.changeset, command, timeout)
    tail = run.output[-OUTPUT_TAIL:]
    cut = len(run.output) - len(tail)
    if run.timed_out:
        status, short = (
            f"killed after its timeout of {timeout:g} s (plan.command_timeout_s: {cap:g} s)",
            "timed out",
        )
    elif run.exit_code is None:
        status, short = f"could not start: {run.output.strip()}", "did not start"
        tail, cut = "", 0
    else:
        status, short = f"exit status {run.exit_code} after {run.seconds:g} s", f"exit {run.exit_code}"
    text = [
        f"$ {command}",
        f"{status} (in a scratch worktree holding the change set; the workspace itself is untouched)",
    ]
    if tail.strip():
        text.append(f"--- output{f' (last {len(tail)} characters)' if cut else ''} ---\n{tail}")
    elif run.exit_code is not None:
        text.append("(no output)")
    record = {
        "command": command,
        "exit_code": run.exit_code,
        "timed_out": run.timed_out,
        "output_tail": run.output[-DIGEST_TAIL:],
    }
    return ToolResult(
        "\n".join(text),
        failed=not run.passed,
        label=f"Run {first_line(command, 60)} → {short}",
        changes={"step_log": {**step_log, "last_command": record}},
    )


def attempt_completion(args: Mapping[str, Any], task_number: int) -> ToolResult:
    """End the current task; the graph goes on to the next task (done) or the replanner (failed)."""
    try:
        parsed = _parse(CompletionArgs, args)
    except ValueError as exc:
        return ToolResult(f"the task goes on: {exc}", failed=True)
    assert isinstance(parsed, CompletionArgs)
    summary = parsed.summary.strip() or parsed.status
    return ToolResult(
        f"Task {task_number} ended: {parsed.status}.",
        failed=False,
        changes={"completion": {"status": parsed.status, "summary": summary}},
    )


def record_failed_call(
    step_log: Mapping[str, Any], name: str, args: Mapping[str, Any], error: str
) -> dict[str, Any]:
    """``step_log`` with one more failed call (the last :data:`DIGEST_CALLS` are kept)."""
    shown = {k: cap_text(v, 300) if isinstance(v, str) else v for k, v in args.items()}
    calls = [*step_log.get("failed_calls", []), {"tool": name, "args": shown, "error": error[-DIGEST_TAIL:]}]
    return {**step_log, "failed_calls": calls[-DIGEST_CALLS:]}


def failure_digest(number: int, task: str, summary: str, step_log: Mapping[str, Any]) -> dict[str, Any]:
    """What the replanner's analyze_failure returns about one failed task."""
    return {
        "task_number": number,
        "task": task,
        "summary": summary,
        "failed_calls": list(step_log.get("failed_calls", [])),
        "last_command": step_log.get("last_command"),
    }


def analyze_failure(args: Mapping[str, Any], failures: Sequence[Mapping[str, Any]]) -> ToolResult:
    """The digest of the failed task ``args["task"]`` names (number or words), default the last one."""
    try:
        parsed = _parse(AnalyzeArgs, args)
    except ValueError as exc:
        return ToolResult(f"cannot analyze: {exc}", failed=True)
    assert isinstance(parsed, AnalyzeArgs)
    if not failures:
        return ToolResult("No task has failed in this run.")
    listed = "; ".join(f"task {f['task_number']}: {f['task']}" for f in failures)
    wanted = parsed.task
    if isinstance(wanted, str) and wanted.strip().isdigit():
        wanted = int(wanted.strip())
    if wanted is None or (isinstance(wanted, str) and not wanted.strip()):
        found = failures[-1]
    elif isinstance(wanted, int):
        found = next((f for f in failures if f["task_number"] == wanted), None)
    else:
        words = wanted.strip().casefold()
        found = next((f for f in reversed(failures) if words in f["task"].casefold()), None)
    if found is None:
        return ToolResult(f"no failed task matches {wanted!r}; the failed tasks are: {listed}", failed=True)
    digest = {**found, "failed_tasks": len(failures)}
    return ToolResult(json.dumps(digest, indent=1, ensure_ascii=False))


async def dispatch(
    ctx: RunContext, name: str, args: Mapping[str, Any], state: Mapping[str, Any]
) -> ToolResult:
    """Run one of the plan's own tools over the graph's ``state`` (a PlanState)."""
    if name == CREATE_SUBTASK:
        tasks, details = state.get("tasks") or [], state.get("details") or {}
        return create_subtask(args, tasks, details, ctx.settings.plan.max_tasks)
    if name == RUN_COMMAND:
        return await run_command(ctx, args, state.get("step_log") or {})
    if name == ATTEMPT_COMPLETION:
        return attempt_completion(args, len(state.get("past_steps") or []) + 1)
    if name == ANALYZE_FAILURE:
        return analyze_failure(args, state.get("failures") or [])
    return ToolResult(f"unknown tool {name!r}", failed=True)


def skip_reason(name: str, state: Mapping[str, Any], max_steps: int) -> str:
    """Why a call is answered without running: the task already ended, or no model calls are left."""
    if state.get("completion"):
        return "not run: the task already ended with attempt_completion"
    if state.get("steps", 0) >= max_steps and name != ATTEMPT_COMPLETION:
        return f"not run: this agent used all {max_steps} model calls (plan.executor_max_steps)"
    return ""
