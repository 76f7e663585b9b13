"""A continuation of a continuation over a real ``arbor acp`` (issue 48): a run, continued from a middle node
with a hint, then that continuation continued from one of its own middle nodes with another hint. The
model's first request carries the whole chain — the first run's steps up to the first node, the first
hint, the second run's steps up to the second node, the second hint — in every architecture, and the
result starts from the second node's branch."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities

from ide.client import agentconn
from ide.protocol import META_KEY
from ide.protocol import review as rv
from ide.protocol.tree import ForkOrigin
from ide.search.steer import HINT_PREFIX
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.fake_openai import FakeOpenAI
from tests.support.feature_workflow import (  # noqa: F401  (cli_project: a fixture)
    FEATURE_SCRIPT,
    cli_project,
    done,
    lines_of_test_agent,
)
from tests.support.feature_workflow import TASK as FEATURE_TASK
from tests.support.git import git
from tests.support.plan_script import report
from tests.support.steering import (
    GREET_EDIT,
    README_EDIT,
    ByRole,
    calls,
    conversation,
    first_events,
    fork,
    openai_env,
    run_list,
    unroled,
)
from tests.support.tot_script import analyze, criticise, plan, research, synthesise

pytestmark = pytest.mark.timeout(180)

WINDOW = ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}})
TASK = "Make it friendlier"
HINT_A = "Leave the farewell out; say hi in the README instead."
HINT_B = "No changelog; write NOTES.md instead."
FAREWELL = {"path": "pkg/farewell.py", "content": "def bye():\n    return 1\n"}
CHANGELOG = {"path": "CHANGELOG.md", "content": "# Changelog\n\n- hi\n"}
NOTES = {"path": "NOTES.md", "content": "Greets with hi.\n"}

FIRST_RUN = [
    calls(("edit_file", GREET_EDIT), content="I'll change the greeting first."),
    calls(("create_file", FAREWELL), content="Now a farewell."),
    {"content": "Done: the greeting is friendlier and there is a farewell."},
]
SECOND_RUN = [
    calls(("edit_file", README_EDIT), content="Updating the README."),
    calls(("create_file", CHANGELOG), content="And a changelog."),
    {"content": "Done: the README says hi and there is a changelog."},
]
THIRD_RUN: dict[str, list[dict[str, Any]]] = {
    "react": [calls(("create_file", NOTES), content="Writing the notes."), {"content": "Done: NOTES.md."}],
    "lats": [
        calls(("create_file", NOTES), content="Writing the notes."),
        {"content": '{"score": 9, "reflection": "good", "is_solution": false}'},
    ],
    "plan": [
        {"content": "1. Write NOTES.md"},
        calls(("create_file", NOTES)),
        {"content": report("done", "wrote the notes")},
        {"content": '{"done": true, "answer": "Wrote NOTES.md."}'},
    ],
    "tot": [],  # its agents are answered by role (ByRole)
}
TOT_LINES = [
    plan("Check the README"),
    research("The README says hi."),
    analyze(8),
    criticise(8),
    synthesise("The README and the greeting say hi."),
]


def first_action(run: Any) -> str:
    return next(n.id for n in run.nodes if n.kind == "action")


def chain_of(text: str) -> list[int]:
    """Where the chain's steps stand in ``text``, in the order they must come."""
    marks = [
        "I'll change the greeting first.",
        '"new_text": "Hi"',
        HINT_A,
        "Updating the README.",
        '"new_text": "Says hi."',
        HINT_B,
    ]
    return [text.find(mark) for mark in marks]


@pytest.mark.parametrize("mode", ["react", "lats", "plan", "tot"])
async def test_a_continuation_of_a_continuation_carries_the_whole_chain(
    git_workspace: Path, mode: str
) -> None:
    env = {
        "ARBOR_LATS_EXPANSION_WIDTH": "1",
        "ARBOR_LATS_MAX_ITERATIONS": "1",
        "ARBOR_TOT_MAX_DEPTH": "1",
    }
    script = [*FIRST_RUN, *SECOND_RUN, *THIRD_RUN[mode]]
    with FakeOpenAI(script, side=ByRole(TOT_LINES if mode == "tot" else [])) as server:
        async with acp_backend({**openai_env(server), **env}, WINDOW) as backend:
            conn = backend.conn
            sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block(TASK)])
            [first] = await run_list(conn, sid)
            [first] = await run_list(conn, sid, first.run_id)
            greet = first_action(first)  # the greeting's edit, before the farewell
            await fork(conn, sid, first.run_id, greet)
            await conn.prompt(session_id=sid, prompt=[text_block(HINT_A)])
            second = (await run_list(conn, sid))[-1]
            [second] = await run_list(conn, sid, second.run_id)
            readme = first_action(second)  # the README's edit, before the changelog
            armed = await fork(conn, sid, second.run_id, readme, mode)
            asked_before = len(server.bodies)
            answer = await conn.prompt(session_id=sid, prompt=[text_block(HINT_B)])
            view = await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=sid))
            starts = first_events(backend.client)
            await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
            applied = await agentconn.call(conn, rv.APPLY, rv.ApplyParams(session_id=sid))

    assert second.forked_from == ForkOrigin(run_id=first.run_id, node_id=greet)
    assert sorted(armed.files) == ["README.md", "pkg/greet.py"]
    # (LATS has one iteration: its edit is the best branch when they are spent.)
    assert answer.stop_reason == ("max_turn_requests" if mode == "lats" else "end_turn")
    body = server.bodies[asked_before]
    if mode == "tot":  # the planner's prompt is text: the chain's steps, in order, then the hint
        text = "\n".join(said for _role, said in conversation(body))
        assert TASK in text
        where = chain_of(text)
        assert -1 not in where and where == sorted(where), where
        assert f"{HINT_PREFIX}\n{HINT_A}" in text and f"{HINT_PREFIX}\n{HINT_B}" in text
    else:
        # The task, the first run's steps up to its greeting's edit, the first hint, the second run's up to
        # its README's edit, the second hint: nothing either run did after the node continued from.
        asked = conversation(body)
        start = asked.index(("user", TASK))
        asked = asked[start:]
        assert asked[1] == ("assistant", "I'll change the greeting first.")
        assert (
            asked[2][0] == "assistant"
            and asked[2][1].startswith("edit_file(")
            and '"new_text": "Hi"' in asked[2][1]
        )
        assert asked[3][0] == "tool" and "greet.py" in asked[3][1]
        assert asked[4] == ("user", f"{HINT_PREFIX}\n{HINT_A}")
        assert asked[5] == ("assistant", "Updating the README.")
        assert (
            asked[6][0] == "assistant" and asked[6][1].startswith("edit_file(") and "README.md" in asked[6][1]
        )
        assert asked[7][0] == "tool" and "README.md" in asked[7][1]
        assert asked[8] == ("user", f"{HINT_PREFIX}\n{HINT_B}")
        if mode != "plan":
            assert len(asked) == 9
    said = str(conversation(body))
    assert "create_file" not in said and "farewell.py" not in said and "CHANGELOG" not in said
    assert starts[-1].forked_from == ForkOrigin(run_id=second.run_id, node_id=readme)
    # From the second node's branch (the greeting and the README), plus what the third run wrote.
    wrote = sorted(["README.md", "pkg/greet.py", *([] if mode == "tot" else ["NOTES.md"])])
    assert sorted(f.path for f in view.files) == wrote
    assert applied.batch is not None and sorted(applied.batch.paths) == wrote
    assert not (git_workspace / "pkg" / "farewell.py").exists()
    assert not (git_workspace / "CHANGELOG.md").exists()
    assert sorted(git(git_workspace, "show", "--name-only", "--format=", "HEAD").split()) == wrote


async def test_a_workflow_continued_twice_briefs_its_stage_agent_with_the_whole_chain(
    cli_project: Path,  # noqa: F811
    write_script: Callable[[list[dict[str, Any]]], Path],
) -> None:
    config = Path(os.environ["ARBOR_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[workflows]\ntest_command = "{sys.executable} -m pytest -q"\n')
    script = write_script(FEATURE_SCRIPT)
    async with acp_backend(
        {"ARBOR_MODEL": f"scripted:{script}"}, WINDOW, RecordingClient(permission_answer="allow")
    ) as backend:
        sid = (await backend.conn.new_session(cwd=str(cli_project), mcp_servers=[])).session_id
        await backend.conn.set_session_mode(session_id=sid, mode_id="workflow")
        await backend.conn.prompt(session_id=sid, prompt=[text_block(FEATURE_TASK)])

    second_run = [unroled(done("agent.code", "the flag is in place")), *map(unroled, lines_of_test_agent())]
    third_run = [unroled(done("agent.test", "test_version covers the flag"))]
    client = RecordingClient(permission_answer="allow")
    with FakeOpenAI([*second_run, *third_run]) as server:
        async with acp_backend(openai_env(server), WINDOW, client) as backend:
            conn = backend.conn
            await conn.load_session(cwd=str(cli_project), session_id=sid, mcp_servers=[])
            [first] = await run_list(conn, sid)
            [first] = await run_list(conn, sid, first.run_id)
            code_edit = next(n.id for n in first.nodes if n.kind == "action" and n.label == "edit_file")
            await fork(conn, sid, first.run_id, code_edit)
            assert (await conn.prompt(session_id=sid, prompt=[text_block(HINT_A)])).stop_reason == "end_turn"
            second = (await run_list(conn, sid))[-1]
            [second] = await run_list(conn, sid, second.run_id)
            test_edit = next(n.id for n in second.nodes if n.kind == "action" and n.label == "edit_file")
            armed = await fork(conn, sid, second.run_id, test_edit)
            assert "stage" not in armed.note  # the stage is known: the test stage
            asked_before = len(server.bodies)
            assert (await conn.prompt(session_id=sid, prompt=[text_block(HINT_B)])).stop_reason == "end_turn"
            view = await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=sid))
    brief = conversation(server.bodies[asked_before])[0][1]
    assert "Workflow stage: " in brief
    # First the first run's steps up to the code's edit and the first hint, then the second run's up to the
    # test's edit, then the second hint, closing the brief.
    chain = brief[brief.index("Earlier runs of this task, each continued from the one before") :]
    marks = [
        "read_file(",
        "edit_file(",
        f"{HINT_PREFIX}\n{HINT_A}",
        "An earlier run",
        "tests/test_cli.py",
    ]
    where = [chain.find(mark) for mark in marks]
    assert -1 not in where and where == sorted(where), where
    assert chain.endswith(f"{HINT_PREFIX}\n{HINT_B}")
    assert sorted(f.path for f in view.files) == ["greeter/cli.py", "tests/test_cli.py"]
    assert first_events(client)[-1].forked_from == ForkOrigin(run_id=second.run_id, node_id=test_edit)
