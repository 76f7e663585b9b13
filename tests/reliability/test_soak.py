"""A 200-turn session against one real ``arbor acp`` with a scripted model: every turn reads a file and
edits one, the review is fetched every few turns and applied every ten. The backend's resident memory and
open files stay flat from turn 20 (after warm-up) to turn 200, and no turn leaves a traceback."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.git import git
from tests.support.rawwire import RawWire, rss_kib

TURNS = 200
WARM_UP = 20
FILES = 10
REVIEW_EVERY = 5
APPLY_EVERY = 10
RSS_GROWTH_BOUND_KIB = 40 * 1024
FDS_GROWTH_BOUND = 5
INDEX_READS_BOUND = 2 * min(32, (os.cpu_count() or 1) + 4) + 4
"""Each worker thread of asyncio's default pool keeps one read connection to the code index (the database
and its WAL); they open as threads first query it, so they are bounded by the pool, not flat."""
CHECKPOINTS_BOUND = 20 * 2**20
"""Bytes of the workspace's checkpoint database after the run (every step's whole conversation: 359 MB)."""
TURN_TIMEOUT_S = 30.0
REVIEWER = {"_meta": {"arbor": {"review": True, "tree": True}}}
"""The capabilities Arbor's window asks for: change sets and search trees as notifications."""


def files(pid: int) -> tuple[int, int]:
    """Open files of ``pid``: (all but the code index's read connections, those connections)."""
    targets = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    index = sum(1 for target in targets if Path(target).name in ("index.sqlite", "index.sqlite-wal"))
    return len(targets) - index, index


def module(index: int, value: int) -> str:
    body = f"VALUE_{index} = {value}\n\n\ndef value_{index}():\n    return VALUE_{index}\n"
    return f'"""Module {index}."""\n\n{body}'


def turn_script(turns: int) -> list[dict[str, Any]]:
    """Three model responses per turn: read a module, bump its value, answer."""
    lines: list[dict[str, Any]] = []
    values = [0] * FILES
    for turn in range(1, turns + 1):
        index = turn % FILES
        path = f"pkg/mod{index}.py"
        old, new = f"VALUE_{index} = {values[index]}", f"VALUE_{index} = {values[index] + 1}"
        values[index] += 1
        lines.append({"tool_calls": [{"name": "read_file", "args": {"path": path}}]})
        edit = {"path": path, "old_text": old, "new_text": new}
        lines.append({"thinking": f"Bump {path}.", "tool_calls": [{"name": "edit_file", "args": edit}]})
        lines.append({"content": f"Turn {turn}: {path} now says `{new}`."})
    return lines


@pytest.fixture
def soak_workspace(git_workspace: Path) -> Path:
    for index in range(FILES):
        (git_workspace / "pkg" / f"mod{index}.py").write_text(module(index, 0))
    git(git_workspace, "add", "-A")
    git(git_workspace, "commit", "-qm", "modules")
    return git_workspace


@pytest.fixture
def backend(
    tmp_path: Path, soak_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> Iterator[RawWire]:
    script = write_script(turn_script(TURNS))
    # Past the window, older steps are summarised by the compactor: its own script, so the turns' lines
    # stay in step however often it is asked.
    summaries = write_script([{"content": "Earlier turns bumped module values, one per turn."}] * 3 * TURNS)
    env = {
        **os.environ,
        "ARBOR_MODEL": f"scripted:{script}",
        "ARBOR_COMPACTOR_MODEL": f"scripted:{summaries}",
    }
    wire = RawWire(env, tmp_path / "backend.stderr", answer=lambda _: {"outcome": {"outcome": "cancelled"}})
    yield wire
    if wire.proc.poll() is None:
        wire.proc.kill()
        wire.proc.wait()


@pytest.mark.own_interpreter  # reads the backend's memory and open files from /proc
@pytest.mark.long
@pytest.mark.timeout(300)  # 53 s on a quiet 2-core machine; past 120 s (the suite's limit) at load 10
def test_two_hundred_turns_keep_memory_and_open_files_flat(backend: RawWire, soak_workspace: Path) -> None:
    started = time.monotonic()
    ids = iter(range(1, 10_000))

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = backend.request(next(ids), method, params, timeout=TURN_TIMEOUT_S)
        assert "result" in answer, f"{method}: {answer}"
        return answer["result"]

    call("initialize", {"protocolVersion": 1, "clientCapabilities": REVIEWER})
    session = call("session/new", {"cwd": str(soak_workspace), "mcpServers": []})["sessionId"]
    figures: dict[int, tuple[int, int, int]] = {}
    trail: list[str] = []
    applied = 0
    for turn in range(1, TURNS + 1):
        prompt = [{"type": "text", "text": f"Turn {turn}: bump the value of module {turn % FILES}."}]
        result = call("session/prompt", {"sessionId": session, "prompt": prompt})
        assert result["stopReason"] == "end_turn", (turn, result)
        if turn % REVIEW_EVERY == 0:
            view = call("_arbor/review/changeset", {"session_id": session})
            assert view["files"], f"turn {turn}: the review shows no pending edit"
        if turn % APPLY_EVERY == 0:
            call("_arbor/review/decide", {"session_id": session, "decision": "accepted", "all": True})
            applied += len(call("_arbor/review/apply", {"session_id": session})["batch"]["paths"])
        if turn % 20 == 0:
            figures[turn] = (rss_kib(backend.pid), *files(backend.pid))
            trail.append(f"{turn}: {figures[turn][0] // 1024} MiB {time.monotonic() - started:.1f}s")
    elapsed = time.monotonic() - started

    stderr = backend.stderr()
    exit_code = backend.close()
    [checkpoints] = (Path(os.environ["ARBOR_DATA_DIR"]) / "workspaces").glob("*/checkpoints.sqlite")
    kept = checkpoints.stat().st_size
    (rss_warm, fds_warm, index_warm), (rss_end, fds_end, index_end) = figures[WARM_UP], figures[TURNS]
    print(
        f"\nsoak: {TURNS} turns ({3 * TURNS} model responses, {TURNS} reads, {TURNS} edits, "
        f"{TURNS // REVIEW_EVERY} review views, {TURNS // APPLY_EVERY} applies of {applied} files); "
        f"RSS {rss_warm // 1024} MiB at turn {WARM_UP} → {rss_end // 1024} MiB at turn {TURNS}; "
        f"open files {fds_warm} → {fds_end} (+ code-index reads {index_warm} → {index_end}); "
        f"conversation checkpoints {kept / 2**20:.1f} MiB; {elapsed:.1f} s\n"
        f"RSS and time by turn: {'; '.join(trail)}"
    )
    assert exit_code == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[stderr.index("Traceback") - 500 :][:4000]
    # Every edit landed: the last apply wrote each module's final value.
    for index in range(FILES):
        expected = f"VALUE_{index} = {TURNS // FILES}"
        assert expected in (soak_workspace / "pkg" / f"mod{index}.py").read_text()
    assert rss_end - rss_warm < RSS_GROWTH_BOUND_KIB, f"RSS grew {(rss_end - rss_warm) // 1024} MiB"
    assert fds_end - fds_warm <= FDS_GROWTH_BOUND, f"open files grew from {fds_warm} to {fds_end}"
    assert kept < CHECKPOINTS_BOUND, f"the conversation's checkpoints take {kept / 2**20:.0f} MiB"
    assert index_end <= INDEX_READS_BOUND, f"{index_end} files open for code-index reads"
