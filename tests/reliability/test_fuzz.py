"""Bad input never kills anything: ``arbor acp`` fed random, malformed and oversized JSON-RPC answers with
errors and keeps serving; random workflow YAML gives validation errors only."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ide.workflows.loader import WorkflowError, parse_text
from ide.workflows.schema import AgentProfile, Workflow

BACKEND = [sys.executable, "-m", "ide", "acp"]
READ_TIMEOUT_S = 20.0


class RawBackend:
    """``arbor acp`` over raw pipes: what is written is exactly what the fuzzer made."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            BACKEND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
        self.selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""
        self.next_id = 10_000

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def line(self) -> dict[str, object]:
        """The next JSON line from the backend (bounded wait)."""
        assert self.proc.stdout is not None
        while b"\n" not in self.buffer:
            if not self.selector.select(READ_TIMEOUT_S):
                raise AssertionError("the backend did not answer within the timeout (hang)")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the backend closed its output (exit {self.proc.poll()})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> None:
        """Prove the backend still serves: a well-formed initialize gets its answer."""
        self.next_id += 1
        ping = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "initialize",
            "params": {"protocolVersion": 1},
        }
        self.send(json.dumps(ping).encode() + b"\n")
        while True:
            reply = self.line()
            if reply.get("id") == self.next_id:
                assert "result" in reply, reply
                return

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def raw_backend() -> Iterator[RawBackend]:
    backend = RawBackend()
    backend.alive()
    yield backend
    backend.close()
    assert backend.proc.returncode == 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
methods = st.sampled_from(
    [
        "initialize",
        "session/new",
        "session/load",
        "session/prompt",
        "session/cancel",
        "session/set_mode",
        "_arbor/review/apply",
        "_arbor/index/search",
        "_arbor/workflows/list",
        "_arbor/memory/search",
        "nope",
    ]
) | st.text(max_size=30)
requests = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": methods, "params": json_values},
    optional={"id": st.integers(min_value=0, max_value=9_999) | st.text(max_size=5)},
)
lines = st.one_of(
    st.binary(min_size=1, max_size=200).filter(lambda b: b"\n" not in b),
    json_values.map(lambda v: json.dumps(v).encode()),
    requests.map(lambda r: json.dumps(r).encode()),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(lines, min_size=1, max_size=4))
def test_random_json_rpc_never_kills_or_hangs_the_backend(
    raw_backend: RawBackend, batch: list[bytes]
) -> None:
    raw_backend.send(b"\n".join(batch) + b"\n")
    raw_backend.alive()


def test_an_oversized_line_is_refused_and_the_backend_goes_on(raw_backend: RawBackend) -> None:
    huge = {"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"text": "x" * 60_000_000}}
    raw_backend.send(json.dumps(huge).encode() + b"\n")
    raw_backend.alive()


yaml_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
yaml_docs = st.recursive(
    yaml_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "metadata",
                    "stages",
                    "name",
                    "stage_id",
                    "routing",
                    "parallel_agents",
                    "agent",
                    "next_stage_on_success",
                    "required",
                    "description",
                    "workflow_type",
                    "prompt",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(document=yaml_docs, raw=st.text(max_size=120))
def test_random_workflow_yaml_gives_validation_errors_only(document: object, raw: str) -> None:
    problems: list[str] = []
    for text in (yaml.safe_dump(document), raw):
        for model in (Workflow, AgentProfile):
            try:
                parse_text(text, Path("fuzz.yaml"), model)
            except WorkflowError as exc:  # the only exception allowed out
                problems.append(str(exc))
    assert all(problem.startswith("fuzz.yaml") for problem in problems)
