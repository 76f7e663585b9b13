"""Plan / execute / replan: the agents' roles and prompts, the graph state, and parsing their answers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, Field

from ide.search.base import parse_structured

PLANNER = "plan.planner"
EXECUTOR = "plan.executor"
REPLANNER = "plan.replanner"

AGENT_NAMES = {PLANNER: "planner", EXECUTOR: "executor", REPLANNER: "replanner"}
"""The ``name`` each agent's replies carry in the shared thread."""

PLANNER_PROMPT = """You are the planner of Arbor, a coding agent working in the workspace at {root}.
Plan the user's last request as a short list of subtasks that another agent, the executor, will carry out
one at a time with file reading and editing tools. You may first look at the workspace with
read_file(path, start_line?, end_line?), list_dir(path) and grep(pattern, path?); paths are relative
to the workspace root. Do not change anything yourself.
Then make the plan with create_subtask(title, detail?, files?), once per subtask, in order: at most
{max_tasks}, each one concrete, checkable step naming the files it touches. When the plan is complete,
reply with a one-line summary and no tool call.
If you cannot call tools, reply with the plan and nothing else instead: a numbered list ("1. ...") or a
JSON object {schema}."""

EXECUTOR_PROMPT = """You are the executor of Arbor, a coding agent working in the workspace at {root}.
The conversation so far holds the user's request, the planner's plan and the work on earlier tasks.
Carry out only the task you are given now. Read with read_file, list_dir and grep; change files with
edit_file(path, old_text, new_text), write_file, create_file, delete_file and rename_file. Paths are
relative to the workspace root. Your edits are proposals the user reviews; your reads already see them.
run_command(argv, timeout_s?) runs a program, e.g. argv ["python", "-m", "pytest", "-q"], in a scratch
copy of the workspace holding your edits, once the user allows it; there is no shell, so give one
string per argument. When the task is done, or you find it cannot be done, call
attempt_completion(status, summary) with status "done" or "failed". If you cannot call tools, end your
last reply with a JSON object {schema} instead."""

REPLANNER_PROMPT = """You are the replanner of Arbor, a coding agent working in the workspace at {root}.
The conversation holds the user's request, the plan and the work on each task so far. You may look at
the workspace with read_file, list_dir and grep; after a failed task, analyze_failure(task?) tells what
went wrong (its failed tool calls with their errors, its last command's output). Decide what happens
next and reply with only a JSON object {schema}:
- {{"done": true, "answer": "..."}} when the request is complete (or cannot be completed): the answer
  is the final message to the user, in Markdown, saying what was changed and citing files as path:line;
- {{"tasks": ["...", ...]}} otherwise: the tasks still to do, in order, at most {max_tasks}. After a
  failed task, change the plan: retry it another way, split it, or drop it."""


class PastStep(TypedDict):
    """A task the executor ran: what it was, what came of it, and whether it succeeded."""

    task: str
    result: str
    ok: bool


class PlanState(TypedDict, total=False):
    """The graph's state; ``messages`` is the thread the three agents share."""

    messages: Annotated[list[AnyMessage], add_messages]
    steps: int
    """Model calls of the agent now running, in this visit."""
    tasks: list[str]
    """The queue: tasks not started yet."""
    current: str | None
    past_steps: list[PastStep]
    replans: int
    answer: str | None
    stop_reason: str
    details: dict[str, str]
    """A subtask's detail and files (create_subtask), by its title: the executor is given them."""
    completion: dict[str, str] | None
    """The running task's end, from attempt_completion: ``status`` and ``summary``."""
    step_log: dict[str, Any]
    """The running task's failed tool calls (``failed_calls``) and last run_command (``last_command``)."""
    failures: list[dict[str, Any]]
    """A digest of each failed task (``ide.search.plan_tools.failure_digest``), for analyze_failure."""


class PlanReply(BaseModel):
    tasks: list[str] = Field(description="the tasks, in order")


class TaskReport(BaseModel):
    status: Literal["done", "failed"] = Field(description='"done" or "failed"')
    summary: str = Field("", description="what was done or why it failed, one or two sentences")


class ReplanReply(BaseModel):
    done: bool = Field(False, description="true when the request is complete or cannot be completed")
    answer: str = Field("", description="when done: the final answer to the user")
    tasks: list[str] = Field(default_factory=list, description="when not done: the tasks still to do")


_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*]?\s*(?:step|task)\s+\d+[.:)])\s+(.+?)\s*$", re.IGNORECASE)


def parse_plan(text: str, max_tasks: int) -> list[str]:
    """The tasks of a planner's reply: ``{"tasks": [...]}`` or a numbered list.

    Raises ``ValueError`` with a reason the model can act on (no tasks, empty tasks, too many).
    """
    try:
        tasks = parse_structured(text, PlanReply).tasks
    except ValueError as exc:
        tasks = [m.group(1) for m in map(_NUMBERED.match, text.splitlines()) if m]
        if not tasks:
            raise ValueError(f"no numbered list of tasks and no JSON plan ({exc})") from None
    return check_tasks(tasks, max_tasks)


def check_tasks(tasks: Sequence[str], max_tasks: int) -> list[str]:
    """``tasks`` stripped, or ``ValueError`` when there are none, one is empty, or there are too many."""
    cleaned = [task.strip() for task in tasks]
    if not cleaned:
        raise ValueError("tasks: the plan has no tasks")
    if not all(cleaned):
        raise ValueError("tasks: a task is empty")
    if len(cleaned) > max_tasks:
        raise ValueError(f"tasks: {len(cleaned)} tasks, but a plan may hold at most {max_tasks}; merge some")
    return cleaned


def parse_replan(text: str, max_tasks: int, *, left: Sequence[str], after_failure: bool) -> ReplanReply:
    """The replanner's decision; ``ValueError`` when it is unusable (or, after a failure, keeps the queue
    ``left`` exactly as it was)."""
    reply = parse_structured(text, ReplanReply)
    if reply.done:
        if not reply.answer.strip():
            raise ValueError('answer: "done" needs the answer for the user')
        return reply
    reply.tasks = check_tasks(reply.tasks, max_tasks)
    if after_failure and reply.tasks == list(left):
        raise ValueError("tasks: unchanged after a failed task; retry it another way, split it or drop it")
    return reply


def task_report(text: str) -> TaskReport:
    """The executor's report at the end of its last reply; without one the task counts as done."""
    try:
        return parse_structured(text, TaskReport)
    except ValueError:
        return TaskReport(status="done", summary=text.strip() or "finished without a summary")


def numbered(tasks: Sequence[str]) -> str:
    return "\n".join(f"{i}. {task}" for i, task in enumerate(tasks, start=1))


def progress_text(past: Sequence[PastStep]) -> str:
    return "\n".join(
        f"{i}. [{'done' if step['ok'] else 'FAILED'}] {step['task']} — {step['result']}"
        for i, step in enumerate(past, start=1)
    )
