"""``arbor eval --agent`` against the real llama-server and the real tiny model: another agent's tokens are
the server's own count (through the metering proxy), and the token budget stops the agent in the middle of
the model's answer — the server stops generating, the run is recorded over budget with what it spent."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.support.agent_eval import FIX_TASK, eval_agent_command, evaluate
from tests.support.realmodel import RealServer

SLOT_WAIT_S = 20.0


def test_another_agents_tokens_are_the_real_servers_count(real_server: RealServer, tmp_path: Path) -> None:
    command = eval_agent_command("--max-tokens=48")
    report, _ = evaluate(
        tmp_path / "out", [command], real_server.url, tasks=FIX_TASK, model=f"openai:{real_server.model}"
    )
    (run,) = report.runs
    assert run.status == "failed", run.reason  # a 270M base model does not fix the bug
    transcript = (tmp_path / "out" / run.transcript_file).read_text()
    said_in, said_out = re.findall(r"usage: (\d+) (\d+)", transcript)[-1]
    assert (run.model_calls, run.input_tokens, run.output_tokens) == (1, int(said_in), int(said_out))
    assert 0 < run.output_tokens <= 48


def test_the_token_budget_stops_another_agent_mid_answer(real_server: RealServer, tmp_path: Path) -> None:
    budget = 200  # above the prompt (~120 tokens here), far below the answer the agent asks for
    command = eval_agent_command("--max-tokens=1500")
    report, _ = evaluate(
        tmp_path / "out",
        [command],
        real_server.url,
        tasks=FIX_TASK,
        model=f"openai:{real_server.model}",
        budget_tokens=budget,
    )
    (run,) = report.runs
    if run.status == "failed" and run.tokens < budget:
        import pytest

        pytest.skip(f"the model ended its answer after {run.tokens} tokens, before the budget")
    assert run.status == "over_budget", run.reason
    assert budget < run.tokens <= budget + 64  # cut within a few streamed pieces of the budget
    # The answer's stream was cut: the server stops generating (its slot frees) instead of going on.
    deadline = time.monotonic() + SLOT_WAIT_S
    while real_server.slot_busy() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not real_server.slot_busy()
