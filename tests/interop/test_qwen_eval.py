"""``arbor eval --agent`` with Qwen Code 0.24.4, a real ACP agent, against a simulated OpenAI-compatible
server that solves one task and fails another: Qwen writes the fix with its own ``write_file`` tool in the
shadow workspace, the fix is applied and checked, the question's wrong answer fails its check, and every
call Qwen made (side calls included) is counted as the server counted it."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from ide.client.agentproc import AgentChoice
from tests.support.agent_eval import (
    FIX_FILE,
    FIX_TASK,
    FIX_WORDS,
    QUESTION_TASK,
    WRONG_ANSWER,
    asked,
    evaluate,
    fixed_text,
)
from tests.support.fake_openai import FakeOpenAI
from tests.support.qwen import qwen_command

SHADOW = re.compile(r"/[^\s\"'\\]*arbor-scratch-\d+-shadow-[A-Za-z0-9_]+/workspace")
FIXED = "Fixed the boundary."
BUGGY = "    if abs_bytes <= base:"
FIX = "    if abs_bytes < base:"


class EvalScript:
    """Plays the model for Qwen Code: the fix task's file read with ``read_file`` (Qwen edits only what it
    read), fixed with ``edit`` (at the path of the shadow Qwen was given), then an answer; the question
    answered wrong; side calls answered."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = [tool["function"]["name"] for tool in body.get("tools") or []]
        if tools == ["respond_in_schema"]:
            return {"tool_calls": [{"name": "respond_in_schema", "args": {"shouldBlock": False}}]}
        if "write_file" not in tools:
            return {"content": "ok"}
        text = asked(body).replace("\\/", "/")
        if FIX_WORDS not in text:
            return {"content": WRONG_ANSWER}
        results = sum(message.get("role") == "tool" for message in body.get("messages") or [])
        found = SHADOW.search(text)
        path = f"{found.group(0) if found else '/nonexistent'}/{FIX_FILE}"
        if results == 0:
            return {"tool_calls": [{"name": "read_file", "args": {"file_path": path}}]}
        if results == 1:
            args = {"file_path": path, "old_string": BUGGY, "new_string": FIX}
            return {"tool_calls": [{"name": "edit", "args": args}]}
        return {"content": FIXED}


def test_qwen_code_is_evaluated_with_the_servers_token_count(node_peers: Path, tmp_path: Path) -> None:
    assert FIX in fixed_text(tmp_path)
    home = tmp_path / "home"  # Qwen Code stops at start when $HOME does not exist
    home.mkdir()
    with FakeOpenAI(side=EvalScript()) as server:
        qwen = AgentChoice("qwen", shlex.split(qwen_command(node_peers, "{base_url}")), {"HOME": str(home)})
        report, _ = evaluate(tmp_path / "out", [qwen], server.url, budget_tokens=1_000_000)
    runs = {run.task: run for run in report.runs}
    assert runs[FIX_TASK].status == "solved", runs[FIX_TASK].reason
    assert runs[QUESTION_TASK].status == "failed", runs[QUESTION_TASK].reason
    assert [agent.protocol for agent in report.agents] == ["acp"]
    assert sum(run.model_calls for run in runs.values()) == len(server.usages) >= 3
    assert sum(run.input_tokens for run in runs.values()) == sum(used[0] for used in server.usages)
    assert sum(run.output_tokens for run in runs.values()) == sum(used[1] for used in server.usages)
    out = tmp_path / "out"
    assert "+    if abs_bytes < base:" in (out / runs[FIX_TASK].diff_file).read_text()
    assert FIXED in (out / runs[FIX_TASK].transcript_file).read_text()
    assert WRONG_ANSWER in (out / runs[QUESTION_TASK].transcript_file).read_text()
    # Its prompts are large (some 20,000 tokens each): all counted. The model never saw the run's workspace.
    assert not any(re.search(r"arbor-scratch-\d+-eval-", json.dumps(body)) for body in server.bodies)
    assert any(SHADOW.search(json.dumps(body).replace("\\/", "/")) for body in server.bodies)
