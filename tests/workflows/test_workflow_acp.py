"""The workflow mode over real ACP (a subprocess backend): the orchestrator's choice, plan updates, the
permission request before the tests, the batched review and commit — and resuming after ``kill -9``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import AgentPlanUpdate, ClientCapabilities

from ide.protocol import META_KEY
from ide.protocol import review as rv
from ide.protocol import workflow as wf
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.feature_workflow import (
    FEATURE_SCRIPT,
    NEW_ARG,
    TASK,
    assert_tests_pass_and_version_prints,
    code_lines,
    lines_of_test_agent,
    orchestrator_line,
)
from tests.support.git import git

REVIEW = ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}})


def config(project: Path) -> None:
    """The user's own test command (a repository's would wait for trust)."""
    path = Path(os.environ["ARBOR_CONFIG_DIR"]) / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[workflows]\ntest_command = "{sys.executable} -m pytest -q"\n')


def plans(client: RecordingClient) -> list[list[tuple[str, str]]]:
    return [
        [(e.content, e.status) for e in u.entries]
        for _, u in client.updates
        if isinstance(u, AgentPlanUpdate)
    ]


async def test_the_feature_workflow_over_acp_ends_in_a_reviewed_tested_commit(
    cli_project: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    config(cli_project)
    script = write_script(FEATURE_SCRIPT)
    client = RecordingClient(permission_answer="allow")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEW, client) as backend:
        session = await backend.conn.new_session(cwd=str(cli_project), mcp_servers=[])
        sid = session.session_id
        await backend.conn.set_session_mode(session_id=sid, mode_id="workflow")
        listing = wf.WorkflowList.model_validate(
            await backend.conn.ext_method(wf.WORKFLOWS_LIST, {"session_id": sid})
        )
        assert listing.selected == "auto" and listing.reranker.startswith("bm25")
        assert "feature_with_iterative_testing" in [w.name for w in listing.workflows]
        response = await backend.conn.prompt(session_id=sid, prompt=[text_block(TASK)])
        assert response.stop_reason == "end_turn"

        assert "available_commands_update" in client.kinds()
        [(tool_call, options)] = client.permission_requests
        assert tool_call.kind == "execute" and "pytest" in tool_call.title
        assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
        assert plans(client)[-1] == [
            ("code_generation", "completed"),
            ("test_generation_and_execution", "completed"),
        ]
        assert "Workflow **feature_with_iterative_testing** finished" in client.text()
        tree_batches = [p for m, p in client.notifications if m == "arbor/tree"]
        events = [e for b in tree_batches for e in b["events"]]
        labels = [e["node"]["label"] for e in events if e["kind"] == "node_added"]
        labels += [e["changes"]["label"] for e in events if "label" in e.get("changes", {})]
        assert "tests passed" in labels and "workflow done" in labels

        # Nothing on disk until the review: then one commit with both files, and the tests pass.
        assert git(cli_project, "status", "--porcelain") == ""
        await backend.conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.conflicts == [] and result.batch is not None
    assert sorted(git(cli_project, "show", "--name-only", "--format=", "HEAD").split()) == [
        "greeter/cli.py",
        "tests/test_cli.py",
    ]
    assert NEW_ARG in (cli_project / "greeter" / "cli.py").read_text()
    await asyncio.to_thread(assert_tests_pass_and_version_prints, cli_project)


async def test_a_workflow_killed_mid_run_resumes_from_its_last_finished_stage(
    cli_project: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    config(cli_project)
    # The first backend finishes code_generation, then hangs in the test agent's first call.
    first = write_script(
        [
            orchestrator_line(**{"3": False, "4": False}),
            *code_lines(),
            {"role": "agent.test", "content": "thinking…", "latency_ms": 120000},
        ]
    )
    # After the restart only the test stage's lines are left: a re-run of code_generation would fail.
    second = write_script(lines_of_test_agent())
    client = RecordingClient(permission_answer="allow")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{first}"}, REVIEW, client) as backend:
        session = await backend.conn.new_session(cwd=str(cli_project), mcp_servers=[])
        sid = session.session_id
        await backend.conn.set_session_mode(session_id=sid, mode_id="workflow")
        turn = asyncio.ensure_future(backend.conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
        await client.wait_until(
            lambda: any(p[1] == ("test_generation_and_execution", "in_progress") for p in plans(client)),
            timeout=60,
        )
        backend.proc.kill()  # SIGKILL: no cleanup, no goodbye
        await backend.proc.wait()
        turn.cancel()

    client = RecordingClient(permission_answer="allow")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{second}"}, REVIEW, client) as backend:
        await backend.conn.load_session(cwd=str(cli_project), session_id=sid, mcp_servers=[])
        assert "Send /resume" in client.text()
        response = await backend.conn.prompt(session_id=sid, prompt=[text_block("/resume")])
        assert response.stop_reason == "end_turn"
        meta = response.field_meta[META_KEY]
        routing = [(r["name"], r["failed"]) for r in meta["figures"]["routing"]]
        assert routing == [("code_generation", False), ("test_generation_and_execution", False)]
        assert "finished" in client.text()
        notes = [p for m, p in client.notifications if m == rv.CHANGESET_NOTIFICATION]
        view = rv.ChangeSetView.model_validate(notes[-1])
        assert sorted(f.path for f in view.files) == ["greeter/cli.py", "tests/test_cli.py"]
        # A second /resume has nothing left to do.
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/resume")])
        assert "no interrupted workflow" in client.text()
    assert json.loads(json.dumps(meta))  # the figures are plain JSON


async def test_workflow_slash_commands_list_pick_and_refuse_plainly(cli_project: Path) -> None:
    async with acp_backend({"ARBOR_MODEL": "scripted:/nonexistent.jsonl"}, REVIEW) as backend:
        session = await backend.conn.new_session(cwd=str(cli_project), mcp_servers=[])
        sid = session.session_id
        client = backend.client
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/workflow")])
        assert (
            "**feature_with_iterative_testing**" in client.text()
            and "now: the orchestrator picks" in client.text()
        )
        commands = next(u for _, u in client.updates if u.session_update == "available_commands_update")
        assert [c.name for c in commands.available_commands] == ["workflow", "resume"]
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/workflow bugfix")])
        assert "current_mode_update" in client.kinds()
        assert "Workflow mode: the workflow is bugfix" in client.text()
        listing = wf.WorkflowList.model_validate(
            await backend.conn.ext_method(wf.WORKFLOWS_LIST, {"session_id": sid})
        )
        assert (listing.selected, listing.mode) == ("bugfix", "workflow")
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/workflow nope")])
        assert "There is no workflow 'nope'" in client.text()
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/resume")])
        assert "no interrupted workflow" in client.text()
