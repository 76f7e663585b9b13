"""``arbor eval --budget-tokens`` against the real llama-server: the budget stops a run in the middle of the
model's one long answer, and the run is recorded over budget with the tokens it spent, not 0 and not the
whole answer's (up to llm.max_answer_tokens, 4,096)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from ide.eval.runner import EvalOptions, Evaluation
from ide.eval.tasks import load_tasks
from tests.support.realmodel import RealServer

BUDGET = 600
"""Above the ReAct prompt (~250 tokens: this server drops the tool list) so the answer passes it mid-call."""


def test_the_token_budget_stops_a_real_run_mid_answer_with_its_tokens_recorded(
    real_server: RealServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-no-key-needed")
    monkeypatch.setenv("ARBOR_LLM_OPENAI_BASE_URL", real_server.url)
    # Sampled freely the base model rambles on without the exact loops the loop guard would cut.
    monkeypatch.setenv("ARBOR_LLM_TEMPERATURE", "1.0")
    options = EvalOptions(
        out=tmp_path / "out",
        model=f"openai:{real_server.model}",
        modes=["react"],
        tasks=list(load_tasks("toolz-get-in-default")),
        baseline=False,
        budget_tokens=BUDGET,
        budget_s=240.0,
    )
    report = asyncio.run(Evaluation(options, log=io.StringIO()).run())

    (run,) = report.runs
    if run.status == "failed" and run.tokens < BUDGET:
        pytest.skip(f"the model ended its answer after {run.tokens} tokens, before the budget")
    assert run.status == "over_budget", run.reason
    assert run.model_calls == 1
    assert BUDGET < run.tokens <= 1.5 * BUDGET
