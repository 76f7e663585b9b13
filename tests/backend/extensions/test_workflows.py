"""The workflow feature's hook (``ide/backend/extensions/workflows.py``), in process: a client that loads a
session whose workflow run stopped before it finished is told how to go on with it, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.workflows.mode import ActiveRun
from tests.support.inprocess import inprocess_backend

NOTE = "Send /resume to go on from its last finished step."


@pytest.mark.parametrize(("status", "told"), [("cancelled", True), ("running", True), ("finished", False)])
async def test_a_loaded_session_says_how_to_resume_a_stopped_workflow(
    git_workspace: Path, status: str, told: bool
) -> None:
    cwd = str(git_workspace)
    async with inprocess_backend() as backend:
        sid = (await backend.conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        run = ActiveRun(run_id="r1", workflow="bugfix", task="Fix the greeting", plan={}, status=status)
        store = backend.agent.session(sid).services.store
        store.save_workflow(sid, cwd, run.model_dump(mode="json"))
    async with inprocess_backend() as backend:
        await backend.conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
        said = backend.client.text()
        kinds = backend.client.kinds()
        interrupted = backend.agent.session(sid).interrupted
    assert (NOTE in said) is told
    assert (interrupted is not None) is told
    if told:
        assert said == f"The workflow bugfix for “Fix the greeting” stopped before it finished. {NOTE}"
        assert kinds[-2:] == ["available_commands_update", "agent_message_chunk"]  # after the commands


async def test_a_session_with_nothing_stopped_is_told_nothing(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
    async with inprocess_backend() as backend:
        await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
        assert backend.client.kinds() == ["available_commands_update"]
