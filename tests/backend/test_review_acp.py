"""Batched review over ACP: edits stay in the change set until the user decides, then land in one commit."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities, FileEditToolCallContent, FileSystemCapabilities

from ide.protocol import META_KEY
from ide.protocol import review as rv
from ide.protocol.index import INDEX_CHANGED
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.git import git

REVIEWER = ClientCapabilities(field_meta={META_KEY: {"review": True}})

EDITS = [
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {
                    "path": "pkg/greet.py",
                    "old_text": 'return f"Hello, {name}!"',
                    "new_text": 'return f"Hi, {name}!"',
                },
            },
            {
                "name": "create_file",
                "args": {"path": "pkg/farewell.py", "content": "def bye():\n    return 1\n"},
            },
        ]
    },
    {"tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}]},
    {"content": "Changed the greeting and added `bye`."},
]


GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


async def test_edits_wait_for_review_then_only_accepted_hunks_land_in_one_commit(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    (git_workspace / "notes.txt").write_text("the user's own unrelated change\n")
    script = write_script(EDITS)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        assert set(rv.REVIEW_METHODS) <= set(
            backend.init.agent_capabilities.field_meta[META_KEY]["extensions"]
        )
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        sid = session.session_id
        response = await backend.conn.prompt(session_id=sid, prompt=[text_block("Make it friendlier")])
        assert response.stop_reason == "end_turn"

        # nothing written yet; the agent's own read saw its edit
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
        assert not (git_workspace / "pkg" / "farewell.py").exists()
        read_back = [u for _, u in backend.client.updates if u.session_update == "tool_call_update"][-1]
        assert "Hi, {name}" in read_back.raw_output["output"]

        diffs = [
            c
            for _, u in backend.client.updates
            if u.session_update == "tool_call_update"
            for c in (u.content or [])
            if isinstance(c, FileEditToolCallContent)
        ]
        assert {Path(d.path).name for d in diffs} == {"greet.py", "farewell.py"}

        session_notes = [(m, p) for m, p in backend.client.notifications if m != INDEX_CHANGED]
        [(method, params)] = session_notes  # one change set for the turn
        assert method == rv.CHANGESET_NOTIFICATION
        view = rv.ChangeSetView.model_validate(params)
        assert [(f.path, f.status) for f in view.files] == [
            ("pkg/farewell.py", "added"),
            ("pkg/greet.py", "modified"),
        ]

        farewell = view.files[0]
        await backend.conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "rejected", "paths": [farewell.path]}
        )
        await backend.conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": False, "paths": ["pkg/greet.py"]}
        )
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.conflicts == []
        assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]

        assert "Hi, {name}" in (git_workspace / "pkg" / "greet.py").read_text()
        assert not (git_workspace / "pkg" / "farewell.py").exists()
        assert git(git_workspace, "show", "--name-only", "--format=", "HEAD").split() == ["pkg/greet.py"]
        assert f"Arbor-Session: {sid}" in git(git_workspace, "log", "-1", "--format=%B")
        assert "notes.txt" in git(git_workspace, "status", "--porcelain")

        history = rv.HistoryResult.model_validate(
            await backend.conn.ext_method(rv.HISTORY, {"cwd": str(git_workspace)})
        )
        assert [b.id for b in history.batches] == [result.batch.id]

        rolled = rv.RollbackResult.model_validate(
            await backend.conn.ext_method(rv.ROLLBACK, {"cwd": str(git_workspace)})
        )
        assert rolled.batch.id == result.batch.id and rolled.refused == []
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
        assert (git_workspace / "notes.txt").read_text() == "the user's own unrelated change\n"


async def test_a_client_without_review_or_permission_gets_its_turn_and_nothing_is_written(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(EDITS)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        response = await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        assert response.stop_reason == "end_turn"
        assert len(backend.client.permission_requests) == 1
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
    assert not (git_workspace / "pkg" / "farewell.py").exists()


@pytest.mark.parametrize("with_fs", [False, True])
async def test_a_plain_acp_client_is_asked_once_and_approval_writes_the_batch(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path], with_fs: bool
) -> None:
    script = write_script(EDITS)
    written: list[tuple[str, str]] = []

    class WritingClient(RecordingClient):
        async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
            written.append((path, content))
            Path(path).write_text(content)

    client = WritingClient(permission_answer="apply")
    caps = ClientCapabilities(fs=FileSystemCapabilities(write_text_file=True)) if with_fs else None
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, caps, client) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    [(tool_call, options)] = client.permission_requests
    assert {o.option_id for o in options} == {"apply", "discard"}
    assert any(isinstance(c, FileEditToolCallContent) for c in tool_call.content)
    assert "Hi, {name}" in (git_workspace / "pkg" / "greet.py").read_text()
    assert (git_workspace / "pkg" / "farewell.py").read_text() == "def bye():\n    return 1\n"
    assert bool(written) == with_fs
    if not with_fs:
        assert "Arbor-Session:" in git(git_workspace, "log", "-1", "--format=%B")


def test_arbor_run_prints_the_diff_then_apply_and_rollback(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(EDITS)
    env = {**os.environ, "ARBOR_MODEL": f"scripted:{script}"}
    arbor = [sys.executable, "-m", "ide"]
    shown = subprocess.run(
        [*arbor, "run", "-w", str(git_workspace), "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/pkg/greet.py" in shown.stdout and '+    return f"Hi, {name}!"' in shown.stdout
    assert "--- /dev/null" in shown.stdout
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
    head = git(git_workspace, "rev-parse", "HEAD")

    applied = subprocess.run(
        [*arbor, "run", "-w", str(git_workspace), "--apply", "go"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    assert "[review] applied batch" in applied.stderr
    assert (git_workspace / "pkg" / "farewell.py").exists()
    assert git(git_workspace, "rev-parse", "HEAD~1") == head

    back = subprocess.run(
        [*arbor, "rollback", "-w", str(git_workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert back.returncode == 0, back.stderr
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
    assert not (git_workspace / "pkg" / "farewell.py").exists()


async def test_pending_review_survives_a_backend_restart(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(EDITS)
    env = {"ARBOR_MODEL": f"scripted:{script}"}
    async with acp_backend(env, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        sid = session.session_id
        await backend.conn.prompt(session_id=sid, prompt=[text_block("go")])
        decided = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(
                rv.DECIDE,
                {
                    "session_id": sid,
                    "decision": "rejected",
                    "paths": ["pkg/farewell.py"],
                    "comment": "not now",
                },
            )
        )
        backend.proc.kill()
        await backend.proc.wait()

    async with acp_backend(env, REVIEWER) as backend:
        await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
        restored = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        )
        assert restored == decided
        await backend.conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "accepted", "paths": ["pkg/greet.py"]}
        )
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
    assert result.batch is not None and result.batch.paths == ["pkg/greet.py"]
    assert "Hi, {name}" in (git_workspace / "pkg" / "greet.py").read_text()
    assert not (git_workspace / "pkg" / "farewell.py").exists()


EDIT_THEN_STALL = [
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {
                    "path": "pkg/greet.py",
                    "old_text": 'return f"Hello, {name}!"',
                    "new_text": 'return f"Hi, {name}!"',
                },
            }
        ]
    },
    {"content": "still thinking", "latency_ms": 60000},
    {"content": "Nothing more to change."},
]


async def test_stop_after_an_edit_keeps_it_pending_and_asks_nothing_until_the_next_turn_ends(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    """A plain ACP client (no review extension) that stops a turn: no permission request after the
    cancel, nothing written, the edit listed as pending and offered again when the next turn ends."""
    script = write_script(EDIT_THEN_STALL)
    client = RecordingClient(permission_answer="discard")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(
            backend.conn.prompt(session_id=sid, prompt=[text_block("Make it friendlier")])
        )
        await backend.client.wait_until(
            lambda: any(
                u.session_update == "tool_call_update" and u.status == "completed" for _, u in client.updates
            )
        )
        await backend.conn.cancel(session_id=sid)
        response = await asyncio.wait_for(turn, timeout=10)
        assert response.stop_reason == "cancelled"
        assert response.field_meta[META_KEY]["pending"] == ["pkg/greet.py"]
        assert client.permission_requests == []
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET
        view = rv.ChangeSetView.model_validate(
            await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        )
        assert [f.path for f in view.files] == ["pkg/greet.py"]

        again = await backend.conn.prompt(session_id=sid, prompt=[text_block("Anything else?")])
        assert again.stop_reason == "end_turn"
        [(asked, _options)] = client.permission_requests
        assert "1 file(s)" in asked.title  # the pending edit, offered at this turn's end
    assert (git_workspace / "pkg" / "greet.py").read_text() == GREET  # discarded, never written


SUMMARY_READER = ClientCapabilities(field_meta={META_KEY: {"review": True, rv.SUMMARY_CAPABILITY: True}})


async def test_a_client_asking_for_summaries_gets_the_first_screen_then_the_hunks_it_asks_for(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    created = [
        {"name": "create_file", "args": {"path": f"gen/m{n:02d}.py", "content": f"N = {n}\n"}}
        for n in range(25)
    ]
    script = write_script([{"tool_calls": created}, {"content": "Made 25 modules."}])
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, SUMMARY_READER) as backend:
        assert rv.HUNKS in backend.init.agent_capabilities.field_meta[META_KEY]["extensions"]
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        sid = session.session_id
        await backend.conn.prompt(session_id=sid, prompt=[text_block("go")])
        [params] = [p for m, p in backend.client.notifications if m == rv.CHANGESET_NOTIFICATION]
        pushed = rv.ChangeSetView.model_validate(params)
        paths = [f"gen/m{n:02d}.py" for n in range(25)]
        assert [f.path for f in pushed.files] == paths
        # The first screen in full, the rest as hunk ids and decisions with their counts.
        assert [f.summarised for f in pushed.files] == [False] * rv.FIRST_SCREEN_HUNKS + [True] * 5
        assert {(f.status, f.additions, f.deletions) for f in pushed.files} == {("added", 1, 0)}
        assert pushed.files[0].hunks[0].lines == ["+N = 0"]
        queried = await backend.conn.ext_method(rv.CHANGESET, {"session_id": sid})
        assert rv.ChangeSetView.model_validate(queried) == pushed

        answer = await backend.conn.ext_method(
            rv.HUNKS, {"session_id": sid, "paths": [*paths[20:], "nope.py"]}
        )
        fetched = rv.HunksResult.model_validate(answer).files
        assert [f.path for f in fetched] == paths[20:]
        for short, whole in zip(pushed.files[20:], fetched, strict=True):
            assert [h.id for h in whole.hunks] == short.hunk_ids
            assert [h.decision for h in whole.hunks] == short.decisions
            assert whole.hunks[0].lines == [f"+N = {short.path[5:7].lstrip('0') or '0'}"]

        # A decision on a hunk fetched later answers with a summary, and Apply writes exactly that file.
        decided = await backend.conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "accepted", "hunk_ids": [fetched[3].hunks[0].id]}
        )
        view = rv.ChangeSetView.model_validate(decided)
        assert view.files[23].decisions == ["accepted"] and not view.files[23].hunks
        result = rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": sid}))
        assert result.batch is not None and result.batch.paths == ["gen/m23.py"]
        assert (git_workspace / "gen" / "m23.py").read_text() == "N = 23\n"
        assert sorted(p.name for p in (git_workspace / "gen").iterdir()) == ["m23.py"]
        assert len(result.changeset.files) == 24 and result.changeset.files[-1].summarised
