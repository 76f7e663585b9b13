"""``arbor run --agent`` with an agent that asks to sign in (tests/support/auth_agent.py): nobody can be
asked at a terminal, so an env-var method whose variables its ``[agents]`` env holds is sent with
``authenticate`` (the key then counts, as with Codex); otherwise Arbor says the agent's words and every way
to sign in — the variables to set, the terminal command to run — and exits 1, never a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.foreign_run import arbor_agent_run
from tests.support.git import hello_repo

AGENT = Path(__file__).parent / "support" / "auth_agent.py"


def _run(tmp_path: Path, env: dict[str, str] | None) -> tuple[int, str, list[dict[str, object]]]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    args = json.dumps([str(AGENT), str(state)])
    entry = f"[agents.authy]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
    if env is not None:
        entry += "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + " }\n"
    (config / "config.toml").write_text(entry)
    workspace = hello_repo(tmp_path)
    done = arbor_agent_run(
        workspace,
        "authy",
        "say hello",
        env={"ARBOR_CONFIG_DIR": str(config), "ARBOR_DATA_DIR": str(tmp_path / "data")},
        timeout=120,
    )
    records = [json.loads(line) for line in (state / "record.jsonl").read_text().splitlines()]
    return done.returncode, done.stderr, records


def test_without_a_key_arbor_says_every_way_to_sign_in(tmp_path: Path) -> None:
    code, said, records = _run(tmp_path, None)
    assert code == 1
    assert "authy needs you to sign in first (Sign in first: an API key" in said
    assert "- API key: set AUTH_AGENT_KEY, AUTH_AGENT_REGION (optional) in its [agents.authy] env" in said
    assert f"AUTH_AGENT_LOGIN=terminal {sys.executable} {AGENT} {tmp_path / 'state'} --login" in said
    assert "- Sign in with a browser: sign in from Arbor's window" in said
    assert "Traceback" not in said
    assert [r["event"] for r in records] == ["start", "session/new"]  # nothing sent without a key


def test_a_key_in_its_env_is_sent_with_authenticate_and_the_session_opens(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "strict").touch()  # the key counts only once authenticate names it
    code, said, records = _run(tmp_path, {"AUTH_AGENT_KEY": "k-123"})
    assert code == 0, said
    events = [(r["event"], r.get("method"), r.get("allowed")) for r in records]
    assert events == [
        ("start", None, None),
        ("session/new", None, False),
        ("authenticate", "api-key", None),
        ("session/new", None, True),
    ]
    assert "k-123" not in said  # the key is never printed


def test_a_refused_key_is_said_plainly(tmp_path: Path) -> None:
    code, said, _ = _run(tmp_path, {"AUTH_AGENT_KEY": "wrong"})
    assert code == 1
    assert "authy refused to sign in with API key" in said and "the key in AUTH_AGENT_KEY was refused" in said
    assert "Traceback" not in said
