"""Continuing a workflow from a node over a real ``arbor acp``, after a restart: the stage the node belongs to
runs again from the node's changes, its agent told the node's trajectory and the hint, and the stages after
it follow."""

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
from tests.support.feature_workflow import FEATURE_SCRIPT, TASK, done, lines_of_test_agent
from tests.support.steering import conversation, first_events, fork, openai_env, run_list

pytestmark = pytest.mark.timeout(180)

REVIEW = ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}})
HINT = "Keep the flag as it is; make sure a test covers it."


def unroled(line: dict[str, Any]) -> dict[str, Any]:
    """A scripted line as a simulated server's reply (it answers in order, whatever the role)."""
    return {key: value for key, value in line.items() if key != "role"}


async def test_a_workflow_goes_on_from_the_stage_of_a_node_with_its_changes_and_the_hint(
    cli_project: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    config = Path(os.environ["ARBOR_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[workflows]\ntest_command = "{sys.executable} -m pytest -q"\n')
    script = write_script(FEATURE_SCRIPT)
    async with acp_backend(
        {"ARBOR_MODEL": f"scripted:{script}"}, REVIEW, RecordingClient(permission_answer="allow")
    ) as backend:
        sid = (await backend.conn.new_session(cwd=str(cli_project), mcp_servers=[])).session_id
        await backend.conn.set_session_mode(session_id=sid, mode_id="workflow")
        assert (
            await backend.conn.prompt(session_id=sid, prompt=[text_block(TASK)])
        ).stop_reason == "end_turn"

    replies = [unroled(done("agent.code", "the flag is in place")), *map(unroled, lines_of_test_agent())]
    client = RecordingClient(permission_answer="allow")
    with FakeOpenAI(replies) as server:
        async with acp_backend(openai_env(server), REVIEW, client) as backend:
            conn = backend.conn
            await conn.load_session(cwd=str(cli_project), session_id=sid, mcp_servers=[])
            [origin] = await run_list(conn, sid)
            [run] = await run_list(conn, sid, origin.run_id)
            # The code agent's edit: in the middle of the run, before the test stage.
            edit = next(n for n in run.nodes if n.kind == "action" and n.label == "edit_file")
            armed = await fork(conn, sid, run.run_id, edit.id)
            assert (armed.mode, armed.files) == ("workflow", ["greeter/cli.py"])
            assert "stage" not in armed.note  # the stage is known
            answer = await conn.prompt(session_id=sid, prompt=[text_block(HINT)])
            assert answer.stop_reason == "end_turn"
            view = await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=sid))
    brief = conversation(server.bodies[0])[0][1]
    assert "Workflow stage: code_generation" in brief
    # The trajectory and the hint close the brief (its context may recall the first run: the memory).
    guidance = brief[brief.index("An earlier run of this task got this far") :]
    assert "called read_file(" in guidance and "called edit_file(" in guidance
    assert guidance.endswith(f"{HINT_PREFIX}\n{HINT}") and "test_version" not in guidance
    assert (
        "Continuing the workflow feature_with_iterative_testing from its stage code_generation"
        in client.text("agent_thought_chunk")
    )
    assert len(client.permission_requests) == 1  # the test stage ran again, after the code stage
    assert sorted(f.path for f in view.files) == ["greeter/cli.py", "tests/test_cli.py"]
    assert first_events(client)[-1].forked_from == ForkOrigin(run_id=origin.run_id, node_id=edit.id)
