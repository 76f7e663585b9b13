"""No process outlives the one that started it (issue 51, issue 46 item 6): SIGTERM or SIGKILL to the
window (with Arbor's agent, and with another agent that behaves as codex-acp does: a child of its own, no
exit at the end of its input), to ``arbor run`` (Arbor's agent, and a CLI agent that started a ``sleep``)
and to ``arbor eval``, while a model answer streams and a child is mid-work, leaves no process of the run
after 5 s, and no shadow or scratch directory once the next start has run.

Every process below the parent is recorded from /proc just before the signal (with its start time, so a
pid taken again is not mistaken for it). Each test has a temporary directory of its own (``TMPDIR``),
where every shadow and scratch directory of its run is made."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ide import sandbox
from tests.support.fake_ollama import FakeOllama
from tests.support.git import hello_repo
from tests.support.lifetime import (
    GONE_WITHIN_S,
    START_TIMEOUT_S,
    leftovers,
    read_until,
    signal_and_check,
    start,
    window,
)
from tests.support.procs import descendants, left_after

# Each test reads the processes below the parent from /proc: they must be its own, not the fork server's.
pytestmark = [pytest.mark.own_interpreter, pytest.mark.timeout(240)]

MODEL = "ollama:qwen2.5-coder:7b"
STUBBORN_AGENT = Path(__file__).parents[1] / "support" / "stubborn_agent.py"
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
SLOW_ANSWER = {"content": "word " * 4000, "token_ms": 20}
"""About 80 s of streaming, 5 characters a chunk: still streaming when the signal comes."""
QUICK_ANSWER = {"content": "Done."}


class Model:
    """FakeOllama answering every chat slowly, or quickly once :attr:`slow` is False."""

    def __init__(self) -> None:
        self.slow = True
        self.server = FakeOllama(responder=lambda _body: SLOW_ANSWER if self.slow else QUICK_ANSWER)

    def streaming(self) -> None:
        assert self.server.wait_for_chats(1, timeout=START_TIMEOUT_S), "the model was never asked"


@pytest.fixture
def model() -> Iterator[Model]:
    made = Model()
    made.server.start()
    try:
        yield made
    finally:
        made.server.close()


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Model) -> Path:
    """This test's temporary directory, where its run makes every shadow and scratch directory; the
    environment every process of the run gets."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("OLLAMA_HOST", model.server.url)
    monkeypatch.setenv("ARBOR_MODEL", MODEL)
    return folder


def next_window(workspace: Path, tmp_path: Path) -> None:
    """The window's next start (with Arbor's own backend, which removes what dead processes left)."""
    done = window(workspace, tmp_path, "")
    _, err = done.communicate(timeout=START_TIMEOUT_S)
    assert done.returncode == 0, err[-3000:]


@SIGNALS
def test_the_window_with_arbors_agent_leaves_nothing(
    sig: signal.Signals, temp: Path, model: Model, tmp_path: Path
) -> None:
    workspace = hello_repo(tmp_path)
    parent = window(workspace, tmp_path, "Explain hello.py")
    read_until(parent, "prompted")
    model.streaming()
    signal_and_check(parent, sig, "ide acp")
    assert not leftovers(temp)


@SIGNALS
def test_the_window_with_an_agent_that_outlives_its_input_leaves_nothing(
    sig: signal.Signals, temp: Path, tmp_path: Path
) -> None:
    """Issue 46 item 6: SIGTERM to the window left codex-acp (node and native) running under PID 1."""
    workspace = hello_repo(tmp_path)
    agent = shlex.join([sys.executable, str(STUBBORN_AGENT)])
    parent = window(workspace, tmp_path, "make two files", agent)
    read_until(parent, "prompted")
    shadows = [name for name in leftovers(temp) if "shadow" in name]
    assert shadows, "the agent works in a shadow, made by the review backend"
    # The agent streams its answer; its child and the review backend (arbor acp) hold the rest.
    signal_and_check(parent, sig, "stubborn_agent.py", "sleep", "ide acp")
    if sig == signal.SIGKILL:
        next_window(workspace, tmp_path)
    assert not leftovers(temp), "the shadow is removed (SIGTERM) or reclaimed by the next start (SIGKILL)"


@SIGNALS
def test_arbor_run_with_arbors_agent_leaves_nothing(
    sig: signal.Signals, temp: Path, model: Model, tmp_path: Path
) -> None:
    workspace = hello_repo(tmp_path)
    parent = start([sys.executable, "-m", "ide", "run", "-w", str(workspace), "Explain hello.py"])
    model.streaming()
    signal_and_check(parent, sig, "ide acp")
    assert not leftovers(temp)


CLI_AGENT = """\
sleep 3600 &
echo started
while :; do printf 'word '; sleep 0.1; done
"""
"""A CLI agent mid-work: a child of its own, and its answer streaming."""


NEEDS_BWRAP = pytest.mark.skipif(not sandbox.bwrap_status()[0], reason="bubblewrap cannot run here")


@pytest.mark.parametrize(
    ("sig", "confine"),
    [
        pytest.param(signal.SIGTERM, False, id="SIGTERM"),
        pytest.param(signal.SIGKILL, False, id="SIGKILL"),
        pytest.param(signal.SIGKILL, True, id="SIGKILL-confined", marks=NEEDS_BWRAP),
    ],
)
def test_arbor_run_with_a_cli_agent_and_its_child_leaves_nothing(
    sig: signal.Signals, confine: bool, temp: Path, tmp_path: Path, user_config: Any
) -> None:
    """NoFollow, the agent runs under bwrap in a PID namespace of its own (``--new-session``): bwrap ends
    with the keeper, and the namespace with bwrap."""
    if confine:
        user_config("[review]\nconfine_agents = true\n")
    workspace = hello_repo(tmp_path)
    script = tmp_path / "agent.sh"
    script.write_text(CLI_AGENT)
    argv = [sys.executable, "-m", "ide", "run", "-w", str(workspace), "--agent", f"sh {script} {{prompt}}"]
    parent = start([*argv, "make two files"])
    read_until(parent, "started")
    assert [name for name in leftovers(temp) if "shadow" in name]
    signal_and_check(parent, sig, f"sh {script}", "sleep 3600", "ide acp")
    script.write_text("echo quick\n")  # the next start: an agent that is done at once
    done = subprocess.run([*argv, "again"], capture_output=True, text=True, timeout=START_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not leftovers(temp), "the shadow is removed, or reclaimed by the next start"


@SIGNALS
def test_arbor_eval_leaves_nothing(sig: signal.Signals, temp: Path, model: Model, tmp_path: Path) -> None:
    """Issue 51: SIGTERM to ``arbor eval`` while a model answer streamed left its backend under PID 1; a
    killed evaluation's scratch workspace stayed for good."""
    argv = [sys.executable, "-m", "ide", "eval", "--tasks", "q-toolz-getter-callers", "--modes", "react"]
    argv += ["--no-baseline", "--model", MODEL, "--budget-seconds", "120"]
    parent = start([*argv, "--out", str(tmp_path / "out")])
    model.streaming()
    assert [name for name in leftovers(temp) if "eval" in name], "the run's scratch workspace"
    signal_and_check(parent, sig, "ide acp")
    model.slow = False
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "again")], capture_output=True, text=True, timeout=START_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not leftovers(temp), "the scratch workspace is removed, or reclaimed by the next start"


class RawClient:
    """``arbor acp`` started by this test as any ACP client (Zed) starts it: no parent-death signal, only
    its pipes; JSON-RPC lines written and read by hand."""

    def __init__(self) -> None:
        argv = [sys.executable, "-m", "ide", "acp"]
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self._ids = iter(range(1, 1000))
        self.updates = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        assert self.process.stdin is not None
        request_id = next(self._ids)
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(line).encode() + b"\n")
        self.process.stdin.flush()
        return request_id

    def read_until(self, done: Any) -> dict[str, Any]:
        """Read messages until ``done(message)`` holds (pytest's timeout bounds it); that message."""
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            message = json.loads(raw)
            self.updates += message.get("method") == "session/update"
            if done(message):
                return message
        raise AssertionError(f"the backend ended: {self.stderr_tail()}")

    def call(self, method: str, params: dict[str, Any]) -> Any:
        request_id = self.send(method, params)
        answer = self.read_until(lambda message: message.get("id") == request_id)
        assert "result" in answer, answer
        return answer["result"]

    def stderr_tail(self) -> str:
        assert self.process.stderr is not None
        self.process.kill()
        return self.process.stderr.read().decode(errors="replace")[-3000:]

    def initialize(self) -> None:
        meta = {"arbor": {"review": True, "reviewHunks": True, "tree": True, "index": True}}  # the window's
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {"_meta": meta}})


@pytest.fixture
def raw_client(temp: Path) -> Iterator[RawClient]:
    client = RawClient()
    try:
        yield client
    finally:
        client.process.kill()
        client.process.wait()
        for pipe in (client.process.stdin, client.process.stdout, client.process.stderr):
            if pipe is not None:
                pipe.close()


def test_arbor_acp_ends_at_the_end_of_its_input_even_with_an_answer_it_cannot_send(
    raw_client: RawClient, model: Model, tmp_path: Path
) -> None:
    """The client (not Arbor: no parent-death signal) goes while a turn streams, its search tree with it.
    The SDK waited forever to send the cancelled turn's answer through the closed pipe (its sender had
    stopped there), and the backend stayed under PID 1: the leak issue 51 measured."""
    workspace = hello_repo(tmp_path)
    raw_client.initialize()
    session = raw_client.call("session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    prompt = [{"type": "text", "text": "Explain hello.py"}]
    raw_client.send("session/prompt", {"sessionId": session, "prompt": prompt})
    raw_client.read_until(lambda _message: raw_client.updates >= 5)  # the answer streams
    process = raw_client.process
    assert process.stdout is not None and process.stderr is not None and process.stdin is not None
    below_us = descendants(os.getpid())
    recorded = {pid: below_us[pid] for pid in (process.pid, *descendants(process.pid))}
    process.stdout.close()  # as the client's end: its next update finds the pipe closed
    process.stdin.close()
    assert not left_after(recorded, GONE_WITHIN_S), "arbor acp is still there after the end of its input"


def test_sigterm_to_arbor_acp_removes_the_shadow_it_made(
    raw_client: RawClient, temp: Path, tmp_path: Path
) -> None:
    """Issue 46 item 6: after SIGTERM to ``arbor acp`` its shadow stayed until the next open."""
    workspace = hello_repo(tmp_path)
    raw_client.initialize()
    shadow = raw_client.call("_arbor/external/shadow", {"cwd": str(workspace), "agent": "codex"})["cwd"]
    assert Path(shadow).is_dir() and leftovers(temp)
    raw_client.process.send_signal(signal.SIGTERM)
    raw_client.process.wait(timeout=GONE_WITHIN_S)
    assert not Path(shadow).exists() and not leftovers(temp)
