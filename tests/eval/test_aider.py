"""``arbor eval --agent aider``: real aider 0.86.2 (a CLI agent, from the package registry in a venv of its
own: scripts/aider.py) named in the ``[agents]`` settings, against a simulated OpenAI-compatible server
that solves one task and fails another. aider's model calls — its edits, the follow-up after it adds a file
to its chat, its history summary — all pass the metering proxy, whose count is the server's to the token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ide.protocol.eval import load_report
from tests.support.agent_eval import FIX_FILE, FIX_TASK, QUESTION_TASK, TASKS, fixed_text, whole_file_script
from tests.support.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[2]
GET_IT = "python scripts/aider.py (installs aider-chat 0.86.2 into a venv of its own, ~30 s once)"


@pytest.fixture(scope="module")
def aider() -> str:
    found = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "aider.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"no aider cached here: run {GET_IT}")
    return json.loads(found.stdout)["aider"]


def _config(aider: str, home: Path, history: Path) -> str:
    args = [
        "--openai-api-base", "{base_url}", "--model", "openai/{model}", "--edit-format", "whole",
        "--yes-always", "--no-auto-commits", "--no-check-update", "--no-show-model-warnings",
        "--analytics-disable", "--map-tokens", "0", "--no-pretty", "--no-fancy-input", "--no-gitignore",
        "--chat-history-file", str(history / "chat.md"), "--input-history-file", str(history / "input"),
        "--model-metadata-file", str(history / "models.json"), "--message", "{prompt}",
    ]  # fmt: skip
    env = {
        "OPENAI_API_KEY": "test-key",
        "HOME": str(home),
        # litellm fetches its model price list from GitHub at import unless told to use its own copy.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return (
        "[agents.aider]\n"
        f"command = {json.dumps(aider)}\n"
        f"args = {json.dumps(args)}\n"
        'protocol = "cli"\n'
        f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in env.items())} }}\n"
    )


def test_aider_is_evaluated_on_one_solved_and_one_failed_task_with_the_servers_token_count(
    aider: str, tmp_path: Path
) -> None:
    fixed = fixed_text(tmp_path)
    config = tmp_path / "config"
    config.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "history").mkdir()
    # A local model described as aider's docs say: without it aider looks the model up on GitHub.
    metadata = {
        "max_input_tokens": 32768,
        "max_output_tokens": 4096,
        "litellm_provider": "openai",
        "mode": "chat",
    }
    metadata |= {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
    (tmp_path / "history" / "models.json").write_text(json.dumps({"openai/local-model": metadata}))
    (config / "config.toml").write_text(_config(aider, tmp_path / "home", tmp_path / "history"))
    env = dict(os.environ)
    env.update({"ARBOR_CONFIG_DIR": str(config), "ARBOR_DATA_DIR": str(tmp_path / "data")})
    # aider's whole-file format: the path on a line of its own, then the whole file fenced.
    script = whole_file_script(fixed, lambda text: f"{FIX_FILE}\n````python\n{text}````\n")
    with FakeOpenAI(side=script) as server:
        done = subprocess.run(
            [
                sys.executable, "-m", "ide", "eval", "--tasks", TASKS, "--modes", "none", "--no-baseline",
                "--agent", "aider", "--model", "openai:local-model", "--model-server", server.url,
                "--out", str(tmp_path / "out"),
            ],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = load_report(tmp_path / "out")
    runs = {run.task: run for run in report.runs}
    assert runs[FIX_TASK].status == "solved", runs[FIX_TASK].reason
    assert runs[QUESTION_TASK].status == "failed", runs[QUESTION_TASK].reason
    assert "aider (agent)" in done.stdout
    # Every call aider made went through the proxy and was counted as the server counted it.
    assert sum(run.model_calls for run in runs.values()) == len(server.usages) >= 2
    assert sum(run.input_tokens for run in runs.values()) == sum(used[0] for used in server.usages)
    assert sum(run.output_tokens for run in runs.values()) == sum(used[1] for used in server.usages)
    assert all(run.metered for run in runs.values())
    diff = (tmp_path / "out" / runs[FIX_TASK].diff_file).read_text()
    assert "+    if abs_bytes < base:" in diff
    assert ".aider" not in diff  # its history went where its settings said, not into the workspace
    transcript = (tmp_path / "out" / runs[FIX_TASK].transcript_file).read_text()
    assert "Aider v0.86.2" in transcript
    assert "raw.githubusercontent.com" not in transcript  # it never tried to reach the internet
