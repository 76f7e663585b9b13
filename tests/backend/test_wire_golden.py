"""The ACP traffic of scripted sessions over a real ``arbor acp``, message by message, against golden files
(tests/golden/): the handshake, a ReAct turn that edits files with its updates, tree events, context and
usage reports, the review from change set to Roll back, a plan-mode turn's plan, and a foreign agent's
shadow session. What may differ between runs is normalised as tests/support/wire.py lists; anything else
that changes fails, with a diff. ``ARBOR_UPDATE_GOLDEN=1`` rewrites the files for a change that is meant.

The methods and capabilities are spelled as on the wire, not imported from ``ide.protocol``: the files pin
the wire, whatever the Python names become."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ClientCapabilities

from tests.support.acp_client import acp_backend
from tests.support.plan_script import two_task_script
from tests.support.wire import (
    UPDATE_GOLDEN,
    Normaliser,
    WireTap,
    at_fixed_length,
    check_golden,
    golden_lines,
)

WINDOW = ClientCapabilities(field_meta={"arbor": {"review": True, "reviewHunks": True, "tree": True}})
"""What the window asks for, but the index's notifications: those follow the file watcher's clock."""

TURN = [
    {
        "thinking": "The greeting lives in pkg/greet.py; a farewell can go beside it.",
        "content": "I'll change the greeting and add a farewell.",
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
        ],
    },
    {"content": "Changed the greeting and added `bye`."},
]


def _normaliser(tmp_path: Path, workspace: Path) -> Normaliser:
    normaliser = Normaliser()
    normaliser.path(workspace, "<workspace>")
    normaliser.path(tmp_path, "<tmp>")
    return normaliser


async def test_a_react_turn_and_its_review_from_changeset_to_rollback(
    tmp_path: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    workspace = at_fixed_length(git_workspace)
    tap = WireTap()
    env = {"ARBOR_MODEL": f"scripted:{write_script(TURN)}"}
    async with acp_backend(env, WINDOW, tap=tap) as backend:
        conn = backend.conn
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        answer = await conn.prompt(session_id=sid, prompt=[text_block("Make it friendlier")])
        assert answer.stop_reason == "end_turn"
        view = await conn.ext_method("arbor/review/changeset", {"session_id": sid})
        [greet] = [f for f in view["files"] if f["path"] == "pkg/greet.py"]
        await conn.ext_method(
            "arbor/review/decide", {"session_id": sid, "decision": "rejected", "paths": ["pkg/farewell.py"]}
        )
        await conn.ext_method(
            "arbor/review/decide",
            {"session_id": sid, "decision": "accepted", "hunk_ids": [h["id"] for h in greet["hunks"]]},
        )
        applied = await conn.ext_method("arbor/review/apply", {"session_id": sid})
        assert applied["batch"]["paths"] == ["pkg/greet.py"]
        await conn.ext_method("arbor/review/history", {"cwd": str(workspace)})
        await conn.ext_method("arbor/review/rollback", {"cwd": str(workspace)})
    check_golden("react_turn_review", golden_lines(tap.messages, _normaliser(tmp_path, workspace)))


async def test_a_plan_turn_sends_its_plan_as_it_goes(
    tmp_path: Path, git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    workspace = at_fixed_length(git_workspace)
    tap = WireTap()
    env = {"ARBOR_MODEL": f"scripted:{write_script(two_task_script())}"}
    async with acp_backend(env, WINDOW, tap=tap) as backend:
        conn = backend.conn
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        answer = await conn.prompt(session_id=sid, prompt=[text_block("Say hi, not hello")])
        assert answer.stop_reason == "end_turn"
    check_golden("plan_turn", golden_lines(tap.messages, _normaliser(tmp_path, workspace)))


async def test_a_foreign_agents_shadow_session_from_open_to_close(
    tmp_path: Path, git_workspace: Path
) -> None:
    workspace = at_fixed_length(git_workspace)
    tap = WireTap()
    normaliser = _normaliser(tmp_path, workspace)
    async with acp_backend(capabilities=WINDOW, tap=tap) as backend:
        conn = backend.conn
        shadow = await conn.ext_method("arbor/external/shadow", {"cwd": str(workspace), "agent": "qwen"})
        sid, root = shadow["session_id"], Path(shadow["cwd"])
        normaliser.path(root, "<shadow>")
        await conn.ext_method(
            "arbor/external/turn_start", {"session_id": sid, "prompt": "Make it friendlier"}
        )
        # One write through fs/*, one as the agent's shell command would make it.
        greet = str(root / "pkg" / "greet.py")
        hi = 'def greet(name):\n    return f"Hi, {name}!"\n'
        await conn.ext_method("arbor/external/write", {"session_id": sid, "path": greet, "content": hi})
        await conn.ext_method("arbor/external/read", {"session_id": sid, "path": greet})
        (root / "made_by_shell.py").write_text("print(1)\n")
        await conn.ext_method("arbor/external/capture", {"session_id": sid})
        await conn.ext_method("arbor/external/close", {"session_id": sid})
    assert not root.exists()
    check_golden("external_shadow", golden_lines(tap.messages, normaliser))


def test_the_normaliser_replaces_what_varies_by_nature_and_keeps_the_rest(tmp_path: Path) -> None:
    session, run = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
    commit = "89abcdef" * 5
    normaliser = Normaliser()
    normaliser.path(tmp_path / "ws", "<workspace>")
    normaliser.path(tmp_path, "<tmp>")
    message = {
        "sessionId": session,
        "message": f"Subject\n\nArbor-Session: {session}\nArbor-Batch: {run}\n",
        "commit": commit,
        "at": 1796183750.5,
        "created_at": "2026-12-02T03:55:50.593237+00:00",
        "updated_at": "yesterday",
        "latency_ms": 2.5,
        "wall_s": "slow",
        "id": "1515be688d801163",
        "tokens": 197,
        "paths": [str(tmp_path / "ws" / "a.py"), str(tmp_path / "data"), f"scripted:{tmp_path}/s.jsonl"],
        "by": {run: session},
    }
    # Numbered in the order the sorted keys meet them: "by" first, its key before its value.
    assert normaliser.message(message) == {
        "sessionId": "<uuid-2>",
        "message": "Subject\n\nArbor-Session: <uuid-2>\nArbor-Batch: <uuid-1>\n",
        "commit": "<commit-1>",
        "at": "<epoch>",
        "created_at": "<iso-time>",
        "updated_at": "yesterday",
        "latency_ms": "<duration>",
        "wall_s": "slow",
        "id": "1515be688d801163",
        "tokens": 197,
        "paths": ["<workspace>/a.py", "<tmp>/data", "scripted:<tmp>/s.jsonl"],
        "by": {"<uuid-1>": "<uuid-2>"},
    }


def test_tree_events_are_listed_apart_and_a_changed_field_fails_with_a_diff_naming_it(tmp_path: Path) -> None:
    def tree(seq: int) -> tuple[str, dict[str, Any]]:
        events = [{"kind": "node_added", "seq": seq}]
        return "agent", {
            "jsonrpc": "2.0",
            "method": "_arbor/tree",
            "params": {"session_id": "s", "events": events},
        }

    prompt = ("client", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}})
    answer = ("agent", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn", "tokens": 10}})
    lines = golden_lines([prompt, tree(1), tree(2), answer], Normaliser())
    assert [next(iter(set(json.loads(line)) - {"from", "session_id"})) for line in lines] == [
        "message",
        "message",
        "tree_event",
        "tree_event",
    ]
    with pytest.raises(AssertionError, match="outside a prompt turn"):
        golden_lines([prompt, answer, tree(3)], Normaliser())

    (tmp_path / "sample.jsonl").write_text("".join(line + "\n" for line in lines))
    if not UPDATE_GOLDEN:  # which would write this run's lines over the file instead of comparing
        check_golden("sample", lines, tmp_path)
        answer[1]["result"]["tokens"] = 11
        changed = golden_lines([prompt, tree(1), tree(2), answer], Normaliser())
        with pytest.raises(AssertionError) as caught:
            check_golden("sample", changed, tmp_path)
        assert "golden #2, this run #2, agent: answer to 2:" in str(caught.value)
        assert '-    "tokens": 10\n+    "tokens": 11' in str(caught.value)
