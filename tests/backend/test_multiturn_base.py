"""Several turns of one session of Arbor's agent over a real ``arbor acp`` (scripted model): what the agent
reads in a turn is the workspace as it is now with the session's pending edits on top — after the user's
own edits, an Apply, a Roll back or a rejected hunk between the turns (issue 46 items 1 and 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import ClientCapabilities

from ide.protocol import META_KEY
from ide.protocol import review as rv
from tests.support.acp_client import Backend, acp_backend
from tests.support.git import HELLO, git, hello_repo

REVIEWER = ClientCapabilities(field_meta={META_KEY: {"review": True}})
ARBOR = 'print("hello, arbor")\n'


def read(path: str) -> dict[str, Any]:
    return {"name": "read_file", "args": {"path": path}}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "args": {"path": path, "old_text": old, "new_text": new}}


def create(path: str, content: str) -> dict[str, Any]:
    return {"name": "create_file", "args": {"path": path, "content": content}}


def calls(*tool_calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(tool_calls)}


def say(text: str) -> dict[str, Any]:
    return {"content": text}


async def turn(backend: Backend, session_id: str, text: str = "go") -> list[Any]:
    """One prompt turn; the tool calls it ended (their ``tool_call_update`` with a status), in order."""
    before = len(backend.client.updates)
    response = await backend.conn.prompt(session_id=session_id, prompt=[text_block(text)])
    assert response.stop_reason == "end_turn"
    return [
        update
        for _, update in backend.client.updates[before:]
        if update.session_update == "tool_call_update" and update.status in ("completed", "failed")
    ]


async def changeset(backend: Backend, session_id: str) -> rv.ChangeSetView:
    return rv.ChangeSetView.model_validate(
        await backend.conn.ext_method(rv.CHANGESET, {"session_id": session_id})
    )


async def apply_all(backend: Backend, session_id: str) -> rv.ApplyResult:
    await backend.conn.ext_method(rv.DECIDE, {"session_id": session_id, "decision": "accepted", "all": True})
    return rv.ApplyResult.model_validate(await backend.conn.ext_method(rv.APPLY, {"session_id": session_id}))


async def test_a_user_edit_between_turns_is_read_and_the_agents_edit_applies_without_a_conflict(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    root = hello_repo(tmp_path)
    script = write_script(
        [
            calls(read("hello.py")),
            say("It prints hello."),
            calls(read("hello.py"), edit("hello.py", 'print("hello")', 'print("hello, arbor")')),
            say("It greets arbor now."),
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
        sid = session.session_id
        [first] = await turn(backend, sid, "What does hello.py print?")
        assert 'print("hello")' in first.raw_output["output"]

        (root / "hello.py").write_text(HELLO + 'print("world")\n')  # the user's own line
        read_again, edited = await turn(backend, sid, "Make it greet arbor")
        assert 'print("world")' in read_again.raw_output["output"]
        assert edited.status == "completed"

        view = await changeset(backend, sid)
        [file] = view.files
        assert file.conflict is None and (file.additions, file.deletions) == (1, 1)
        result = await apply_all(backend, sid)
        assert result.conflicts == [] and result.batch is not None
    assert (root / "hello.py").read_text() == ARBOR + 'print("world")\n'


async def test_apply_roll_back_then_the_same_edits_again_succeed_and_are_reviewed(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    root = hello_repo(tmp_path)
    same = calls(
        create("made_by_agent.py", 'print("made")\n'),
        edit("hello.py", 'print("hello")', 'print("hello, arbor")'),
    )
    script = write_script([same, say("Done."), same, say("Done again.")])
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
        sid = session.session_id
        assert [u.status for u in await turn(backend, sid)] == ["completed", "completed"]
        applied = await apply_all(backend, sid)
        assert applied.batch is not None and (root / "made_by_agent.py").exists()
        rolled = rv.RollbackResult.model_validate(
            await backend.conn.ext_method(rv.ROLLBACK, {"cwd": str(root)})
        )
        assert rolled.refused == []
        assert (root / "hello.py").read_text() == HELLO and not (root / "made_by_agent.py").exists()

        again = await turn(backend, sid, "Do it again")
        assert [u.status for u in again] == ["completed", "completed"], [u.raw_output for u in again]
        view = await changeset(backend, sid)
        assert [(f.path, f.status) for f in view.files] == [
            ("hello.py", "modified"),
            ("made_by_agent.py", "added"),
        ]
        result = await apply_all(backend, sid)
        assert result.conflicts == [] and result.batch is not None
    assert (root / "hello.py").read_text() == ARBOR
    assert (root / "made_by_agent.py").read_text() == 'print("made")\n'
    assert git(root, "log", "--format=%s").splitlines()[1].startswith("Revert Arbor batch")


LINES = "alpha\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\nomega\n"


async def test_a_rejected_hunk_is_gone_from_the_next_turns_read_which_shows_the_disk_and_the_rest(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    root = hello_repo(tmp_path)
    (root / "lines.txt").write_text(LINES)
    script = write_script(
        [
            calls(edit("lines.txt", "alpha\n", "ALPHA\n"), edit("lines.txt", "omega\n", "OMEGA\n")),
            say("Shouted both ends."),
            calls(read("lines.txt")),
            say("Read it."),
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
        sid = session.session_id
        await turn(backend, sid)
        [file] = (await changeset(backend, sid)).files
        [shouted] = [h.id for h in file.hunks if "+ALPHA" in h.lines]
        await backend.conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "rejected", "hunk_ids": [shouted]}
        )
        (root / "lines.txt").write_text(LINES.replace("six\n", "six (mine)\n"))

        [read_back] = await turn(backend, sid)
        output = read_back.raw_output["output"]
        assert "alpha" in output and "ALPHA" not in output
        assert "six (mine)" in output and "OMEGA" in output

        [file] = (await changeset(backend, sid)).files
        assert [(h.decision, [line for line in h.lines if line[:1] in "+-"]) for h in file.hunks] == [
            ("pending", ["-omega", "+OMEGA"])
        ]
        result = await apply_all(backend, sid)
        assert result.conflicts == []
    assert (root / "lines.txt").read_text() == LINES.replace("six\n", "six (mine)\n").replace(
        "omega", "OMEGA"
    )


async def test_an_overlapping_user_edit_is_said_for_its_file_and_nothing_is_lost(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    root = hello_repo(tmp_path)
    (root / "other.py").write_text("a = 1\n\n\n\n\nx = 1\n")
    script = write_script(
        [
            calls(
                edit("hello.py", 'print("hello")', 'print("hello, arbor")'),
                edit("other.py", "x = 1", "x = 2"),
            ),
            say("Edited."),
            calls(read("hello.py"), read("other.py")),
            say("Read them."),
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
        sid = session.session_id
        await turn(backend, sid)
        mine = 'print("hello, user")\n'
        (root / "hello.py").write_text(mine)  # the same line the agent changed
        (root / "other.py").write_text("a = 0  # the user's\n\n\n\n\nx = 1\n")  # far from the agent's line

        thoughts_before = len(backend.client.text("agent_thought_chunk"))
        hello, other = await turn(backend, sid)
        said = hello.raw_output["output"]
        assert "hello, arbor" in said and "Note: hello.py was changed on disk" in said and "overlaps" in said
        assert "a = 0  # the user's" in other.raw_output["output"] and "x = 2" in other.raw_output["output"]
        assert "Note:" not in other.raw_output["output"]
        assert "hello.py was changed on disk" in backend.client.text("agent_thought_chunk")[thoughts_before:]

        by_path = {f.path: f for f in (await changeset(backend, sid)).files}
        assert by_path["hello.py"].conflict is not None and "overlaps" in by_path["hello.py"].conflict
        assert by_path["other.py"].conflict is None
        result = await apply_all(backend, sid)
        assert [c.path for c in result.conflicts] == ["hello.py"]
        [waiting] = result.changeset.files
        assert waiting.path == "hello.py" and waiting.conflict
    assert (root / "hello.py").read_text() == mine
    assert (root / "other.py").read_text() == "a = 0  # the user's\n\n\n\n\nx = 2\n"


async def test_a_plan_mode_turn_after_a_user_edit_reads_todays_file(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from tests.support.plan_script import done, executor, planner, replanner, report

    root = hello_repo(tmp_path)
    script = write_script(
        [
            calls(read("hello.py")),
            say("It prints hello."),
            planner("Let me look first.", tool_calls=[read("hello.py")]),
            planner("Here is the plan:\n1. Make hello.py greet arbor"),
            executor(tool_calls=[edit("hello.py", 'print("hello")', 'print("hello, arbor")')]),
            executor(report("done", "hello.py greets arbor")),
            replanner(done("hello.py greets arbor now.")),
        ]
    )
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        session = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
        sid = session.session_id
        await turn(backend, sid, "What does hello.py print?")
        (root / "hello.py").write_text(HELLO + 'print("world")\n')
        await backend.conn.set_session_mode(session_id=sid, mode_id="plan")
        planned, edited = await turn(backend, sid, "Make it greet arbor")
        assert 'print("world")' in planned.raw_output["output"]
        assert edited.status == "completed"
        result = await apply_all(backend, sid)
        assert result.conflicts == [] and result.batch is not None
    assert (root / "hello.py").read_text() == ARBOR + 'print("world")\n'


async def test_a_roll_back_reaches_the_pending_edits_of_every_session_of_the_workspace(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    root = hello_repo(tmp_path)
    # Each session replays the script from its top: the same edit, made on the file as each finds it.
    script = write_script([calls(edit("hello.py", 'print("hello', 'print("hello, arbor')), say("Done.")])
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, REVIEWER) as backend:
        first = (await backend.conn.new_session(cwd=str(root), mcp_servers=[])).session_id
        second = (await backend.conn.new_session(cwd=str(root), mcp_servers=[])).session_id
        await turn(backend, first)
        assert (await apply_all(backend, first)).batch is not None
        await turn(backend, second)  # made on the applied file: print("hello, arbor, arbor")
        [pending] = (await changeset(backend, second)).files
        assert pending.conflict is None

        await backend.conn.ext_method(rv.ROLLBACK, {"cwd": str(root)})
        # The second session's edit was made on what the batch wrote, on the line the roll back restores.
        [pending] = (await changeset(backend, second)).files
        assert pending.conflict is not None and "hello.py was changed on disk" in pending.conflict
    assert (root / "hello.py").read_text() == HELLO
