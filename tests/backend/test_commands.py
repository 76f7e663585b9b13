"""The slash commands (``ide/backend/commands.py``): which prompts are commands, and ``/workflow NAME`` and
``/resume`` answered in process without a model."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from ide.backend.commands import parse_command
from tests.support.inprocess import inprocess_backend


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/workflow", ("workflow", "")),
        ("  /workflow bugfix  Fix it ", ("workflow", "bugfix  Fix it")),
        ("/workflow\nbugfix", ("workflow", "bugfix")),
        ("/resume", ("resume", "")),
        ("/workflows", None),
        ("please /resume", None),
        ("/other", None),
    ],
)
def test_a_prompt_is_a_command_only_when_it_begins_with_one(
    text: str, parsed: tuple[str, str] | None
) -> None:
    assert parse_command(text) == parsed


async def test_a_workflow_picked_by_command_is_the_sessions_mode_after_a_restart(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await backend.conn.prompt(session_id=sid, prompt=[text_block("/workflow bugfix")])
        assert "Workflow mode: the workflow is bugfix" in backend.client.text()
        assert "current_mode_update" in backend.client.kinds()
    async with inprocess_backend() as backend:
        loaded = await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
    assert loaded is not None and loaded.modes is not None and loaded.modes.current_mode_id == "workflow"


async def test_resume_with_nothing_stopped_says_so_and_ends_the_turn(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        response = await backend.conn.prompt(session_id=sid, prompt=[text_block("/resume")])
        said = backend.client.text()
    assert response.stop_reason == "end_turn"
    assert said == "There is no interrupted workflow in this session to resume."
