"""Benchmark of the context budget: a read-heavy ReAct turn (30 steps, one 6 KB file read per step) and a
5-turn session, through the real backend and the real Ollama client against the simulated Ollama (which
cuts an over-long prompt from the front exactly as Ollama does, and records what the model saw).

For ``num_ctx`` 8,192 and 16,384 it prints: requests sent, the peak request size against the window,
requests the server had to cut (must be 0), requests that still carried the task (must be all), whether
the answer came, and the prompt tokens spent against the same run with a window big enough that nothing
is compacted. Tokens are the simulator's stand-in count (4 characters a token, 4 per message). Prints
JSON; ``--runs N`` repeats each configuration and reports medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import text_block  # noqa: E402

from tests.support.acp_client import acp_backend  # noqa: E402
from tests.support.fake_ollama import FakeOllama  # noqa: E402

STEPS = 30
FILE_BYTES = 6000
TASK = "TASK-MARKER: find where the retry policy is configured and explain it"
SESSION_TURNS = 5
READS_PER_TURN = 6
UNBOUNDED = 1_000_000
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def workspace(tmp: Path, files: int) -> Path:
    root = tmp / "ws"
    (root / "pkg").mkdir(parents=True)
    for n in range(files):
        lines = [f"# module {n}: settings and helpers\n"] + [
            f"def helper_{n}_{i}(value):\n    return value * {i} + {n}  # keep the retry budget small\n"
            for i in range(FILE_BYTES // 90)
        ]
        (root / "pkg" / f"m{n}.py").write_text("".join(lines))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def reads(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "read_file", "args": {"path": f"pkg/m{start + i}.py"}}]}
        for i in range(count)
    ]


def figures(server: FakeOllama, window: int) -> dict[str, Any]:
    """What the simulated model saw of each request; the task checked is each request's own (its last
    user message: the turn's request), which must have survived whole."""
    seen = server.seen
    tasks = [
        next(m["content"] for m in reversed(body["messages"]) if m.get("role") == "user")
        for body in server.chat_bodies
    ]
    return {
        "requests": len(seen),
        "peak_request_tokens": max(s.sent_tokens for s in seen),
        "window": window,
        "over_window": sum(s.truncated for s in seen),
        "task_in_every_request": all(task in s.text for task, s in zip(tasks, seen, strict=True)),
        "prompt_tokens_sent": sum(s.sent_tokens for s in seen),
    }


def env_for(server: FakeOllama, tmp: Path, num_ctx: int) -> dict[str, str]:
    return {
        **os.environ,
        **GIT_ENV,
        "ARBOR_MODEL": "ollama:qwen2.5-coder:7b",
        "OLLAMA_HOST": server.url,
        "ARBOR_LLM_NUM_CTX": str(num_ctx),
        "ARBOR_AGENT_MAX_STEPS": str(STEPS + 5),
        "ARBOR_CONFIG_DIR": str(tmp / "config"),
        "ARBOR_DATA_DIR": str(tmp / "data"),
        "ARBOR_MEMORY_ENABLED": "false",
    }


def one_turn(num_ctx: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        root = workspace(tmp, STEPS)
        models = {"qwen2.5-coder:7b": {"context_length": max(num_ctx, 32768)}}
        answer = {"content": "The retry policy is configured in pkg/m0.py (helper_0_1)."}
        with FakeOllama(responses=[*reads(STEPS), answer], models=models) as server:
            done = subprocess.run(
                [sys.executable, "-m", "ide", "run", "-w", str(root), TASK],
                env=env_for(server, tmp, num_ctx),
                capture_output=True,
                text=True,
                timeout=600,
                cwd=ROOT,
            )
            result = figures(server, num_ctx)
        result["answer_produced"] = done.returncode == 0 and "retry policy is configured" in done.stdout
        if done.returncode != 0:
            result["stderr"] = done.stderr[-1500:]
        return result


async def session(num_ctx: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        root = workspace(tmp, SESSION_TURNS * READS_PER_TURN)
        models = {"qwen2.5-coder:7b": {"context_length": max(num_ctx, 32768)}}
        script: list[dict[str, Any]] = []
        for turn in range(SESSION_TURNS):
            script += reads(READS_PER_TURN, turn * READS_PER_TURN)
            script.append({"content": f"Turn {turn}: read {READS_PER_TURN} files."})
        with FakeOllama(responses=script, models=models) as server:
            env = {
                k: v
                for k, v in env_for(server, tmp, num_ctx).items()
                if k.startswith(("ARBOR_", "OLLAMA_", "GIT_"))
            }
            answered = 0
            async with acp_backend(env) as backend:
                new = await backend.conn.new_session(cwd=str(root), mcp_servers=[])
                for turn in range(SESSION_TURNS):
                    task = f"TURN-{turn}: read the next {READS_PER_TURN} modules and summarise them"
                    reply = await backend.conn.prompt(session_id=new.session_id, prompt=[text_block(task)])
                    answered += reply.stop_reason == "end_turn"
            result = figures(server, num_ctx)
        result["turns_answered"] = answered
        return result


STRUCTURED_ASKS = 20


async def structured(constrained: bool) -> dict[str, Any]:
    """A model that answers free text unless constrained (the simulator's ``json`` answer): the share of
    structured asks whose first reply was malformed, with the server honouring ``format`` or refusing it."""
    from langchain_core.messages import HumanMessage
    from pydantic import BaseModel

    from ide.llm import ModelRouter
    from ide.search.base import ask_structured
    from ide.settings import Settings

    class Verdict(BaseModel):
        score: float
        reason: str

    free_then_json = {
        "content": "I'd say it is quite good, maybe an 8.",
        "json": {"score": 8, "reason": "good"},
    }
    repair = {"content": '{"score": 8, "reason": "good"}'}
    answers = [free_then_json] if constrained else [free_then_json, repair]
    models = {"qwen2.5-coder:7b": {"context_length": 32768, **({} if constrained else {"format": False})}}
    with FakeOllama(responses=answers * STRUCTURED_ASKS, models=models) as server:
        settings = Settings()
        settings.llm.ollama_host = server.url
        settings.llm.model = "ollama:qwen2.5-coder:7b"
        router = ModelRouter(settings)
        for _ in range(STRUCTURED_ASKS):
            await ask_structured(router, "lats.evaluation", [HumanMessage("Score the answer.")], Verdict)
        chats = [b for b in server.chat_bodies]
    repaired = sum("could not be used" in str(b["messages"][-1].get("content")) for b in chats)
    return {
        "asks": STRUCTURED_ASKS,
        "requests": len(chats),
        "malformed_first_replies": repaired / STRUCTURED_ASKS,
    }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        values = [run[key] for run in runs]
        out[key] = (
            statistics.median(values)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else all(values)
            if isinstance(value, bool)
            else value
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results: dict[str, Any] = {"steps": STEPS, "file_bytes": FILE_BYTES}
    unbounded_turn = median_of([one_turn(UNBOUNDED) for _ in range(args.runs)])
    unbounded_session = median_of([asyncio.run(session(UNBOUNDED)) for _ in range(args.runs)])
    results["uncompacted"] = {"turn": unbounded_turn, "session": unbounded_session}
    for num_ctx in (8192, 16384):
        turn = median_of([one_turn(num_ctx) for _ in range(args.runs)])
        turn["tokens_vs_uncompacted"] = round(
            turn["prompt_tokens_sent"] / unbounded_turn["prompt_tokens_sent"], 3
        )
        multi = median_of([asyncio.run(session(num_ctx)) for _ in range(args.runs)])
        multi["tokens_vs_uncompacted"] = round(
            multi["prompt_tokens_sent"] / unbounded_session["prompt_tokens_sent"], 3
        )
        results[f"num_ctx_{num_ctx}"] = {"turn": turn, "session": multi}
    results["structured_answers"] = {
        "format_honoured": asyncio.run(structured(True)),
        "format_refused_prompt_and_repair": asyncio.run(structured(False)),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
