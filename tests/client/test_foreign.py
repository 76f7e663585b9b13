"""The one foreign-agent session (ide/client/foreign.py), without Qt: which files each capture moved and which
tool calls may have moved them; and the session's life over a real ``arbor acp`` — the shadow opened, a
change made there captured and attributed, the agent's ``fs/*`` served through the review, the turn's
start, the end-of-turn capture naming a workspace file edited meanwhile, the shadow removed and the backend
stopped, its death told (and a stop not told); the agent's command under real bwrap when confined."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ide.client.foreign import Attribution, ForeignSession
from ide.protocol.foreign import FOREIGN_OPEN, FOREIGN_SHADOW
from ide.sandbox import bwrap_status

START_S = 60


def changeset(*files: tuple[str, str, tuple[str, ...]]) -> Any:
    """A stand-in for a ChangeSetView: (path, status, hunk ids) per file."""
    return SimpleNamespace(
        files=[
            SimpleNamespace(path=path, status=status, hunks=[SimpleNamespace(id=h) for h in hunks])
            for path, status, hunks in files
        ]
    )


def test_a_capture_names_what_moved_since_the_one_before_and_the_tool_calls_that_ran_meanwhile() -> None:
    attribution = Attribution()
    attribution.reported("t1", "Write a.py")
    asked = attribution.asking()
    attribution.reported("t2", None)  # reported while the capture ran: it may change files after it looked
    moved = attribution.answered(asked, changeset(("a.py", "added", ("h1",))))
    assert moved.files == [("a.py", "added")] and moved.listed == "a.py (added)"
    assert moved.by == ["t1", "t2"] and moved.titles == ["Write a.py", "t2"]

    # The next capture: t2 is still a suspect, t1 no longer; a.py unchanged is not named again.
    moved = attribution.answered(attribution.asking(), changeset(("a.py", "added", ("h1",))))
    assert moved.files == [] and moved.by == ["t2"]

    attribution.reported("t3", "Edit a.py")
    asked = attribution.asking()
    moved = attribution.answered(asked, changeset(("a.py", "modified", ("h2",)), ("b.py", "added", ("h3",))))
    assert moved.listed == "a.py (modified), b.py (added)" and moved.by == ["t3"]

    # A file gone from the review (its hunks rejected, or the agent undid it) was reverted.
    moved = attribution.answered(attribution.asking(), changeset(("b.py", "added", ("h3",))))
    assert moved.files == [("a.py", "reverted")] and moved.by == []


def test_a_new_shadow_forgets_the_files_captured_but_not_the_tool_calls() -> None:
    attribution = Attribution()
    attribution.answered(attribution.asking(), changeset(("a.py", "added", ("h1",))))
    attribution.reported("t1", "Run")
    attribution.forget_files()
    moved = attribution.answered(attribution.asking(), changeset(("a.py", "added", ("h1",))))
    assert moved.files == [("a.py", "added")] and moved.by == ["t1"]


async def test_a_sessions_life_over_arbors_backend(git_workspace: Path) -> None:
    exits: list[tuple[int, str]] = []
    session = ForeignSession(
        git_workspace, meta=lambda: {"review": True}, client="test", on_exit=lambda *e: exits.append(e)
    )
    try:
        hello = await asyncio.wait_for(session.start(), START_S)
        assert session.running and hello.meta is not None and FOREIGN_SHADOW in hello.meta.extensions
        opened = await asyncio.wait_for(session.open_shadow("tester"), START_S)
        shadow = Path(opened.cwd)
        assert session.shadow == opened.cwd and session.session_id == opened.session_id
        assert shadow.is_dir() and shadow != git_workspace and git_workspace not in shadow.parents
        assert (shadow / "pkg" / "greet.py").read_text() == (git_workspace / "pkg" / "greet.py").read_text()

        started = await session.turn_start("add notes")
        assert started is not None and started.conflicts == []
        (shadow / "notes.txt").write_text("by a shell command\n")  # as the agent's own tools write
        captured = await session.capture_after(final=False)
        assert captured is not None
        capture, moved = captured
        assert [f.path for f in capture.changeset.files] == ["notes.txt"]
        assert moved.files == [("notes.txt", "added")]

        # fs/* through the review: the write is held, the read sees it; nothing lands in the workspace.
        view = await session.write(str(shadow / "pkg" / "greet.py"), "def greet(name):\n    return 1\n")
        assert sorted(f.path for f in view.files) == ["notes.txt", "pkg/greet.py"]
        assert await session.read(str(shadow / "pkg" / "greet.py"), None, None) == (
            "def greet(name):\n    return 1\n"
        )
        assert not (git_workspace / "notes.txt").exists()

        (git_workspace / "README.md").write_text("# edited by the user meanwhile\n")
        final = await session.capture(workspace=True)
        assert final is not None and final.workspace_changed == ["README.md"]

        await session.close_shadow()
        assert session.shadow is None and not shadow.exists()
        assert await session.capture() is None  # no shadow: nothing to capture
        assert session.session_id is not None  # the review stays, for the Review dock
    finally:
        await session.aclose()
    assert not session.running and session.agent is not None and session.agent.process.returncode is not None
    assert exits == []  # asked to stop: no death told


async def test_two_closes_stop_the_backend_once_and_only_after_the_shadow_is_gone(
    git_workspace: Path,
) -> None:
    """The window's close and its entry point both close the session: the second must not stop the backend
    while the first's request to remove the shadow is on its way (a killed backend left the shadow behind
    in two full runs)."""
    session = ForeignSession(git_workspace, meta=lambda: {"review": True}, client="test")
    await asyncio.wait_for(session.start(), START_S)
    shadow = Path((await asyncio.wait_for(session.open_shadow("tester"), START_S)).cwd)
    stop = session.stop_backend
    shadow_at_stop: list[bool] = []

    async def recording_stop(**kwargs: Any) -> None:
        shadow_at_stop.append(shadow.exists())
        await stop(**kwargs)

    session.stop_backend = recording_stop  # type: ignore[method-assign]
    await asyncio.wait_for(asyncio.gather(session.aclose(), session.aclose()), START_S)
    assert shadow_at_stop == [False] and not shadow.exists() and not session.running


async def test_the_backends_death_is_told_with_the_shadow_gone(git_workspace: Path) -> None:
    died = asyncio.Event()
    exits: list[tuple[int, str]] = []

    def on_exit(code: int, stderr: str) -> None:
        exits.append((code, stderr))
        died.set()

    session = ForeignSession(git_workspace, meta=lambda: {"review": True}, on_exit=on_exit)
    try:
        await asyncio.wait_for(session.start(), START_S)
        await asyncio.wait_for(session.open_shadow("tester"), START_S)
        assert session.agent is not None
        os.kill(session.agent.process.pid, signal.SIGKILL)
        await asyncio.wait_for(died.wait(), 10)
        assert [code for code, _ in exits] == [-signal.SIGKILL]
        assert session.shadow is None and session.session_id is None and not session.running
    finally:
        await session.aclose()


async def test_a_review_without_a_shadow_holds_only_the_agents_writes(git_workspace: Path) -> None:
    session = ForeignSession(git_workspace, meta=lambda: {"review": True})
    try:
        hello = await asyncio.wait_for(session.start(), START_S)
        assert hello.meta is not None and FOREIGN_OPEN in hello.meta.extensions
        review = await session.open_review("tester")
        assert session.session_id == review and session.shadow is None
        assert await session.turn_start("x") is None and await session.capture_after(final=True) is None
        view = await session.write(str(git_workspace / "new.py"), "x = 1\n")
        assert [f.path for f in view.files] == ["new.py"] and not (git_workspace / "new.py").exists()
    finally:
        await session.aclose()


@pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")
def test_a_confined_agents_command_runs_under_bwrap_with_a_tmpdir_of_its_own(tmp_path: Path) -> None:
    workspace, shadow = tmp_path / "workspace", tmp_path / "shadow"
    workspace.mkdir()
    shadow.mkdir()
    session = ForeignSession(workspace, meta=dict)
    session.shadow = str(shadow)
    assert session.command(["agent", "--acp"], {}) == ["agent", "--acp"]  # not confined: as it is

    session.writable = []
    argv = session.command(["agent", "--acp"], {"HOME": str(tmp_path / "home")})
    assert argv[0].endswith("bwrap") and argv[-2:] == ["agent", "--acp"]
    scratch = session.scratch
    assert scratch is not None and Path(scratch).is_dir() and scratch in argv
    assert session.command(["agent"], {}) and session.scratch == scratch  # one TMPDIR for its life
    session.remove_scratch()
    assert session.scratch is None and not Path(scratch).exists()
