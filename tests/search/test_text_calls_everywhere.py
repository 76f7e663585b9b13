"""Tool calls a model writes as text drive every architecture the same as structured ones: the ReAct agent
through ``arbor run`` against the simulated Ollama in every shape, and LATS expansion, the plan executor,
the ToT researcher and workflow stage agents with the scripted model writing its calls out.

On main: 0 of 3 shapes led to the edit through ``arbor run`` — the JSON was printed as the answer."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.protocol.tree import is_recovered
from ide.search.lats import LatsSearch
from ide.search.plan import PlanExecute
from ide.search.tot import TotSearch
from ide.workflows.mode import WorkflowMode
from tests.support.fake_ollama import TEXT_SHAPES, FakeOllama, render_text_tool_calls
from tests.support.feature_workflow import FEATURE_SCRIPT, NEW_ARG, cli_project, make_ctx  # noqa: F401  (fixtures)
from tests.support.lats_script import EDIT_WINS
from tests.support.plan_script import GREET, two_task_script
from tests.support.runs import Run
from tests.support.tot_script import analyze, criticise, plan, research, synthesise


def written_out(lines: list[dict[str, Any]], shape: str) -> list[dict[str, Any]]:
    """The script with every line's tool calls written into its content, as a text-calling model does."""
    out = []
    for line in lines:
        calls = line.get("tool_calls")
        if not calls:
            out.append(line)
            continue
        text = render_text_tool_calls(calls, shape)
        prose = str(line.get("content") or "")
        out.append(
            {**{k: v for k, v in line.items() if k != "tool_calls"}, "content": f"{prose}\n{text}".strip()}
        )
    return out


def recovered_starts(run: Run) -> list[dict[str, Any]]:
    return [event for event in run.progress if event["type"] == "tool_start" and is_recovered(event["id"])]


@pytest.mark.parametrize("shape", TEXT_SHAPES)
def test_arbor_run_applies_an_edit_the_model_wrote_as_text(git_workspace: Path, shape: str) -> None:
    edit = {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
    with FakeOllama(
        responses=[
            {"tool_calls": [edit], "prose": "I'll change the greeting."},
            {"content": "Changed it to Hi."},
        ],
        text_tool_calls=shape,
    ) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ide",
                "run",
                "-w",
                str(git_workspace),
                "--apply",
                "say Hi instead of Hello",
            ],
            env={**os.environ, "ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert 'return f"Hi, {name}!"' in (git_workspace / "pkg" / "greet.py").read_text()
    # The prose around the call is said; the call itself never shows as answer text.
    assert done.stdout.split() == ["I'll", "change", "the", "greeting.", "Changed", "it", "to", "Hi."]
    assert "recovered from text" in done.stderr


async def test_lats_expansion(make_run: Callable[..., Run]) -> None:
    run = make_run(
        written_out(EDIT_WINS, "bare"), lats={"expansion_width": 2, "beam_width": 1, "max_iterations": 5}
    )
    outcome = await LatsSearch().run(run.ctx)
    assert outcome.stop_reason == "end_turn" and outcome.changeset is not None
    assert 'f"Hi, {name}!"' in outcome.changeset.read_text("pkg/greet.py")
    actions = [n for n in run.ctx.recorder.tree.nodes.values() if n.action is not None]
    assert actions and all(n.action.recovered for n in actions)  # type: ignore[union-attr]


async def test_the_plan_executor(make_run: Callable[..., Run]) -> None:
    run = make_run(written_out(two_task_script(), "qwen"), architecture="plan")
    outcome = await PlanExecute().run(run.ctx)
    assert outcome.stop_reason == "end_turn"
    assert run.ctx.changeset.read_text("pkg/greet.py") == GREET.replace("Hello", "Hi")
    assert [e["name"] for e in recovered_starts(run)] == ["read_file", "edit_file", "edit_file"]


async def test_the_tot_researcher(make_run: Callable[..., Run]) -> None:
    lines = [
        plan("Read greet", "Look around"),
        research(tools=[{"name": "read_file", "args": {"path": "pkg/greet.py"}}]),
        research("B: nothing else matters"),
        research("A: pkg/greet.py:2 returns Hello"),
        *[analyze(8), criticise(8), analyze(5), criticise(5)],
        synthesise(),
    ]
    run = make_run(written_out(lines, "mistral"), architecture="tot", tot={"max_depth": 1})
    outcome = await TotSearch().run(run.ctx)
    tree = run.ctx.recorder.tree
    [read] = [n for n in tree.nodes.values() if n.action is not None]
    assert read.action.recovered and 'return f"Hello, {name}!"' in (read.observation or "")  # type: ignore[union-attr]
    assert outcome.stop_reason == "end_turn"


async def test_workflow_stage_agents(cli_project: Path, make_ctx: Callable[..., Run]) -> None:  # noqa: F811
    run = make_ctx(
        cli_project,
        written_out(FEATURE_SCRIPT, "llama"),
        workflows={"test_command": f"{sys.executable} -m pytest -q"},
    )

    async def allow(title: str, command: str, purpose: str) -> bool:
        return True

    run.ctx.ask_permission = allow
    outcome = await WorkflowMode().run(run.ctx)
    assert outcome.figures["outcome"] == "done"
    assert outcome.changeset is not None and NEW_ARG in outcome.changeset.read_text("greeter/cli.py")
    assert recovered_starts(run)
