"""Steering from the tree over a real ``arbor acp``: continue a ReAct or plan run from a middle node (the
model is given exactly that node's trajectory and the hint, the run starts from that node's changes and says
where it came from), also after a restart; use a node's branch (Apply holds only what it shows); and
steering a run that is not a live search is refused in words."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import ClientCapabilities

from ide.client import agentconn
from ide.protocol import META_KEY
from ide.protocol import review as rv
from ide.protocol import steer as st
from ide.protocol.tree import ForkOrigin
from ide.search.steer import HINT_PREFIX
from tests.support.acp_client import acp_backend, tree_events
from tests.support.fake_openai import FakeOpenAI
from tests.support.git import git
from tests.support.plan_script import TASK_1, TASK_2, done, report
from tests.support.steering import (
    FAREWELL,
    GREET_EDIT,
    README_EDIT,
    calls,
    conversation,
    first_events,
    fork,
    node,
    openai_env,
    run_list,
)

pytestmark = pytest.mark.timeout(120)

WINDOW = ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}})
TASK = "Make it friendlier"
REACT_RUN = [
    calls(("edit_file", GREET_EDIT), content="I'll change the greeting first."),
    calls(("create_file", FAREWELL), content="Now a farewell."),
    {"content": "Done: the greeting is friendlier and there is a farewell."},
]
HINT = "Leave the farewell out; say hi in the README instead."


def first_action(run: st.RunSummary) -> st.NodeSummary:
    return next(n for n in run.nodes if n.kind == "action")


def changed(view: rv.ChangeSetView) -> list[str]:
    return sorted(f.path for f in view.files)


async def pending(conn: Any, session_id: str) -> rv.ChangeSetView:
    return await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=session_id))


async def test_a_react_run_goes_on_from_its_middle_node_after_a_restart(git_workspace: Path) -> None:
    with FakeOpenAI(REACT_RUN) as first:
        async with acp_backend(openai_env(first), WINDOW) as backend:
            sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
            await backend.conn.prompt(session_id=sid, prompt=[text_block(TASK)])
            [origin] = await run_list(backend.conn, sid)
    continuation = [calls(("edit_file", README_EDIT), content="Updating the README."), {"content": "Done."}]
    with FakeOpenAI(continuation) as second:
        async with acp_backend(openai_env(second), WINDOW) as backend:
            await backend.conn.load_session(cwd=str(git_workspace), session_id=sid, mcp_servers=[])
            [run] = await run_list(backend.conn, sid, origin.run_id)
            edit = first_action(run)  # the greeting's edit, before the farewell
            assert edit.changes and not node(run, "root").changes
            armed = await fork(backend.conn, sid, run.run_id, edit.id)
            assert (armed.mode, armed.files) == ("react", ["pkg/greet.py"])
            assert armed.note.startswith("The pending changes to 2 file(s) are set aside")
            assert armed.path == ["n1", "n2", edit.id]
            answer = await backend.conn.prompt(session_id=sid, prompt=[text_block(HINT)])
            assert answer.stop_reason == "end_turn"
            view = await pending(backend.conn, sid)
            replayed, started = first_events(backend.client)  # the origin's, replayed on load
            listed = await run_list(backend.conn, sid)
            await backend.conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
            applied = await agentconn.call(backend.conn, rv.APPLY, rv.ApplyParams(session_id=sid))
    # Exactly the node's trajectory, then the hint: the task, the first step, its edit and what it returned.
    asked = conversation(second.bodies[0])
    assert asked[0] == ("user", TASK)
    assert asked[1] == ("assistant", "I'll change the greeting first.")
    assert (
        asked[2][0] == "assistant"
        and asked[2][1].startswith("edit_file(")
        and '"new_text": "Hi"' in asked[2][1]
    )
    assert asked[3][0] == "tool" and "greet.py" in asked[3][1]
    assert asked[4] == ("user", f"{HINT_PREFIX}\n{HINT}") and len(asked) == 5
    assert "farewell" not in str(asked[:-1])  # (the memory's system message may recall the first run)
    # It started from the node's changes (the greeting, not the farewell) and added its own.
    assert changed(view) == ["README.md", "pkg/greet.py"]
    assert replayed.forked_from is None
    assert started.forked_from == ForkOrigin(run_id=origin.run_id, node_id=edit.id)
    assert listed[0].run_id == origin.run_id and listed[1].forked_from == started.forked_from
    # Apply holds only what the review showed.
    assert applied.batch is not None and applied.conflicts == []
    assert sorted(git(git_workspace, "show", "--name-only", "--format=", "HEAD").split()) == [
        "README.md",
        "pkg/greet.py",
    ]
    assert not (git_workspace / "pkg" / "farewell.py").exists()
    assert "Hi, " in (git_workspace / "pkg" / "greet.py").read_text()


async def test_use_this_branch_puts_a_nodes_changes_in_review_after_asking_about_decisions(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(REACT_RUN)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WINDOW) as backend:
        conn = backend.conn
        sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block(TASK)])
        [run] = await run_list(conn, sid)
        [run] = await run_list(conn, sid, run.run_id)
        edit = first_action(run)
        await conn.ext_method(
            rv.DECIDE, {"session_id": sid, "decision": "rejected", "paths": ["pkg/farewell.py"]}
        )
        asked = st.AdoptParams(session_id=sid, run_id=run.run_id, node_id=edit.id)
        refused = await agentconn.call(conn, st.ADOPT, asked)
        assert (refused.adopted, refused.decisions, refused.changeset) == (False, 1, None)
        assert changed(await pending(conn, sid)) == ["pkg/farewell.py", "pkg/greet.py"]  # nothing changed
        adopted = await agentconn.call(conn, st.ADOPT, asked.model_copy(update={"replace": True}))
        assert adopted.adopted and adopted.changeset is not None
        assert changed(adopted.changeset) == ["pkg/greet.py"]
        assert all(h.decision == "pending" for f in adopted.changeset.files for h in f.hunks)
        await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
        applied = await agentconn.call(conn, rv.APPLY, rv.ApplyParams(session_id=sid))
        assert applied.batch is not None and applied.batch.paths == ["pkg/greet.py"]
        steered = await agentconn.call(
            conn, st.STEER, st.SteerParams(session_id=sid, run_id=run.run_id, node_id=edit.id, action="prune")
        )
        assert not steered.accepted and "not running" in steered.message
        with pytest.raises(RequestError) as caught:
            await fork(conn, sid, run.run_id, "n999")
        assert caught.value.code == -32602 and "has no node n999" in str(caught.value.data)
    assert not (git_workspace / "pkg" / "farewell.py").exists()


PLAN_RUN = [
    calls(("read_file", {"path": "pkg/greet.py"}), content="Let me look first."),
    {"content": f"Here is the plan:\n1. {TASK_1}\n2. {TASK_2}"},
    calls(("edit_file", GREET_EDIT)),
    {"content": "Changed the greeting. " + report("done", "greet says Hi now")},
    calls(("edit_file", README_EDIT)),
    {"content": report("done", "README says hi")},
    {"content": done("greet now says Hi and the README says so.")},
]
CHANGELOG = {"path": "CHANGELOG.md", "content": "# Changelog\n\n- greet says Hi\n"}
PLAN_HINT = "Leave the README alone; add a CHANGELOG.md instead."


async def test_a_plan_run_replans_from_a_finished_task_with_what_was_done_and_the_hint(
    git_workspace: Path,
) -> None:
    continuation = [
        {"content": "1. Add CHANGELOG.md"},
        calls(("create_file", CHANGELOG)),
        {"content": report("done", "added the changelog")},
        {"content": done("Added CHANGELOG.md.")},
    ]
    with FakeOpenAI([*PLAN_RUN, *continuation]) as server:
        async with acp_backend(openai_env(server), WINDOW) as backend:
            conn = backend.conn
            sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="plan")
            await conn.prompt(session_id=sid, prompt=[text_block("Say hi instead of hello")])
            asked_before = len(server.bodies)
            [origin] = await run_list(conn, sid)
            [run] = await run_list(conn, sid, origin.run_id)
            first_task = node(run, "step", TASK_1)
            armed = await fork(conn, sid, run.run_id, first_task.id)
            assert armed.mode == "plan" and armed.files == ["pkg/greet.py"]
            answer = await conn.prompt(session_id=sid, prompt=[text_block(PLAN_HINT)])
            assert answer.stop_reason == "end_turn"
            view = await pending(conn, sid)
            starts = first_events(backend.client)
    asked = conversation(server.bodies[asked_before])
    text = "\n".join(f"{role}: {said}" for role, said in asked)
    assert asked[0] == ("user", "Say hi instead of hello")
    assert f"Task 1: {TASK_1}" in text and '"new_text": "Hi"' in text and "greet says Hi now" in text
    assert asked[-1] == ("user", f"{HINT_PREFIX}\n{PLAN_HINT}")
    assert "Says hi." not in text and "README says hi" not in text  # the second task's work: after the node
    assert changed(view) == ["CHANGELOG.md", "pkg/greet.py"]
    assert starts[-1].forked_from == ForkOrigin(run_id=origin.run_id, node_id=first_task.id)


@pytest.mark.parametrize(("mode", "role"), [("react", "react"), ("lats", "lats.expansion")])
async def test_steer_reaches_only_a_live_tree_search(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path], mode: str, role: str
) -> None:
    # Every model call hangs until the cancel (LATS expands several candidates at once).
    script = write_script([{"role": role, "latency_ms": 60000, "content": "late"}] * 8)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WINDOW) as backend:
        conn, client = backend.conn, backend.client
        sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id=mode)
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))
        await client.wait_until(lambda: bool(first_events(client)), timeout=30)
        [started] = first_events(client)
        assert started.node is not None
        ask = st.SteerParams(session_id=sid, run_id=started.run_id, node_id=started.node.id, action="expand")
        steered = await agentconn.call(conn, st.STEER, ask)
        other = await agentconn.call(conn, st.STEER, ask.model_copy(update={"run_id": "f" * 32}))
        await conn.cancel(session_id=sid)
        await asyncio.wait_for(turn, 30)
    if mode == "lats":
        assert steered.accepted, steered.message
    else:
        assert not steered.accepted
        assert steered.message.endswith(
            "is a react run: only a LATS or Tree-of-Thoughts search can be pruned or expanded."
        )
    assert not other.accepted and "is not running" in other.message


async def test_a_run_sent_as_events_is_continued_from_the_sessions_own_changes(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(REACT_RUN)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WINDOW) as backend:
        sid = (await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        await backend.conn.prompt(session_id=sid, prompt=[text_block(TASK)])
        events = tree_events(backend.client)  # as a .arbor-tree.jsonl file holds them
        [origin] = first_events(backend.client)
    # Another backend, another session: the run is known only by its events.
    script = write_script([{"content": "Went on from the file's run."}])
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, WINDOW) as backend:
        conn = backend.conn
        other = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
        params = st.ForkParams(session_id=other, run_id=origin.run_id, node_id="n3", events=events)
        armed = await agentconn.call(conn, st.FORK, params)
        assert (armed.mode, armed.files, armed.path) == ("react", [], ["n1", "n2", "n3"])
        assert armed.note.startswith("The run came from a file")
        answer = await conn.prompt(session_id=other, prompt=[text_block(HINT)])
        assert answer.stop_reason == "end_turn"
        assert first_events(backend.client)[-1].forked_from == ForkOrigin(run_id=origin.run_id, node_id="n3")
        assert changed(await pending(conn, other)) == []  # its own (none), not the file run's
