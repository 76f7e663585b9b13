"""Plan / execute / replan agents with their own tools (seed 002): the planner's create_subtask, the
executor's run_command (asked first, argv only, in a scratch worktree, with a timeout) and
attempt_completion, and the replanner's analyze_failure — on scripted models over a real git workspace."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import AgentPlanUpdate
from langchain_core.messages import ToolMessage

from ide.backend.session import translate_event
from ide.search.plan import PlanExecute
from ide.search.plan_tools import analyze_failure, check_argv, create_subtask, failure_digest
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.plan_script import GREET, capture_calls, edit, executor, nodes_of, planner, replanner
from tests.support.procs import running_pid
from tests.support.runs import Run

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # the plan view test: never a window on the screen

HI = GREET.replace("Hello", "Hi")


def subtask(title: str, detail: str = "", files: list[str] | None = None) -> list[dict[str, Any]]:
    args: dict[str, Any] = {"title": title}
    if detail:
        args["detail"] = detail
    if files is not None:
        args["files"] = files
    return [{"name": "create_subtask", "args": args}]


def command(argv: Any, timeout_s: float | None = None) -> list[dict[str, Any]]:
    args: dict[str, Any] = {"argv": argv}
    if timeout_s is not None:
        args["timeout_s"] = timeout_s
    return [{"name": "run_command", "args": args}]


def complete(status: str, summary: str) -> list[dict[str, Any]]:
    return [{"name": "attempt_completion", "args": {"status": status, "summary": summary}}]


def done(answer: str) -> str:
    return json.dumps({"done": True, "answer": answer})


def asker(answer: bool) -> tuple[list[tuple[str, str]], Callable[[str, str, str], Any]]:
    """A run's ask_permission that answers ``answer`` and records what it was asked."""
    asked: list[tuple[str, str]] = []

    async def ask(title: str, cmd: str, purpose: str) -> bool:
        assert purpose == "command"
        asked.append((title, cmd))
        return answer

    return asked, ask


def tool_messages(messages: list[Any], name: str) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


def plan_updates(run: Run) -> list[list[tuple[str, str]]]:
    return [
        [(e["content"], e["status"]) for e in ev["entries"]] for ev in run.progress if ev["type"] == "plan"
    ]


# The planner's create_subtask


async def test_create_subtask_makes_the_plan_shown_at_once(make_run: Callable[..., Run]) -> None:
    first, second = "Change greet in pkg/greet.py to say Hi", "Say so in README.md"
    run = make_run(
        [
            planner(tool_calls=subtask(first, "Only the string changes.", ["pkg/greet.py"])),
            planner(tool_calls=subtask(second)),
            planner(tool_calls=subtask("say so in  README.md")),  # the same subtask again: refused
            planner("The plan is made: two subtasks."),  # a summary, not a list: the subtasks are the plan
            executor(tool_calls=edit("pkg/greet.py", "Hello", "Hi")),
            executor(tool_calls=complete("done", "greet says Hi")),
            executor(tool_calls=edit("README.md", "Says hello.", "Says hi.")),
            executor(tool_calls=complete("done", "README says hi")),
            replanner(done("greet says Hi (pkg/greet.py:2).")),
        ],
        architecture="plan",
    )
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.answer == "greet says Hi (pkg/greet.py:2)."
    assert run.ctx.changeset.read_text("pkg/greet.py") == HI
    assert "create_subtask" in calls[0][2] and "run_command" not in calls[0][2]
    # Each subtask reached the user's plan view the moment it was made; the refused duplicate did not.
    assert plan_updates(run)[:3] == [
        [(first, "pending")],
        [(first, "pending"), (second, "pending")],
        [(first, "in_progress"), (second, "pending")],
    ]
    refused = tool_messages(calls[3][1], "create_subtask")[-1]
    assert refused.status == "error" and "already holds the subtask" in refused.text
    # The executor is given the subtask's detail and files.
    task_prompt = calls[4][1][-1].text
    assert task_prompt.startswith(f"Execute task 1 (1 more queued after it): {first}")
    assert "Only the string changes.\nFiles: pkg/greet.py" in task_prompt
    # In the tree: one step per subtask, made as they were created, under the plan node.
    (plan,) = nodes_of(run, "plan")
    assert plan.label == "plan: 2 tasks" and plan.thought == f"1. {first}\n2. {second}"
    steps = nodes_of(run, "step")
    assert [(s.label, s.status, s.parent) for s in steps] == [
        (f"{first} · done", "evaluated", plan.id),
        (f"{second} · done", "evaluated", plan.id),
    ]
    assert steps[0].observation == "attempt_completion: done"
    # The ACP plan update the window renders carries the subtasks' titles and statuses.
    update = translate_event({"type": "plan", "entries": [{"content": first, "status": "pending"}]})
    assert isinstance(update, AgentPlanUpdate)
    assert [(e.content, e.status) for e in update.entries] == [(first, "pending")]


async def test_create_subtask_stops_at_plan_max_tasks(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            planner(tool_calls=[*subtask("Edit pkg/greet.py"), *subtask("Edit README.md")]),
            planner("Done planning."),
            executor(tool_calls=complete("done", "edited")),
            replanner(done("Edited.")),
        ],
        architecture="plan",
        plan={"max_tasks": 1},
    )
    calls = capture_calls(run)

    await PlanExecute().run(run.ctx)

    over = tool_messages(calls[1][1], "create_subtask")
    assert [m.status for m in over] == ["success", "error"]
    assert "already holds 1 subtasks, the most it may (plan.max_tasks)" in over[1].text
    assert [s.thought for s in nodes_of(run, "step")] == ["Edit pkg/greet.py"]
    failed = [a for a in nodes_of(run, "action") if a.status == "failed"]
    assert [a.label for a in failed] == ["Subtask: Edit README.md"]


def test_create_subtask_refuses_empty_and_overlong_titles() -> None:
    empty = create_subtask({"title": " \n "}, [], {}, 8)
    long = create_subtask({"title": "x" * 300}, [], {}, 8)
    wrong = create_subtask({"detail": "no title"}, [], {}, 8)
    assert empty.failed and "title is empty" in empty.output
    assert long.failed and "at most 200" in long.output
    assert wrong.failed and "title: Field required" in wrong.output
    multi = create_subtask({"title": "Edit\n  the file"}, [], {}, 8)
    assert not multi.failed and multi.changes["tasks"] == ["Edit the file"]


# The executor's run_command


async def test_run_command_asks_first_and_runs_in_a_scratch_worktree_with_the_pending_change(
    make_run: Callable[..., Run],
) -> None:
    script = "import pkg.greet as g, pathlib; print(g.greet('x')); pathlib.Path('made.txt').write_text('1')"
    argv = [sys.executable, "-c", script]
    run = make_run(
        [
            planner("1. Change the greeting to Hi and check it"),
            executor(tool_calls=edit("pkg/greet.py", "Hello", "Hi")),
            executor(tool_calls=command(argv)),
            executor(tool_calls=complete("done", "greet says Hi, checked")),
            replanner(done("Done.")),
        ],
        architecture="plan",
    )
    asked, run.ctx.ask_permission = asker(True)
    calls = capture_calls(run)

    await PlanExecute().run(run.ctx)

    assert len(asked) == 1 and asked[0][1] == shlex.join(argv)
    assert asked[0][0].startswith("Run in a scratch worktree with the proposed changes: ")
    (ran,) = tool_messages(calls[3][1], "run_command")
    assert ran.status == "success"
    assert "Hi, x!" in ran.text and "exit status 0" in ran.text  # it saw the change set's edit
    # …while the workspace itself was neither edited nor written to.
    assert (run.workspace / "pkg" / "greet.py").read_text() == GREET
    assert not (run.workspace / "made.txt").exists()
    starts = [e for e in run.progress if e["type"] == "tool_start" and e["name"] == "run_command"]
    assert [(e["kind"], e["title"].startswith("Run ")) for e in starts] == [("execute", True)]
    (action,) = [a for a in nodes_of(run, "action") if a.action and a.action.tool == "run_command"]
    assert action.label.endswith("→ exit 0") and action.status == "evaluated"
    assert action.action.args["argv"] == argv


async def test_a_refused_command_does_not_run_and_the_model_reads_the_refusal(
    make_run: Callable[..., Run], tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    run = make_run(
        [
            planner("1. Check the greeting"),
            executor(tool_calls=command(argv)),
            executor(tool_calls=command(argv)),  # asked again in the same run: refused without asking
            executor(tool_calls=complete("failed", "could not run the check")),
            replanner(done("Not checked.")),
        ],
        architecture="plan",
    )
    asked, run.ctx.ask_permission = asker(False)
    calls = capture_calls(run)

    await PlanExecute().run(run.ctx)

    assert len(asked) == 1
    assert not marker.exists()
    refusals = tool_messages(calls[3][1], "run_command")
    assert [m.status for m in refusals] == ["error", "error"]
    assert all("not run: the user did not allow" in m.text for m in refusals)
    action = next(a for a in nodes_of(run, "action") if a.action and a.action.tool == "run_command")
    assert action.status == "failed" and action.label.endswith("→ refused")


async def test_a_command_string_and_a_run_with_no_one_to_ask_run_nothing(
    make_run: Callable[..., Run], tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    run = make_run(
        [
            planner("1. Check the greeting"),
            executor(tool_calls=command(f"{sys.executable} -c 'print(1)' && touch {marker}")),
            executor(tool_calls=command(argv)),
            executor(tool_calls=complete("failed", "cannot run anything")),
            replanner(done("Not checked.")),
        ],
        architecture="plan",
    )
    assert run.ctx.ask_permission is None
    calls = capture_calls(run)

    await PlanExecute().run(run.ctx)

    as_string, unasked = tool_messages(calls[3][1], "run_command")
    assert (
        as_string.status == "error" and "argv must be a list with one string per argument" in as_string.text
    )
    assert "there is no shell" in as_string.text
    assert unasked.status == "error" and "no user to ask for permission" in unasked.text
    assert not marker.exists()


async def test_a_command_over_its_timeout_is_killed(make_run: Callable[..., Run], tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    body = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    run = make_run(
        [
            planner("1. Run the slow check"),
            executor(tool_calls=command([sys.executable, "-c", body], timeout_s=600)),  # above the cap
            executor(tool_calls=complete("failed", "the check hangs")),
            replanner(done("The check hangs.")),
        ],
        architecture="plan",
        plan={"command_timeout_s": 1.5},
    )
    _asked, run.ctx.ask_permission = asker(True)
    calls = capture_calls(run)
    started = time.monotonic()

    await PlanExecute().run(run.ctx)

    assert time.monotonic() - started < 60
    (killed,) = tool_messages(calls[2][1], "run_command")
    assert killed.status == "error"
    assert "killed after its timeout of 1.5 s (plan.command_timeout_s: 1.5 s)" in killed.text
    pid = int(pid_file.read_text())
    assert not running_pid(pid)  # gone, or a zombie its new parent has not reaped yet: killed either way
    (action,) = [a for a in nodes_of(run, "action") if a.action and a.action.tool == "run_command"]
    assert action.label.endswith("→ timed out") and action.status == "failed"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"argv": "python -m pytest"}, "a command line in one string is not run (there is no shell)"),
        ({"argv": "[not json"}, "a command line in one string is not run"),
        ({"argv": []}, "argv: name the program to run first"),
        ({"argv": ["", "x"]}, "argv: name the program to run first"),
        ({"argv": ["python", 3]}, "argv.1: Input should be a valid string"),
        ({"argv": ["python", "a\x00b"]}, "argv: an argument holds a NUL character"),
        ({"argv": ["x"] * 65}, "argv: 65 arguments, at most 64"),
        ({"argv": ["python"], "timeout_s": 0}, "timeout_s: give a number of seconds above 0"),
        ({}, "argv: Field required"),
    ],
)
def test_run_command_arguments_are_checked_before_anything_is_asked(
    args: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        check_argv(args)


def test_an_argument_list_sent_as_json_text_is_still_an_argument_list() -> None:
    assert check_argv({"argv": '["python", "-m", "pytest"]', "timeout_s": 5}) == (
        ["python", "-m", "pytest"],
        5,
    )


# attempt_completion and the replanner's analyze_failure


async def test_a_failed_completion_ends_the_task_and_analyze_failure_returns_its_failed_steps(
    make_run: Callable[..., Run],
) -> None:
    failing = [
        sys.executable,
        "-c",
        "import sys; print('checking…'); print('boom: greet is wrong'); sys.exit(3)",
    ]
    run = make_run(
        [
            planner("1. Change the greeting to Howdy\n2. Say so in README.md"),
            executor(tool_calls=edit("pkg/greet.py", "Howdy", "Hi")),  # fails: no Howdy in the file
            executor(tool_calls=command(failing)),
            executor(tool_calls=complete("failed", "there is no Howdy in pkg/greet.py")),
            # No more executor lines: the completion ended the task, the replanner comes next.
            replanner(tool_calls=[{"name": "analyze_failure", "args": {}}]),
            replanner(done("Nothing to change: the greeting has no Howdy.")),
        ],
        architecture="plan",
    )
    _asked, run.ctx.ask_permission = asker(True)
    calls = capture_calls(run)

    outcome = await PlanExecute().run(run.ctx)

    assert outcome.answer == "Nothing to change: the greeting has no Howdy."
    roles = [role for role, _m, _t in calls]
    assert roles == ["plan.planner", *["plan.executor"] * 3, "plan.replanner", "plan.replanner"]
    assert "analyze_failure" in calls[4][2] and "edit_file" not in calls[4][2]
    assert "analyze_failure()" in calls[4][1][-1].text  # the review points the replanner at it
    (analysis,) = tool_messages(calls[5][1], "analyze_failure")
    digest = json.loads(analysis.text)
    assert (digest["task_number"], digest["task"], digest["summary"]) == (
        1,
        "Change the greeting to Howdy",
        "there is no Howdy in pkg/greet.py",
    )
    assert [c["tool"] for c in digest["failed_calls"]] == ["edit_file", "run_command"]
    assert digest["failed_calls"][0]["args"]["old_text"] == "Howdy"
    assert "old_text was not found in pkg/greet.py" in digest["failed_calls"][0]["error"]
    last = digest["last_command"]
    assert last["exit_code"] == 3 and "boom: greet is wrong" in last["output_tail"]
    step = nodes_of(run, "step")[0]
    assert (step.status, step.label, step.reflection) == (
        "failed",
        "Change the greeting to Howdy · failed",
        "there is no Howdy in pkg/greet.py",
    )
    assert plan_updates(run)[-1] == [
        ("Change the greeting to Howdy", "failed"),
        ("Say so in README.md", "pending"),
    ]


async def test_attempt_completion_counts_on_the_last_model_call(make_run: Callable[..., Run]) -> None:
    run = make_run(
        [
            planner("1. Change the greeting to Hi"),
            executor(tool_calls=[*edit("pkg/greet.py", "Hello", "Hi"), *complete("done", "greet says Hi")]),
            replanner(done("Done.")),
        ],
        architecture="plan",
        plan={"executor_max_steps": 1},
    )

    await PlanExecute().run(run.ctx)

    (step,) = nodes_of(run, "step")
    assert (step.status, step.reflection) == ("evaluated", "greet says Hi")
    # Its edit, in the same reply but with no calls left, was answered "not run".
    assert run.ctx.changeset.changed_paths() == []


def test_analyze_failure_finds_a_task_by_number_or_words() -> None:
    log = {"failed_calls": [{"tool": "grep", "args": {}, "error": "bad pattern"}], "last_command": None}
    failures = [failure_digest(1, "Fix the parser", "it broke", log), failure_digest(3, "Add docs", "no", {})]
    assert json.loads(analyze_failure({"task": 1}, failures).output)["summary"] == "it broke"
    assert json.loads(analyze_failure({"task": "3"}, failures).output)["task"] == "Add docs"
    assert json.loads(analyze_failure({"task": "parser"}, failures).output)["task_number"] == 1
    assert json.loads(analyze_failure({}, failures).output)["task_number"] == 3
    missing = analyze_failure({"task": 2}, failures)
    assert missing.failed and "task 1: Fix the parser; task 3: Add docs" in missing.output
    assert analyze_failure({}, []).output == "No task has failed in this run."


# Over real ACP, and in the window's plan view


def made_and_failed_script(check: list[str]) -> list[dict[str, Any]]:
    """The planner makes two subtasks; the executor runs ``check`` and fails the first; the replanner
    reads the failure and stops."""
    return [
        planner(tool_calls=subtask("Check the greeting", files=["pkg/greet.py"])),
        planner(tool_calls=subtask("Say so in README.md")),
        planner("Two subtasks."),
        executor(tool_calls=command(check)),
        executor(tool_calls=complete("failed", "the check fails")),
        replanner(tool_calls=[{"name": "analyze_failure", "args": {"task": 1}}]),
        replanner(done("The check fails; nothing was changed.")),
    ]


async def test_over_acp_subtasks_are_the_plan_and_run_command_asks_the_client(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    check = [sys.executable, "-c", "import sys; print('greeting checked'); sys.exit(1)"]
    script = write_script(made_and_failed_script(check))
    client = RecordingClient(permission_answer="allow")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, None, client) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("Check it")])
    assert response.stop_reason == "end_turn"
    [(asked, options)] = client.permission_requests
    assert asked.kind == "execute" and asked.raw_input["command"] == shlex.join(check)
    assert asked.raw_input["purpose"] == "command"  # arbor run --allow-tests does not allow it
    assert "scratch worktree" in asked.title
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    plans = [
        [(e.content, e.status) for e in u.entries]
        for _, u in client.updates
        if isinstance(u, AgentPlanUpdate)
    ]
    assert plans[0] == [("Check the greeting", "pending")]
    assert plans[1] == [("Check the greeting", "pending"), ("Say so in README.md", "pending")]
    assert plans[-1] == [("Check the greeting — failed", "completed"), ("Say so in README.md", "pending")]
    calls = [u for _, u in client.updates if u.session_update == "tool_call"]
    assert [(c.title.split(" ")[0], c.kind) for c in calls if c.kind == "execute"] == [("Run", "execute")]
    assert "The check fails; nothing was changed." in client.text()


async def test_the_window_plan_view_shows_each_subtask_and_its_status(
    qtbot: Any, make_run: Callable[..., Run]
) -> None:
    from ide.app.chat.blocks import PlanView
    from ide.app.chat.conversation import Conversation
    from ide.client.fold import SessionFold

    run = make_run(made_and_failed_script([sys.executable, "-c", "raise SystemExit(1)"]), architecture="plan")
    _asked, run.ctx.ask_permission = asker(True)
    await PlanExecute().run(run.ctx)

    conversation, fold = Conversation(), SessionFold()
    shown = []
    for event in (e for e in run.progress if e["type"] == "plan"):
        block, _new = conversation.apply(fold.apply(translate_event(event)))
        view = PlanView(block)
        qtbot.addWidget(view)
        view.refresh()
        shown.append(view.label.text())
    assert "○ Check the greeting" in shown[0] and "README" not in shown[0]
    assert "◐ Check the greeting" in shown[2] and "○ Say so in README.md" in shown[2]
    assert "✗ Check the greeting — failed" in shown[-1] and "○ Say so in README.md" in shown[-1]
