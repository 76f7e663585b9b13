"""``arbor acp`` with a file or ``/dev/null`` for stdin or stdout, as a user scripting it types it: asyncio's
pipe transports refuse a regular file and wait forever on ``/dev/null``, so these went through a pipe copied
by a thread. Before, ``< /dev/null`` never exited and ``> answers.jsonl`` ended in a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUN_TIMEOUT_S = 60
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
UNKNOWN = {"jsonrpc": "2.0", "id": 2, "method": "no/such/method", "params": {}}


def arbor_acp(stdin: Path | None, stdout: Path | None) -> tuple[int, str, str]:
    """Run ``arbor acp`` with ``stdin``/``stdout`` as files (``None``: ``/dev/null`` in, a pipe out)."""
    with (
        open(stdin or os.devnull, "rb") as source,
        open(stdout, "wb") if stdout else open(os.devnull, "wb") as _unused,
    ):
        done = subprocess.run(
            [sys.executable, "-m", "ide", "acp"],
            stdin=source,
            stdout=_unused if stdout else subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    output = stdout.read_text() if stdout else done.stdout.decode()
    return done.returncode, output, done.stderr.decode()


@pytest.mark.parametrize("into_file", [True, False], ids=["answers-to-file", "answers-to-pipe"])
def test_requests_read_from_a_file_are_answered_and_the_process_ends(tmp_path: Path, into_file: bool) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INITIALIZE) + "\n" + json.dumps(UNKNOWN) + "\n")
    code, output, errors = arbor_acp(requests, tmp_path / "answers.jsonl" if into_file else None)
    assert code == 0, errors
    assert "Traceback" not in errors
    answers = {message["id"]: message for message in map(json.loads, output.splitlines())}
    assert answers[1]["result"]["protocolVersion"] == 1
    assert answers[2]["error"]["code"] == -32601


def test_dev_null_for_stdin_is_an_empty_session_that_ends(tmp_path: Path) -> None:
    code, output, errors = arbor_acp(None, tmp_path / "answers.jsonl")
    assert code == 0, errors
    assert output == ""
    assert "Traceback" not in errors
