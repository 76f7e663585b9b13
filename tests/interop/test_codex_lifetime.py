"""Issue 46 item 6 with the real Codex (codex-acp 0.16.0: a node launcher and the native ``codex-acp`` it
starts): SIGTERM or SIGKILL to the window while Codex waits for the model's answer leaves neither of them,
nor Arbor's review backend, after 5 s, and no shadow once the window has started again. SIGTERM left both
running under PID 1, in a deleted shadow."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.codex import CODEX_ACP, CODEX_BINARY, DONE, MAKE_TASK, codex_command
from tests.support.fake_openai import FakeOpenAI
from tests.support.git import hello_repo
from tests.support.lifetime import START_TIMEOUT_S, leftovers, read_until, signal_and_check, window

# The processes below the window are read from /proc: they must be its own, not the fork server's.
pytestmark = [pytest.mark.own_interpreter, pytest.mark.timeout(240)]


@pytest.fixture
def codex_peers(node_peers: Path) -> Path:
    if not (node_peers / CODEX_ACP).exists() or not (node_peers / CODEX_BINARY).exists():
        pytest.skip(
            "codex-acp's launcher or its linux-x64 binary (an optional npm dependency) is not installed: "
            "run npm install in tests/interop on linux x64"
        )
    return node_peers


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_codex_and_its_native_child_end_with_the_window(
    sig: signal.Signals, codex_peers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = hello_repo(tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "home" / ".codex").mkdir(parents=True)  # Codex stops at start without its home
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    asked, answer = threading.Event(), threading.Event()

    def model(_body: dict[str, Any]) -> dict[str, Any]:
        asked.set()
        answer.wait(START_TIMEOUT_S)  # Codex is mid-turn, waiting for this answer, when the signal comes
        return {"content": DONE}

    with FakeOpenAI(side=model) as server:
        try:
            parent = window(workspace, tmp_path, MAKE_TASK, codex_command(codex_peers, server.url))
            read_until(parent, "prompted")
            assert asked.wait(START_TIMEOUT_S), "Codex never asked the model"
            assert [name for name in leftovers(temp) if "shadow" in name]
            signal_and_check(parent, sig, str(CODEX_ACP), str(CODEX_BINARY), "ide acp")
        finally:
            answer.set()
    if sig == signal.SIGKILL:
        done = window(workspace, tmp_path, "")  # the next start: Arbor's backend reclaims the shadow
        _, err = done.communicate(timeout=START_TIMEOUT_S)
        assert done.returncode == 0, err[-3000:]
    assert not leftovers(temp), "the shadow is removed (SIGTERM) or reclaimed by the next start (SIGKILL)"
