"""Session modes over real subprocess ACP: auto picks an architecture, tree searches stream their trees."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities

from ide.protocol import META_KEY
from ide.protocol.review import CHANGESET_NOTIFICATION
from ide.protocol.tree import SearchTree
from tests.support.acp_client import WANTS_TREE, acp_backend, tree_events
from tests.support.lats_script import LATS_ENV
from tests.support.react_script import READ_THEN_ANSWER


def orchestrator(architecture: str, reason: str) -> dict[str, Any]:
    return {"role": "orchestrator", "content": json.dumps({"architecture": architecture, "reason": reason})}


async def test_auto_mode_lets_the_orchestrator_pick_react_and_says_so(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script([orchestrator("react", "a question about one function"), *READ_THEN_ANSWER])
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "auto"}
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "auto"
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What does greet return?")]
        )
    assert response.stop_reason == "end_turn"
    assert "Auto mode: react — a question about one function" in backend.client.text("agent_thought_chunk")
    assert "Hello, NAME!" in backend.client.text()
    meta = response.field_meta["arbor"]
    assert meta["architecture"] == "react"
    assert meta["usage"]["orchestrator"]["calls"] == 1
    tree = SearchTree(tree_events(backend.client))
    assert tree.architecture == "react" and tree.finished


async def test_auto_mode_falls_back_to_react_when_the_orchestrator_answer_is_unusable(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    lines = [
        {"role": "orchestrator", "content": "LATS, definitely"},
        {"role": "orchestrator", "content": '{"architecture": "mcts"}'},
        *READ_THEN_ANSWER,
    ]
    script = write_script(lines)
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "auto"}
    async with acp_backend(env) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What does greet return?")]
        )
    assert response.stop_reason == "end_turn"
    thoughts = backend.client.text("agent_thought_chunk")
    assert "Auto mode: react — the orchestrator's answer was unusable" in thoughts
    assert "architecture" in thoughts  # names the field that was wrong after the repair
    assert "Hello, NAME!" in backend.client.text()


async def test_plan_mode_over_acp_shows_the_plan_offers_the_edits_for_review_and_remembers_the_turn(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from tests.support.plan_script import GREET, two_task_script

    lines = [
        *two_task_script(),
        {"content": "You asked me to change the greeting; it now says Hi."},  # a later ReAct turn
    ]
    script = write_script(lines)
    caps = ClientCapabilities(field_meta={META_KEY: {"tree": True, "review": True}})
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, caps) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("Say Hi instead of Hello, README too")]
        )
        assert response.stop_reason == "end_turn"
        plans = [u for _, u in backend.client.updates if u.session_update == "plan"]
        assert [e.status for e in plans[-1].entries] == ["completed", "completed"]
        assert "greet now says Hi" in backend.client.text()
        changesets = [p for m, p in backend.client.notifications if m == CHANGESET_NOTIFICATION]
        assert [f["path"] for f in changesets[-1]["files"]] == ["README.md", "pkg/greet.py"]
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREET  # nothing written before review
        tree = SearchTree(tree_events(backend.client))
        assert tree.architecture == "plan" and tree.finished
        assert response.field_meta["arbor"]["figures"]["tasks"] == 2

        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="react")
        # A ReAct turn after it runs on the same conversation thread, which now holds the plan turn.
        again = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("What did I ask?")]
        )
    assert again.stop_reason == "end_turn"
    assert "it now says Hi" in backend.client.text()


async def test_lats_mode_streams_its_tree_offers_the_best_branch_and_serves_branch_diffs(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from acp import RequestError

    from ide.protocol.review import ChangeSetView
    from ide.protocol.tree import BRANCH_DIFF
    from tests.support.lats_script import EDIT_WINS, GREETING

    script = write_script(EDIT_WINS)
    env = {"ARBOR_MODEL": f"scripted:{script}", **LATS_ENV}
    caps = ClientCapabilities(field_meta={META_KEY: {"tree": True, "review": True}})
    async with acp_backend(env, caps) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="lats")
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("Make greet say Hi")]
        )
        assert response.stop_reason == "end_turn"
        assert backend.client.text() == "Changed the greeting to Hi."
        assert "Iteration 1/" in backend.client.text("agent_thought_chunk")
        figures = response.field_meta["arbor"]["figures"]
        assert figures["solution_found"] is True and figures["phases"]["expansion"]["calls"] == 4

        events = tree_events(backend.client)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))  # live flushes, in order
        tree = SearchTree(events)
        assert tree.architecture == "lats" and tree.finished
        assert tree.best_path == ["n1", "n2", "n4"] and tree.nodes["n4"].status == "solution"

        # The best branch is what the user reviews; nothing is on disk yet.
        changesets = [p for m, p in backend.client.notifications if m == CHANGESET_NOTIFICATION]
        assert [f["path"] for f in changesets[-1]["files"]] == ["pkg/greet.py"]
        assert (git_workspace / "pkg" / "greet.py").read_text() == GREETING

        # Any node's branch can be looked at: the read-only sibling proposes nothing.
        edited = await backend.conn.ext_method(
            BRANCH_DIFF,
            {"session_id": session.session_id, "changeset_id": tree.nodes["n2"].changeset_id},
        )
        view = ChangeSetView.model_validate(edited)
        assert [f.path for f in view.files] == ["pkg/greet.py"]
        assert '+    return f"Hi, {name}!"' in view.files[0].hunks[0].lines
        sibling = await backend.conn.ext_method(
            BRANCH_DIFF,
            {"session_id": session.session_id, "changeset_id": tree.nodes["n3"].changeset_id},
        )
        assert ChangeSetView.model_validate(sibling).files == []
        with pytest.raises(RequestError) as refused:
            await backend.conn.ext_method(
                BRANCH_DIFF, {"session_id": session.session_id, "changeset_id": "nope"}
            )
        assert "not held by this backend" in str(refused.value.data)


async def test_stopping_a_lats_run_keeps_its_tree_and_offers_the_best_branch_so_far(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from tests.support.lats_script import EDIT_HI, READ, evaluate

    slow = {"latency_ms": 60000}
    script = write_script([EDIT_HI, READ, evaluate(6), evaluate(3), {**READ, **slow}, {**READ, **slow}])
    env = {"ARBOR_MODEL": f"scripted:{script}", **LATS_ENV}
    caps = ClientCapabilities(field_meta={META_KEY: {"tree": True, "review": True}})
    async with acp_backend(env, caps) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.set_session_mode(session_id=session.session_id, mode_id="lats")
        turn = asyncio.ensure_future(
            backend.conn.prompt(session_id=session.session_id, prompt=[text_block("Make greet say Hi")])
        )
        await backend.client.wait_until(lambda: "Iteration 2/" in backend.client.text("agent_thought_chunk"))
        await backend.conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(turn, timeout=10)
        assert response.stop_reason == "cancelled"
        tree = SearchTree(tree_events(backend.client))
        assert tree.finished and tree.figures["stop_reason"] == "cancelled"
        assert tree.best_path == ["n1", "n2"]  # the edit scored 6, the read 3
        changesets = [p for m, p in backend.client.notifications if m == CHANGESET_NOTIFICATION]
        assert [f["path"] for f in changesets[-1]["files"]] == ["pkg/greet.py"]


async def test_tot_mode_streams_the_synthesis_once_and_records_the_thought_tree(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from tests.support.tot_script import depth_lines, plan, synthesise

    answer = "Change `Hello` to `Hi` in pkg/greet.py:2."
    script = write_script(
        [
            plan("Read greet", "Guess the cause"),
            *depth_lines((8, 9, False), (4, 3, False)),
            synthesise(answer),
        ]
    )
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "tot", "ARBOR_TOT_MAX_DEPTH": "1"}
    async with acp_backend(env, WANTS_TREE) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("Why does greet say Hello?")]
        )
    assert response.stop_reason == "end_turn"
    assert backend.client.text() == answer  # streamed by the synthesizer, not repeated by the session
    tree = SearchTree(tree_events(backend.client))
    assert tree.architecture == "tot" and tree.finished
    assert tree.nodes[tree.best_path[-1]].kind == "synthesis"
    assert response.field_meta["arbor"]["figures"]["synthesis"] == {"mode": "threshold", "nodes": ["n2"]}
