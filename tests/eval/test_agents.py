"""``arbor eval --agent`` with a small CLI agent (tests/support/eval_agent.py) against a simulated OpenAI-
compatible server: it solves one task and fails another, each run's tokens are the server's own count
(through the metering proxy, never the agent's word), its diff and transcript are kept, and the token and
time budgets stop it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ide import sandbox
from ide.eval.report import format_table
from ide.protocol.eval import load_report
from tests.support.agent_eval import (
    FIX_FILE,
    FIX_TASK,
    QUESTION_TASK,
    TASKS,
    WRONG_ANSWER,
    eval_agent_command,
    evaluate,
    fixed_text,
    whole_file_script,
)
from tests.support.fake_openai import FakeOpenAI


def _block(text: str) -> str:
    return f"FILE: {FIX_FILE}\n````\n{text}````\n"


def test_an_agent_solves_one_task_fails_another_and_its_tokens_are_the_servers(tmp_path: Path) -> None:
    fixed = fixed_text(tmp_path)
    with FakeOpenAI(side=whole_file_script(fixed, _block)) as server:
        report, log = evaluate(tmp_path / "out", [eval_agent_command()], server.url)
    runs = {run.task: run for run in report.runs}
    assert runs[FIX_TASK].status == "solved", runs[FIX_TASK].reason
    assert runs[QUESTION_TASK].status == "failed"
    assert "does not match" in runs[QUESTION_TASK].reason
    (agent,) = report.agents
    assert (agent.mode, agent.protocol, agent.model_server) == ("agent:eval_agent", "cli", server.url)
    assert report.modes == [agent.mode]
    out = tmp_path / "out"
    for run in runs.values():
        assert run.mode == agent.mode and run.metered
        assert run.model_calls == 1
        # The agent printed what the server told it; the proxy counted the same from the server.
        transcript = (out / run.transcript_file).read_text() if run.transcript_file else ""
        said_in, said_out = re.findall(r"usage: (\d+) (\d+)", transcript)[-1]
        assert (run.input_tokens, run.output_tokens) == (int(said_in), int(said_out))
        assert run.usage["agent"].calls == 1
    assert WRONG_ANSWER in (out / runs[QUESTION_TASK].transcript_file).read_text()
    diff = (out / runs[FIX_TASK].diff_file).read_text()
    assert f"+++ b/{FIX_FILE}" in diff and "+    if abs_bytes < base:" in diff
    assert runs[QUESTION_TASK].diff_file is None  # it changed nothing
    table = format_table(report)
    assert f"{agent.name} (agent)" in table and "1/2" in table
    assert "agent" in (out / "chart.html").read_text()
    assert "[eval] " + FIX_TASK in log
    assert load_report(out) == report


@pytest.mark.skipif(not sandbox.bwrap_status()[0], reason=f"{sandbox.bwrap_status()[1]} ({sandbox.INSTALL})")
def test_a_confined_agent_reaches_the_proxy_and_is_judged_the_same(tmp_path: Path) -> None:
    fixed = fixed_text(tmp_path)
    with FakeOpenAI(side=whole_file_script(fixed, _block)) as server:
        report, _ = evaluate(tmp_path / "out", [eval_agent_command()], server.url, tasks=FIX_TASK, confine=[])
    (run,) = report.runs
    assert run.status == "solved", run.reason
    assert run.metered and run.model_calls == 1 and run.tokens > 0
    assert "confined with bwrap" in (tmp_path / "out" / run.transcript_file).read_text()


def test_a_spent_token_budget_stops_the_agent_mid_answer(tmp_path: Path) -> None:
    long = "word " * 2000
    with FakeOpenAI(side=lambda body: {"content": long, "token_ms": 1}) as server:
        report, _ = evaluate(
            tmp_path / "out", [eval_agent_command()], server.url, tasks=FIX_TASK, budget_tokens=120
        )
    (run,) = report.runs
    assert run.status == "over_budget", run.reason
    assert "budget of 120 tokens" in run.reason
    assert 120 < run.tokens < 600  # stopped mid-answer: far from the 2,000 tokens of the whole answer
    assert server.closed_early == 1


def test_the_time_budget_ends_the_agents_process(tmp_path: Path) -> None:
    slow = "word " * 400
    with FakeOpenAI(side=lambda body: {"content": slow, "token_ms": 50}) as server:
        report, _ = evaluate(
            tmp_path / "out",
            [eval_agent_command()],
            server.url,
            tasks=FIX_TASK,
            budget_s=4.0,
        )
        # Its model call went with it: the server sees the answer's reader gone at its next piece.
        deadline = time.monotonic() + 10
        while server.closed_early < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.closed_early == 1
    (run,) = report.runs
    assert run.status == "timeout", run.reason
    assert run.wall_s < 4.0 + 15  # cancelled, then ended within the grace


def test_an_agent_not_pointed_at_the_proxy_is_run_but_its_tokens_are_not_counted(tmp_path: Path) -> None:
    fixed = fixed_text(tmp_path)
    with FakeOpenAI(side=whole_file_script(fixed, _block)) as server:
        # Straight at the server (by another name for it): nothing for Arbor to point at its proxy.
        command = eval_agent_command().replace("{base_url}", server.url.replace("127.0.0.1", "localhost"))
        report, _ = evaluate(tmp_path / "out", [command], server.url, tasks=FIX_TASK)
    (run,) = report.runs
    assert run.status == "solved", run.reason
    assert not run.metered and run.tokens == 0 and run.usage == {}
    assert "not counted" in format_table(report)
    assert "its tokens are not counted" in (tmp_path / "out" / run.transcript_file).read_text()


def _arbor_eval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ide", "eval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.fixture
def arbor_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "ARBOR_CONFIG_DIR": str(tmp_path / "config"),
            "ARBOR_DATA_DIR": str(tmp_path / "data"),
            "ARBOR_MODEL": "openai:local-model",
            "OPENAI_API_KEY": "test-key",
        }
    )
    return env


def test_arbor_eval_agent_from_the_command_line(tmp_path: Path, arbor_env: dict[str, str]) -> None:
    fixed = fixed_text(tmp_path)
    with FakeOpenAI(side=whole_file_script(fixed, _block)) as server:
        arbor_env["ARBOR_LLM_OPENAI_BASE_URL"] = server.url
        done = _arbor_eval(
            "--tasks", TASKS, "--modes", "none", "--no-baseline", "--agent", eval_agent_command(),
            "--out", str(tmp_path / "out"), cwd=tmp_path, env=arbor_env,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(agent)" in done.stdout and "1/2" in done.stdout
    report = load_report(tmp_path / "out")
    assert [r.status for r in sorted(report.runs, key=lambda r: r.task)] == ["solved", "failed"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--modes", "none", "--no-baseline"), "--modes: unknown mode(s) (none given)"),
        (
            ("--modes", "none", "--no-baseline", "--agent", "arbor"),
            "Arbor's own agent is evaluated by --modes",
        ),
        (
            ("--modes", "none", "--no-baseline", "--agent", "no-such-agent-here"),
            "no program 'no-such-agent-here'",
        ),
        (
            ("--modes", "none", "--no-baseline", "--agent", "true {prompt}", "--model", "scripted:x.jsonl"),
            "name it with --model-server URL",
        ),
        (
            ("--modes", "none", "--no-baseline", "--agent", "true {prompt}", "--model-server", "ftp://x"),
            "not an http(s) URL",
        ),
    ],
)
def test_arbor_eval_agent_says_what_is_wrong(
    args: tuple[str, ...], said: str, tmp_path: Path, arbor_env: dict[str, str]
) -> None:
    done = _arbor_eval(*args, "--out", str(tmp_path / "out"), cwd=tmp_path, env=arbor_env)
    assert done.returncode == 2
    assert said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
