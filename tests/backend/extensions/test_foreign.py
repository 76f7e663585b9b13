"""Review for another agent's edits (``ide/backend/extensions/foreign.py``), in process: writes forwarded by
the window go into a change set Arbor's backend holds, reads see them, and the usual review methods apply
and commit them."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from ide.protocol import foreign as ex
from ide.protocol import review as rv
from tests.support.git import git
from tests.support.inprocess import inprocess_backend

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


async def test_a_foreign_agents_writes_wait_for_review_then_apply_as_one_commit(git_workspace: Path) -> None:
    async with inprocess_backend() as backend:
        assert set(ex.FOREIGN_METHODS) <= set(
            backend.init.agent_capabilities.field_meta["arbor"]["extensions"]
        )
        opened = ex.ForeignSession.model_validate(
            await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace), "agent": "goose"})
        )
        sid = opened.session_id
        greet = git_workspace / "pkg" / "greet.py"
        new_text = GREET.replace("Hello", "Hi")
        view = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(
                ex.FOREIGN_WRITE, {"session_id": sid, "path": str(greet), "content": new_text}
            )
        )
        assert [(f.path, f.status) for f in view.files] == [("pkg/greet.py", "modified")]
        assert view.title == "Edits by goose"
        assert greet.read_text() == GREET  # nothing on disk before Apply

        read = await backend.conn.ext_method(ex.FOREIGN_READ, {"session_id": sid, "path": str(greet)})
        assert read["content"] == new_text  # the agent reads its own pending edit
        second = await backend.conn.ext_method(
            ex.FOREIGN_READ, {"session_id": sid, "path": str(greet), "line": 2, "limit": 1}
        )
        assert second["content"] == '    return f"Hi, {name}!"\n'

        await backend.conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
        assert greet.read_text() == new_text
        assert git(git_workspace, "show", "--name-only", "--format=", "HEAD").split() == ["pkg/greet.py"]
        assert f"Arbor-Session: {sid}" in git(git_workspace, "log", "-1", "--format=%B")


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("/etc/passwd", "outside the workspace"),
        ("{ws}/.env", "secret"),
        ("{ws}/.git/config", ".git"),
        ("pkg/greet.py", "must be absolute"),
    ],
)
async def test_reads_and_writes_outside_the_workspace_or_of_secrets_are_refused(
    git_workspace: Path, where: str, why: str
) -> None:
    (git_workspace / ".env").write_text("TOKEN=x\n")
    path = where.format(ws=git_workspace)
    async with inprocess_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        for method, extra in ((ex.FOREIGN_READ, {}), (ex.FOREIGN_WRITE, {"content": "x"})):
            with pytest.raises(RequestError) as refused:
                await backend.conn.ext_method(method, {"session_id": sid, "path": path, **extra})
            assert why in str(refused.value.data)
        view = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        )
        assert view.files == []
    assert (git_workspace / ".env").read_text() == "TOKEN=x\n"
