"""Bad input never kills anything: ``arbor acp`` fed random, malformed and oversized JSON-RPC answers with
errors and keeps serving; random workflow YAML gives validation errors only."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ide.workflows.loader import WorkflowError, parse_text
from ide.workflows.schema import AgentProfile, Workflow
from tests.support.rawwire import RawWire

READ_TIMEOUT_S = 20.0
PING_IDS = itertools.count(10_001)
"""Ids of the pings, above any the fuzzer makes, each used once (the wire keeps every answer by id)."""


def assert_alive(wire: RawWire) -> None:
    """Prove the backend still serves: a well-formed initialize gets its answer."""
    reply = wire.request(next(PING_IDS), "initialize", {"protocolVersion": 1}, timeout=READ_TIMEOUT_S)
    assert "result" in reply, reply


@pytest.fixture(scope="module")
def raw_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawWire]:
    """``arbor acp`` over raw pipes: what is written is exactly what the fuzzer made."""
    wire = RawWire(os.environ.copy(), tmp_path_factory.mktemp("fuzz") / "backend.stderr")
    assert_alive(wire)
    yield wire
    assert wire.close() == 0


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
def test_random_json_rpc_never_kills_or_hangs_the_backend(raw_backend: RawWire, batch: list[bytes]) -> None:
    raw_backend.write(b"\n".join(batch) + b"\n")
    assert_alive(raw_backend)


def test_an_oversized_line_is_refused_and_the_backend_goes_on(raw_backend: RawWire) -> None:
    huge = {"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"text": "x" * 60_000_000}}
    raw_backend.write_json(huge)
    assert_alive(raw_backend)


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
