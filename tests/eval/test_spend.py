"""``arbor eval`` counts what a run spent while its model answers: the token budget stops a run in the
middle of a long answer, and a run stopped mid-call (over budget, or out of time) records the tokens and
the call it spent. The real backend in a subprocess, the real langchain-openai client, the simulated
OpenAI-compatible server streaming one long answer."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest

from ide.eval.runner import EvalOptions, Evaluation
from ide.eval.tasks import EvalTask, load_tasks
from ide.protocol.eval import EvalRun
from tests.support.fake_openai import FakeOpenAI

BUG = "toolz-get-in-default"
LONG = " ".join(f"step{n:04d}" for n in range(1600))
"""A 14,399-character answer (no loop to cut), 2,880 pieces of the simulator's stream: 3,599 tokens."""

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def task() -> EvalTask:
    (found,) = load_tasks(BUG)
    return found


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    with FakeOpenAI([{"content": LONG, "token_ms": request.param}]) as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("ARBOR_LLM_OPENAI_BASE_URL", fake.url)
        yield fake


def evaluate(task: EvalTask, tmp_path: object, **budgets: float) -> EvalRun:
    options = EvalOptions(
        out=tmp_path / "out",  # type: ignore[operator]
        model="openai:local-model",
        modes=["react"],
        tasks=[task],
        baseline=False,
        **budgets,  # type: ignore[arg-type]
    )
    report = asyncio.run(Evaluation(options, log=io.StringIO()).run())
    (run,) = report.runs
    return run


@pytest.mark.parametrize("server", [2.0], indirect=True)
def test_the_token_budget_stops_a_run_in_the_middle_of_an_answer(
    task: EvalTask, server: FakeOpenAI, tmp_path: object
) -> None:
    prompt = 0

    def measure(body: dict[str, object]) -> None:
        nonlocal prompt
        prompt = sum(len(str(m.get("content") or "")) for m in body["messages"]) // 4  # type: ignore[attr-defined]

    budget = 2500
    run = evaluate(task, tmp_path, budget_tokens=budget, budget_s=60.0)
    measure(server.bodies[0])
    assert prompt < budget - 500  # the budget leaves room for the answer to pass it mid-call
    assert run.status == "over_budget" and "budget" in run.reason
    assert run.model_calls == 1
    # Cancelled once the streamed tokens passed the budget: far fewer than the answer's 3,599.
    assert budget < run.tokens <= 1.5 * budget
    assert run.output_tokens < 3000
    assert server.closed_early == 1  # the answer's stream was closed: the server stopped generating


@pytest.mark.parametrize("server", [10.0], indirect=True)
def test_a_run_out_of_time_mid_answer_records_the_call_and_tokens_it_spent(
    task: EvalTask, server: FakeOpenAI, tmp_path: object
) -> None:
    # The answer streams for ~29 s; the run may take 12 from its prompt (the backend's start is not counted).
    run = evaluate(task, tmp_path, budget_tokens=200_000, budget_s=12.0)
    assert len(server.bodies) == 1 and run.status == "timeout"
    assert run.model_calls == 1
    assert run.input_tokens > 0 and run.output_tokens > 50  # not "0 tokens": it streamed for seconds
