"""The ACP agent's own requests (``ide/backend/agent.py``) answered in process: a bad workspace, an unknown
mode or session is refused with a reason the client can show."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError, text_block

from ide.protocol import error_info_from_data
from tests.support.inprocess import inprocess_backend


@pytest.mark.parametrize(
    ("cwd", "message"),
    [("relative/dir", "must be an absolute path"), ("/nonexistent/arbor-ws", "does not exist")],
)
async def test_new_session_rejects_bad_cwd(cwd: str, message: str) -> None:
    async with inprocess_backend() as backend:
        with pytest.raises(RequestError) as caught:
            await backend.conn.new_session(cwd=cwd, mcp_servers=[])
    assert caught.value.code == -32602
    assert message in str(caught.value.data)


async def test_unknown_modes_are_refused_plainly(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        assert session.modes is not None
        assert [m.id for m in session.modes.available_modes] == [
            "react",
            "lats",
            "tot",
            "plan",
            "workflow",
            "auto",
        ]
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="lats")
        with pytest.raises(RequestError) as caught:
            await backend.conn.set_session_mode(session_id=session.session_id, mode_id="mcts")
        assert backend.agent.session(session.session_id).mode == "lats"
    assert "there is no mode 'mcts'; modes: react, lats, tot, plan, workflow, auto" in str(caught.value.data)


async def test_a_mode_set_is_kept_for_the_next_load(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="tot")
    async with inprocess_backend() as backend:
        loaded = await backend.conn.load_session(
            cwd=str(git_workspace), session_id=session.session_id, mcp_servers=[]
        )
    assert loaded is not None and loaded.modes is not None
    assert loaded.modes.current_mode_id == "tot"


async def test_bad_workspace_settings_are_reported_with_file_and_line(git_workspace: Path) -> None:
    (git_workspace / ".arbor").mkdir()
    (git_workspace / ".arbor" / "config.toml").write_text("[lats]\nmax_depth = 'deep'\n")
    async with inprocess_backend() as backend:
        with pytest.raises(RequestError) as caught:
            await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
    info = error_info_from_data(caught.value.data)
    assert info is not None and info.kind == "settings"
    assert ".arbor/config.toml:2" in info.message
    assert "lats.max_depth" in info.message


async def test_prompt_to_unknown_session_says_to_load_it() -> None:
    async with inprocess_backend() as backend:
        with pytest.raises(RequestError) as caught:
            await backend.conn.prompt(session_id="nope", prompt=[text_block("hi")])
    assert "call session/load first" in str(caught.value.data)


async def test_an_empty_prompt_is_refused_and_the_session_takes_the_next(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("  \n")])
        assert not backend.agent.session(session.session_id).prompting
    assert caught.value.code == -32602 and "the prompt is empty" in str(caught.value.data)


def test_the_agent_imports_no_feature_not_even_for_types() -> None:
    """What a feature does at a session's load, a turn's end or a cancel is its extension's hook; the
    agent names no workflow, review or index type (issue 47: it imported the workflow's ActiveRun)."""
    import ast

    import ide.backend.agent

    tree = ast.parse(Path(ide.backend.agent.__file__).read_text())
    imported = {
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ide.")
    } | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    features = ("ide.workflows", "ide.backend.extensions.", "ide.search.architectures", "ide.memory")
    assert sorted(name for name in imported if name.startswith(features)) == []
    assert "ide.backend.extensions" in imported  # the finder sees the agent's imports
