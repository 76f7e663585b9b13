"""A foreign agent's shadow workspace over a real ``arbor acp``: the session's fs/* is served from the
shadow, a capture finds what was written there by any means, a rejected hunk is reverted in the shadow at
the next turn's start while the user's edits come in, Apply commits, close removes the shadow — and paths
outside it, git's metadata and a workspace without git are refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import ClientCapabilities

from ide.protocol import META_KEY
from ide.protocol import foreign as ex
from ide.protocol import review as rv
from tests.support.acp_client import acp_backend
from tests.support.git import git

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


async def test_a_shadow_session_captures_reverts_takes_in_applies_and_closes(git_workspace: Path) -> None:
    async with acp_backend() as backend:
        conn = backend.conn
        shadow = ex.ForeignShadow.model_validate(
            await conn.ext_method(ex.FOREIGN_SHADOW, {"cwd": str(git_workspace), "agent": "qwen"})
        )
        sid, root = shadow.session_id, Path(shadow.cwd)
        assert root != git_workspace and (root / "pkg" / "greet.py").read_text() == GREET
        # One write through fs/*, one as a shell command would make it (straight into the shadow).
        view = rv.ChangeSetView.model_validate(
            await conn.ext_method(
                ex.FOREIGN_WRITE,
                {"session_id": sid, "path": str(root / "pkg" / "greet.py"), "content": GREET + "# fs\n"},
            )
        )
        assert [f.path for f in view.files] == ["pkg/greet.py"]
        read = await conn.ext_method(ex.FOREIGN_READ, {"session_id": sid, "path": str(root / "pkg/greet.py")})
        assert read["content"] == GREET + "# fs\n"
        (root / "made_by_shell.py").write_text("print(1)\n")
        captured = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_CAPTURE, {"session_id": sid})
        )
        assert [(f.path, f.status) for f in captured.changeset.files] == [
            ("made_by_shell.py", "added"),
            ("pkg/greet.py", "modified"),
        ]
        assert not (git_workspace / "made_by_shell.py").exists()
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
        # An agent that writes into the real workspace is not captured, but it is reported.
        (git_workspace / "sneaky.py").write_text("print('outside the shadow')\n")
        scanned = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_CAPTURE, {"session_id": sid, "workspace": True})
        )
        assert scanned.workspace_changed == ["sneaky.py"]
        assert "sneaky.py" not in [f.path for f in scanned.changeset.files]
        (git_workspace / "sneaky.py").unlink()

        # The user rejects the shell file and edits README.md meanwhile: the next turn sees both.
        await conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "rejected", "paths": ["made_by_shell.py"]}
        )
        (git_workspace / "README.md").write_text("# demo by the user\n")
        started = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_TURN_START, {"session_id": sid})
        )
        assert not (root / "made_by_shell.py").exists()
        assert (root / "README.md").read_text() == "# demo by the user\n"
        assert [f.path for f in started.changeset.files] == ["pkg/greet.py"]

        await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
        result = rv.ApplyResult.model_validate(await conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
        assert git(git_workspace, "show", "HEAD:pkg/greet.py") == GREET + "# fs\n"
        assert git(git_workspace, "show", "HEAD:README.md") != "# demo by the user\n"  # the user's own edit
        # Applied is the shadow's new baseline, and a hunk rejected at Apply stays gone: a capture right
        # after (the agent still working) finds neither again.
        (root / "later.py").write_text("x = 1\n")
        captured = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_CAPTURE, {"session_id": sid})
        )
        assert [f.path for f in captured.changeset.files] == ["later.py"]
        await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "rejected", "all": True})
        result = rv.ApplyResult.model_validate(await conn.ext_method(rv.APPLY, {"session_id": sid}))
        after = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_CAPTURE, {"session_id": sid, "workspace": True})
        )
        assert after.changeset.files == [] and after.workspace_changed == []
        assert not (root / "later.py").exists()

        closed = await conn.ext_method(ex.FOREIGN_CLOSE, {"session_id": sid})
        assert closed == {"removed": True} and not root.exists()
        assert git(git_workspace, "worktree", "list").count("\n") == 1


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("{ws}/pkg/greet.py", "outside the agent's workspace"),
        ("{shadow}/../escape.py", "outside the agent's workspace"),
        ("{shadow}/.git/config", "git's metadata"),
        ("pkg/greet.py", "must be absolute"),
    ],
)
async def test_shadow_fs_refuses_paths_outside_it(git_workspace: Path, where: str, why: str) -> None:
    async with acp_backend() as backend:
        shadow = ex.ForeignShadow.model_validate(
            await backend.conn.ext_method(ex.FOREIGN_SHADOW, {"cwd": str(git_workspace)})
        )
        path = where.format(ws=git_workspace, shadow=shadow.cwd)
        for method, extra in ((ex.FOREIGN_WRITE, {"content": "x"}), (ex.FOREIGN_READ, {})):
            with pytest.raises(RequestError) as caught:
                await backend.conn.ext_method(
                    method, {"session_id": shadow.session_id, "path": path, **extra}
                )
            assert why in str(caught.value.data)
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
        await backend.conn.ext_method(ex.FOREIGN_CLOSE, {"session_id": shadow.session_id})


async def test_a_workspace_without_git_gets_no_shadow_and_is_told_why(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    async with acp_backend() as backend:
        with pytest.raises(RequestError) as caught:
            await backend.conn.ext_method(ex.FOREIGN_SHADOW, {"cwd": str(plain)})
        assert "git init" in str(caught.value.data)


async def test_a_shadow_review_asked_for_summaries_sends_them_and_the_hunks_on_request(
    git_workspace: Path,
) -> None:
    """The window's review connection asks for summaries: a capture of 25 new files carries the first
    screen's hunks, the rest come from ``_arbor/review/hunks`` with the ids the summary named."""
    caps = ClientCapabilities(field_meta={META_KEY: {"review": True, rv.SUMMARY_CAPABILITY: True}})
    async with acp_backend(capabilities=caps) as backend:
        conn = backend.conn
        shadow = ex.ForeignShadow.model_validate(
            await conn.ext_method(ex.FOREIGN_SHADOW, {"cwd": str(git_workspace), "agent": "qwen"})
        )
        sid, root = shadow.session_id, Path(shadow.cwd)
        for n in range(25):
            (root / f"made_{n:02d}.py").write_text(f"N = {n}\n")
        captured = ex.ForeignCapture.model_validate(
            await conn.ext_method(ex.FOREIGN_CAPTURE, {"session_id": sid})
        )
        files = captured.changeset.files
        assert [f.summarised for f in files] == [False] * rv.FIRST_SCREEN_HUNKS + [True] * 5
        fetched = rv.HunksResult.model_validate(
            await conn.ext_method(rv.HUNKS, {"session_id": sid, "paths": [files[-1].path]})
        )
        [last] = fetched.files
        assert [h.id for h in last.hunks] == files[-1].hunk_ids and last.hunks[0].lines == ["+N = 24"]


async def test_reading_a_missing_file_answers_empty_text_as_zed_does(git_workspace: Path) -> None:
    """Gemini CLI's write_file of a new file reads it first, and can take no error as "missing"."""
    async with acp_backend() as backend:
        conn = backend.conn
        shadow = ex.ForeignShadow.model_validate(
            await conn.ext_method(ex.FOREIGN_SHADOW, {"cwd": str(git_workspace), "agent": "gemini"})
        )
        missing = str(Path(shadow.cwd) / "new_file.py")
        read = await conn.ext_method(ex.FOREIGN_READ, {"session_id": shadow.session_id, "path": missing})
        assert read["content"] == ""
        opened = ex.ForeignSession.model_validate(
            await conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace), "agent": "plain"})
        )
        direct = str(git_workspace / "new_file.py")
        read = await conn.ext_method(ex.FOREIGN_READ, {"session_id": opened.session_id, "path": direct})
        assert read["content"] == ""
        outside = str(git_workspace.parent / "elsewhere.py")  # still refused, not "empty"
        with pytest.raises(RequestError):
            await conn.ext_method(ex.FOREIGN_READ, {"session_id": opened.session_id, "path": outside})
        with pytest.raises(RequestError) as folder:
            await conn.ext_method(
                ex.FOREIGN_READ, {"session_id": opened.session_id, "path": str(git_workspace / "pkg")}
            )
        assert folder.value.code == -32602 and "is a directory" in folder.value.data["message"]
