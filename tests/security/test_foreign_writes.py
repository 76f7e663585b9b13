"""A hostile foreign agent's ``fs/*`` requests, over the wire against a real ``arbor acp``: what Apply could
never write (the root, a directory, a path below a file) and what the user does not see (gitignored files)
is refused when written, with the reason — never left in review where it would block Apply of the
legitimate edits. Arbor's own change set refuses the same for every author. An over-long write is answered
with its request id (the window's request ends), and the window never sends one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from ide.changes import ChangeError, ChangeSet, Review
from ide.changes.overlay import Base, Entry
from ide.changes.store import BatchStore
from ide.protocol import foreign as ex
from ide.protocol import review as rv
from ide.protocol.review import DecideParams
from tests.support.acp_client import acp_backend
from tests.support.git import git

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'
BOGUS = [
    ("{ws}", "not the workspace root"),
    ("{ws}/pkg", "pkg is a directory"),
    ("{ws}/pkg/greet.py/x.py", "pkg/greet.py is a file"),
    ("{ws}/debug.log", "excluded from the workspace"),
    ("{ws}/build/out.py", "excluded from the workspace"),
]


async def test_bogus_writes_are_refused_with_the_reason_and_cannot_block_apply(git_workspace: Path) -> None:
    (git_workspace / ".gitignore").write_text("*.log\nbuild/\n")
    greet = git_workspace / "pkg" / "greet.py"
    async with acp_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        # The legitimate edit first: the bogus ones after it must not spoil it.
        await backend.conn.ext_method(
            ex.FOREIGN_WRITE,
            {"session_id": sid, "path": str(greet), "content": GREET.replace("Hello", "Hi")},
        )
        for where, why in BOGUS:
            with pytest.raises(RequestError) as refused:
                await backend.conn.ext_method(
                    ex.FOREIGN_WRITE,
                    {"session_id": sid, "path": where.format(ws=git_workspace), "content": "pwned\n"},
                )
            assert why in str(refused.value.data), where
        view = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        )
        assert [f.path for f in view.files] == ["pkg/greet.py"]

        await backend.conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
    assert "Hi," in greet.read_text()
    assert (git_workspace / "debug.log").read_text() == "ignored\n"
    assert not (git_workspace / "build").exists()
    assert git(git_workspace, "show", "--name-only", "--format=", "HEAD").split() == ["pkg/greet.py"]


async def test_a_gitignored_file_is_not_served_to_a_foreign_agent(git_workspace: Path) -> None:
    (git_workspace / "debug.log").write_text("API_TOKEN=hunter2\n")
    async with acp_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        with pytest.raises(RequestError) as refused:
            await backend.conn.ext_method(
                ex.FOREIGN_READ, {"session_id": sid, "path": str(git_workspace / "debug.log")}
            )
    message = str(refused.value.data)
    assert "excluded from the workspace" in message and "remove it from .gitignore" in message
    assert "hunter2" not in message


async def test_nothing_is_planted_outside_the_workspace(git_workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (git_workspace / "link").symlink_to(outside)
    async with acp_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        for path in (f"{git_workspace}/../outside/a.py", f"{git_workspace}/link/a.py", str(outside / "a.py")):
            with pytest.raises(RequestError):
                await backend.conn.ext_method(
                    ex.FOREIGN_WRITE, {"session_id": sid, "path": path, "content": "x"}
                )
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        (".", "not the workspace root"),
        ("pkg", "pkg is a directory"),
        ("pkg/greet.py/x.py", "pkg/greet.py is a file"),
        ("pkg/new.py/x.py", "pkg/new.py is a file"),
    ],
)
def test_the_change_set_refuses_for_every_author_what_apply_could_never_write(
    git_workspace: Path, rel: str, why: str
) -> None:
    changes = ChangeSet(git_workspace)
    changes.write("pkg/new.py", "x = 1\n")
    for action in (
        lambda: changes.write(rel, "x\n"),
        lambda: changes.write_bytes(rel, b"x\n"),
        lambda: changes.create(rel, "x\n"),
        lambda: changes.rename("README.md", rel),
    ):
        with pytest.raises(ChangeError) as refused:
            action()
        assert why in str(refused.value) or "already exists" in str(refused.value)
    assert changes.changed_paths() == ["pkg/new.py"]


async def test_an_over_long_write_is_answered_with_its_id(git_workspace: Path) -> None:
    from ide.backend.server import STDIO_LIMIT

    async with acp_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        content = "y" * (STDIO_LIMIT + 1024)
        with pytest.raises(RequestError) as refused:
            # Without the id in the error, this request would wait forever.
            await asyncio.wait_for(
                backend.conn.ext_method(
                    ex.FOREIGN_WRITE,
                    {"session_id": sid, "path": str(git_workspace / "big.txt"), "content": content},
                ),
                timeout=60,
            )
        assert "line limit" in str(refused.value)
        # The connection goes on.
        view = await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        assert view["files"] == []


async def test_the_window_refuses_to_forward_a_write_over_the_line_limit(
    qapp: object, tmp_path: Path
) -> None:
    from ide.app.foreign.review_backend import ReviewBackend
    from ide.client import agentproc, process

    review = ReviewBackend(tmp_path, agentproc.AgentChoice("false", ["false"], {}))
    # Control characters grow six-fold in JSON: under the limit as text, over it on the wire.
    content = "\x01" * (process.STDIO_LIMIT // 5)
    with pytest.raises(RequestError) as refused:
        await review.write_text_file("s", str(tmp_path / "big.txt"), content)
    assert "file too large for review" in str(refused.value) and "the limit is 50 MB" in str(refused.value)
    assert review.session.agent is None  # nothing was started, nothing sent


@pytest.mark.parametrize("bogus", [".", "pkg", "pkg/greet.py/x.py", "README.md/x.py"])
def test_a_bogus_entry_already_in_review_blocks_only_itself_at_apply(
    git_workspace: Path, tmp_path: Path, bogus: str
) -> None:
    """Left by an older Arbor's saved review, or made bogus by the disk changing after the write."""
    changes = ChangeSet(git_workspace)
    changes.write("pkg/greet.py", GREET.replace("Hello", "Hi"))
    bases, entries = changes.recorded()
    bases[bogus] = Base(None, None)
    entries[bogus] = Entry(b"pwned\n", 0o644)
    review = Review(
        ChangeSet.from_recorded(git_workspace, bases, entries),
        session_id="s",
        title="t",
        store=BatchStore(tmp_path / "batches"),
    )
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    result = review.apply()
    assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
    assert [c.path for c in result.conflicts] == [bogus]
    assert f"{bogus} cannot be written" in result.conflicts[0].message
    assert "Hi," in (git_workspace / "pkg" / "greet.py").read_text()


def test_a_folder_made_on_disk_after_the_write_blocks_only_that_file(
    git_workspace: Path, tmp_path: Path
) -> None:
    changes = ChangeSet(git_workspace)
    changes.write("pkg/greet.py", GREET.replace("Hello", "Hi"))
    changes.write("notes.txt", "agent\n")
    (git_workspace / "notes.txt").mkdir()
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "batches"))
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    result = review.apply()
    assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
    assert [(c.path, "notes.txt is a directory" in c.message) for c in result.conflicts] == [
        ("notes.txt", True)
    ]


def _format_characters_refused() -> bool:
    from ide.fs import check_path_text
    from ide.tools import ToolError

    try:
        check_path_text("notes\u202eyp.txt")
    except ToolError:
        return True
    return False


@pytest.mark.skipif(
    not _format_characters_refused(),
    reason="needs the Cf refusal in ide.fs.check_path_text (issue 27, item 5)",
)
@pytest.mark.parametrize("name", ["notes\u202etxt.py", "pkg/__init__\u200b.py"])
async def test_a_name_with_hidden_characters_is_refused(git_workspace: Path, name: str) -> None:
    async with acp_backend() as backend:
        sid = (await backend.conn.ext_method(ex.FOREIGN_OPEN, {"cwd": str(git_workspace)}))["session_id"]
        with pytest.raises(RequestError):
            await backend.conn.ext_method(
                ex.FOREIGN_WRITE, {"session_id": sid, "path": f"{git_workspace}/{name}", "content": "x\n"}
            )
        view = await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        assert view["files"] == []
