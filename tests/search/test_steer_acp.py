"""Steering a LATS run over a real ``arbor acp`` (issue 48): prune and expand while it runs
(``_arbor/tree/steer`` from the client while the model server holds an evaluation), then continue from a
middle node with a hint (``_arbor/tree/fork`` and the next prompt): the model is given that node's path and
the hint, the run starts from the node's branch, records where it came from, and Apply holds only what the
review showed. The same continuation of a Tree-of-Thoughts run from a middle thought."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities

from ide.client import agentconn
from ide.protocol import META_KEY
from ide.protocol import review as rv
from ide.protocol import steer as st
from ide.protocol.tree import ForkOrigin, SteerAction
from ide.search.steer import HINT_PREFIX
from tests.support.acp_client import acp_backend, tree_events
from tests.support.fake_openai import FakeOpenAI
from tests.support.git import git
from tests.support.steering import (
    FAREWELL,
    GREET_EDIT,
    README_EDIT,
    ByRole,
    calls,
    conversation,
    first_events,
    fork,
    openai_env,
)
from tests.support.tot_script import analyze, coordinate, criticise, plan, research, synthesise

pytestmark = pytest.mark.timeout(120)

WINDOW = ClientCapabilities(field_meta={META_KEY: {"review": True, "tree": True}})
WAIT_S = 30.0
TASK = "Say hi instead of hello"
HINT = "Say hi in the README too."


def verdict(score: float, *, solution: bool = False) -> dict[str, Any]:
    return {"content": json.dumps({"score": score, "reflection": "ok", "is_solution": solution})}


LATS_RUN = [
    calls(("read_file", {"path": "pkg/greet.py"}), content="I read it."),  # n2
    verdict(8),  # held: the user asks to expand the root
    calls(("edit_file", GREET_EDIT), content="I edit it."),  # n3, the root's second child
    verdict(6),  # held: the user prunes n2, which UCT would take next (8 > 6)
    calls(("list_dir", {"path": "pkg"}), content="I list."),  # n4 under n3
    verdict(5),
]
CONTINUATION = [
    calls(("edit_file", README_EDIT), content="The README too."),  # under the copy of n3, the new root
    verdict(7),
    {"content": "Done: greet and the README say hi."},
    verdict(9, solution=True),
]


class Holds:
    """The model server holds the ``nth`` evaluation requests until the test lets each go on."""

    def __init__(self, *nths: int) -> None:
        self.reached = {nth: threading.Event() for nth in nths}
        self.release = {nth: threading.Event() for nth in nths}
        self.seen = 0

    def side(self, body: dict[str, Any]) -> None:
        system = str((body.get("messages") or [{}])[0].get("content") or "")
        if system.startswith("You score one step"):
            self.seen += 1
            if self.seen in self.reached:
                self.reached[self.seen].set()
                assert self.release[self.seen].wait(WAIT_S), "the test never released the evaluation"
        return None

    async def at(self, nth: int) -> None:
        assert await asyncio.to_thread(self.reached[nth].wait, WAIT_S), f"evaluation {nth} never came"


async def test_a_lats_run_steered_live_then_continued_from_a_middle_node(git_workspace: Path) -> None:
    holds = Holds(1, 2)
    env = {
        "ARBOR_LATS_EXPANSION_WIDTH": "1",
        "ARBOR_LATS_BEAM_WIDTH": "1",
        "ARBOR_LATS_MAX_ITERATIONS": "3",
    }
    with FakeOpenAI([*LATS_RUN, *CONTINUATION], side=holds.side) as server:
        async with acp_backend({**openai_env(server), **env}, WINDOW) as backend:
            conn = backend.conn
            sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id="lats")
            turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(TASK)]))

            async def steer(node_id: str, action: SteerAction) -> st.SteerResult:
                [run] = (await agentconn.call(conn, st.RUNS, st.RunsParams(session_id=sid))).runs
                asked = st.SteerParams(session_id=sid, run_id=run.run_id, node_id=node_id, action=action)
                return await agentconn.call(conn, st.STEER, asked)

            await holds.at(1)
            expanded = await steer("n1", "expand")
            holds.release[1].set()
            await holds.at(2)
            pruned = await steer("n2", "prune")
            holds.release[2].set()
            assert (await asyncio.wait_for(turn, WAIT_S)).stop_reason == "max_turn_requests"
            live = tree_events(backend.client)
            asked_before = len(server.bodies)
            [origin] = (await agentconn.call(conn, st.RUNS, st.RunsParams(session_id=sid))).runs
            armed = await fork(conn, sid, origin.run_id, "n3")
            answer = await conn.prompt(session_id=sid, prompt=[text_block(HINT)])
            view = await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=sid))
            starts = first_events(backend.client)
            await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
            applied = await agentconn.call(conn, rv.APPLY, rv.ApplyParams(session_id=sid))

    # Live: the root is expanded again at once (n3), and after n2's prune n3's branch is taken, not n2's.
    assert expanded.accepted and pruned.accepted
    steers = [(e.seq, e.node_id, e.changes.get("steer")) for e in live if e.changes.get("steer")]
    assert [(node_id, action) for _seq, node_id, action in steers] == [("n1", "expand"), ("n2", "prune")]
    added = {e.node.id: (e.seq, e.node.parent) for e in live if e.kind == "node_added" and e.node}
    assert added["n3"][1] == "n1" and added["n3"][0] > steers[0][0]
    assert added["n4"][1] == "n3" and added["n4"][0] > steers[1][0]
    assert not [node_id for node_id, (_seq, parent) in added.items() if parent == "n2"]

    # Continued from n3 (the edit, with n4 below it): exactly its path, then the hint.
    assert armed.mode == "lats" and armed.files == ["pkg/greet.py"] and armed.path == ["n1", "n3"]
    assert answer.stop_reason == "end_turn"
    asked = conversation(server.bodies[asked_before])
    assert asked[0] == ("user", TASK)
    assert asked[1][0] == "assistant" and "edit_file(" in asked[1][1] and '"new_text": "Hi"' in asked[1][1]
    assert asked[2][0] == "tool"
    assert asked[3] == ("user", f"{HINT_PREFIX}\n{HINT}") and len(asked) == 4
    assert starts[-1].forked_from == ForkOrigin(run_id=origin.run_id, node_id="n3")
    # From n3's branch (the greeting) plus its own (the README); Apply holds only that.
    assert sorted(f.path for f in view.files) == ["README.md", "pkg/greet.py"]
    assert applied.batch is not None and sorted(applied.batch.paths) == ["README.md", "pkg/greet.py"]
    assert sorted(git(git_workspace, "show", "--name-only", "--format=", "HEAD").split()) == [
        "README.md",
        "pkg/greet.py",
    ]


TOT_TASK = "Explain how the greeting is built"
TOT_HINT = "Check the README too."
TOT_RUN = [
    plan("Read greet", "Guess"),
    research("greet.py:2 builds it with an f-string."),
    research("greet.py:2 builds it with an f-string."),
    analyze(8),
    analyze(8),
    criticise(8),
    criticise(8),
    coordinate("n2"),
    plan("Read tests"),  # n4, under n2
    research("No test covers it."),
    analyze(7),
    criticise(7),
    synthesise("It is an f-string in greet.py:2."),
]
TOT_CONTINUATION = [
    plan("Read README"),
    research("README.md:3 says hello."),
    analyze(6),
    criticise(6),
    coordinate(),
    synthesise("An f-string in greet.py:2; the README says hello."),
]


async def test_a_tot_run_continued_from_a_middle_thought(git_workspace: Path) -> None:
    react = [
        calls(("edit_file", GREET_EDIT), content="Changing the greeting."),
        {"content": "Done: it says Hi."},
        calls(("create_file", FAREWELL), content="Adding a farewell."),
        {"content": "Done: a farewell."},
    ]
    tot = ByRole([*TOT_RUN, *TOT_CONTINUATION])
    with FakeOpenAI(react, side=tot) as server:
        async with acp_backend({**openai_env(server), "ARBOR_TOT_MAX_DEPTH": "2"}, WINDOW) as backend:
            conn = backend.conn
            sid = (await conn.new_session(cwd=str(git_workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("Say hi instead of hello")])  # the greeting
            await conn.set_session_mode(session_id=sid, mode_id="tot")
            await conn.prompt(session_id=sid, prompt=[text_block(TOT_TASK)])  # it reads the greeting's branch
            await conn.set_session_mode(session_id=sid, mode_id="react")
            await conn.prompt(session_id=sid, prompt=[text_block("Add a farewell")])  # pending: + farewell
            origin = (await agentconn.call(conn, st.RUNS, st.RunsParams(session_id=sid))).runs[1]
            [origin] = (
                await agentconn.call(conn, st.RUNS, st.RunsParams(session_id=sid, run_id=origin.run_id))
            ).runs
            armed = await fork(conn, sid, origin.run_id, "n2")
            asked_before = len(server.bodies)
            answer = await conn.prompt(session_id=sid, prompt=[text_block(TOT_HINT)])
            view = await agentconn.call(conn, rv.CHANGESET, rv.ChangeSetParams(session_id=sid))
            starts = first_events(backend.client)
            await conn.ext_method(rv.DECIDE, {"session_id": sid, "decision": "accepted", "all": True})
            applied = await agentconn.call(conn, rv.APPLY, rv.ApplyParams(session_id=sid))

    # n2 ("Read greet") is a middle thought: n4 ("Read tests") was explored under it, n3 ("Guess") beside it.
    labels = {n.id: (n.label, n.parent) for n in origin.nodes}
    assert origin.architecture == "tot"
    assert labels["n2"] == ("Read greet", "n1") and labels["n3"][0] == "Guess"
    assert labels["n4"] == ("Read tests", "n2")
    # Armed from n2's branch: the greeting the ToT run read, not the farewell added since.
    assert (armed.mode, armed.files, armed.path) == ("tot", ["pkg/greet.py"], ["n1", "n2"])
    assert answer.stop_reason == "end_turn" and not any(tot.lines.values())  # both runs went as scripted
    # The continuation's first request, the planner's: the task, n2's step with its findings, the hint, and
    # the thought already explored under it — nothing of the sibling n3.
    planner = "\n".join(said for _role, said in conversation(server.bodies[asked_before]))
    assert "You are the planner" in str(server.bodies[asked_before]["messages"][0]["content"])
    assert TOT_TASK in planner
    steps = planner[planner.index("Steps that led here") : planner.index(HINT_PREFIX)]
    assert "Read greet" in steps and "f-string" in steps
    assert f"{HINT_PREFIX}\n{TOT_HINT}" in planner
    assert "Thoughts already explored from here:\n- Read tests" in planner
    assert "Guess" not in planner
    assert starts[-1].forked_from == ForkOrigin(run_id=origin.run_id, node_id="n2")
    # The change set is n2's branch (a ToT run only reads); Apply holds only what the review showed.
    assert [f.path for f in view.files] == ["pkg/greet.py"]
    assert applied.batch is not None and applied.batch.paths == ["pkg/greet.py"]
    assert git(git_workspace, "show", "--name-only", "--format=", "HEAD").split() == ["pkg/greet.py"]
    assert not (git_workspace / "pkg" / "farewell.py").exists()
