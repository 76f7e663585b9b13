"""Two tasks of the shipped eval set for ``arbor eval --agent`` tests, and a scripted model that solves the
first and fails the second whatever agent asks: :data:`FIX_TASK` (a one-line bug in ``humanize/filesize.py``;
the model gives the fixed file, as the agent's edit format wants it) and :data:`QUESTION_TASK` (a question
the model answers wrong)."""

from __future__ import annotations

import asyncio
import io
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ide.client.agentproc import AgentChoice, resolve_agent
from ide.eval.agents import agents_under_test
from ide.eval.runner import EvalOptions, Evaluation
from ide.eval.tasks import apply_reference, build_workspace, load_tasks
from ide.protocol.eval import EvalReport

FIX_TASK = "humanize-naturalsize-boundary"
FIX_FILE = "humanize/filesize.py"
FIX_WORDS = "naturalsize(1000)"
"""Words of the fix task's prompt (how the script tells the tasks apart)."""
QUESTION_TASK = "q-mi-where-windowed"
WRONG_ANSWER = "It is defined in more_itertools/recipes.py."
TASKS = f"{FIX_TASK},{QUESTION_TASK}"
EVAL_AGENT = Path(__file__).with_name("eval_agent.py")


def fixed_text(scratch: Path) -> str:
    """The fix task's file as the reference fix leaves it."""
    (task,) = load_tasks(FIX_TASK)
    workspace = scratch / "reference"
    build_workspace(task, workspace)
    apply_reference(task, workspace)
    return (workspace / FIX_FILE).read_text(encoding="utf-8")


def asked(body: dict[str, Any]) -> str:
    """Everything the agent sent the model, as text."""
    return json.dumps(body.get("messages") or body.get("input") or body)


def eval_agent_command(*extra: str) -> str:
    """The ``--agent`` command of :mod:`tests.support.eval_agent` (a CLI agent)."""
    words = [sys.executable, str(EVAL_AGENT), *extra, "{base_url}", "{model}", "{prompt}"]
    return shlex.join(words)


def whole_file_script(fixed: str, block: Callable[[str], str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A FakeOpenAI ``side`` for agents that edit by whole files: the fix task gets ``block(fixed)``, any
    other request the wrong answer."""

    def side(body: dict[str, Any]) -> dict[str, Any]:
        if FIX_WORDS in asked(body):
            return {"content": "Fixed the boundary.\n" + block(fixed)}
        return {"content": WRONG_ANSWER}

    return side


def evaluate(
    out: Path,
    agents: list[str | AgentChoice],
    model_server: str,
    *,
    tasks: str = TASKS,
    budget_tokens: int = 50_000,
    budget_s: float = 240.0,
    model: str = "openai:local-model",
    confine: list[str] | None = None,
) -> tuple[EvalReport, str]:
    """Run ``arbor eval``'s evaluation of ``agents`` (and none of Arbor's modes) on ``tasks``; the report
    and what it logged."""
    choices = [spec if isinstance(spec, AgentChoice) else resolve_agent(spec, {}) for spec in agents]
    log = io.StringIO()
    options = EvalOptions(
        out=out,
        model=model,
        modes=[],
        tasks=load_tasks(tasks),
        baseline=False,
        budget_tokens=budget_tokens,
        budget_s=budget_s,
        agents=agents_under_test(choices),
        model_server=model_server,
        confine=confine,
    )
    report = asyncio.run(Evaluation(options, log=log).run())
    return report, log.getvalue()
