"""``arbor workflows validate`` reports every problem of a file in one run, each with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.cli import main
from ide.workflows.loader import BUILTIN_DIR, check_file, load_catalog
from ide.workflows.schema import Workflow

THREE_ERRORS = """metadata:
  name: three
  workflow_type: code_fix
stages:
  - stage_id: 1
    name: fix
    parallel_agents: [{agent: code_agent}]
    routing:
      next_stage_on_success: 7
      max_attempts: "many"
"""

LOOP = """metadata:
  name: loop
  description: two stages that only send work to each other
  workflow_type: code_fix
stages:
  - stage_id: 1
    name: write
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: 2, next_stage_on_failure: 1}
  - stage_id: 2
    name: check
    parallel_agents: [{agent: test_agent}]
    routing: {next_stage_on_success: 1, next_stage_on_failure: 2}
  - stage_id: 3
    name: never_reached
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: DONE}
"""


def validate(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = main(["workflows", "validate", *map(str, paths)])
    out = capsys.readouterr()
    return code, out.err.splitlines(), out.out


def test_three_errors_are_reported_in_one_run_sorted_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "three.yaml"
    path.write_text(THREE_ERRORS)
    code, errors, out = validate([path], capsys)
    assert code == 1 and out == ""
    assert [e.split(": ", 2)[:2] for e in errors] == [
        [f"{path}:1", "metadata.description"],
        [f"{path}:9", "stages.0.routing.next_stage_on_success"],
        [f"{path}:10", "stages.0.routing.max_attempts"],
    ]
    assert "7 is neither a stage_id (1) nor DONE or ABORT" in errors[1]
    assert "valid integer" in errors[2]


def test_a_routing_loop_without_exit_is_reported_and_not_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(LOOP)
    code, errors, _ = validate([path], capsys)
    assert code == 1
    assert errors == [
        f"{path}:9: stages.0.routing: stages 1, 2 route only among themselves: "
        "DONE and ABORT cannot be reached from them"
    ]
    # The runtime refuses it too: a workflow that can never finish is not loaded.
    folder = tmp_path / "wf"
    folder.mkdir()
    (folder / "loop.yaml").write_text(LOOP)
    catalog = load_catalog(None, dirs=[BUILTIN_DIR, folder])
    assert "loop" not in catalog.workflows
    assert [str(p) for p in catalog.problems] == [errors[0].replace(str(path), str(folder / "loop.yaml"))]


def test_an_unknown_agent_profile_is_reported_unless_given_beside_the_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wizard.yaml"
    path.write_text(
        LOOP.replace("name: loop", "name: wizard").replace("agent: test_agent", "agent: wizard_agent")
    )
    path.write_text(path.read_text().replace("next_stage_on_failure: 2}", "next_stage_on_failure: ABORT}"))
    code, errors, _ = validate([path], capsys)
    assert code == 1
    assert len(errors) == 1 and errors[0].startswith(
        f"{path}:12: stages.1.parallel_agents.0.agent: no agent profile 'wizard_agent'; there are: "
    )
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "wizard.yaml").write_text("name: wizard\nprompt: Cast spells in {root}.\ntools: [read_file]\n")
    code, errors, out = validate([path, agents], capsys)
    assert (code, errors) == (0, [])
    assert f"{agents / 'wizard.yaml'}: ok" in out and f"{path}: ok" in out


def test_an_unknown_tool_in_a_profile_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    profile = agents / "wizard.yaml"
    profile.write_text(
        "name: wizard\nprompt: Cast spells.\ntools: [read_file, get_signature,\n        summon_familiar]\n"
        "architecture: telepathy\n"
    )
    code, errors, _ = validate([profile], capsys)
    assert code == 1
    assert [e.split(": ", 2)[:2] for e in errors] == [
        [f"{profile}:4", "tools.2"],
        [f"{profile}:5", "architecture"],
    ]
    assert errors[0].startswith(f"{profile}:4: tools.2: no tool 'summon_familiar'; there are: ")
    assert "read_file" in errors[0]  # the message lists the tools there are


def test_a_valid_file_and_the_shipped_workflows_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(LOOP.replace("next_stage_on_failure: 2}", "next_stage_on_failure: ABORT}"))
    code, errors, out = validate([good, BUILTIN_DIR], capsys)
    assert (code, errors) == (0, [])
    shipped = sorted(BUILTIN_DIR.rglob("*.yaml"))
    assert len(shipped) == 11
    assert sorted(out.splitlines()) == sorted(f"{p}: ok" for p in [good, *shipped])
    workflow, problems = check_file(good, Workflow)
    assert problems == [] and workflow is not None and workflow.name == "loop"


def test_a_withheld_stage_tool_is_reported_beside_a_routing_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The routing check used to stop the schema's checks, hiding the mcp_tools contradiction until the
    route was fixed: both come in one run."""
    path = tmp_path / "both.yaml"
    path.write_text(
        THREE_ERRORS.replace('max_attempts: "many"', "max_attempts: 1")
        .replace("workflow_type: code_fix\n", "description: d\n  workflow_type: code_fix\n")
        .replace(
            "parallel_agents: [{agent: code_agent}]",
            "parallel_agents: [{agent: code_agent, mcp_tools: [lsp_get_type]}]",
        )
        .replace("stages:", "retrieval_strategy_config:\n  lsp_integration: {enabled: false}\nstages:")
    )
    code, errors, _ = validate([path], capsys)
    assert code == 1
    assert [e.split(": ", 2)[1] for e in errors] == [
        "stages.0.parallel_agents.0.mcp_tools.0",
        "stages.0.routing.next_stage_on_success",
    ]
    assert "lsp_get_type is never offered in this workflow: lsp_integration.enabled is false" in errors[0]
