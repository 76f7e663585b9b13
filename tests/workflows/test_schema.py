"""Workflow files: the shipped ones load, errors name file, line and field, and the CLI says the same."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.cli import main
from ide.workflows.loader import WorkflowError, load_catalog, parse_text
from ide.workflows.plan import StageDecision, assemble_plan
from ide.workflows.schema import Workflow

GOOD = """metadata:
  name: tiny
  description: one stage
  workflow_type: code_fix
stages:
  - stage_id: 1
    name: fix
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: DONE}
"""
ROUTING = "routing: {next_stage_on_success: DONE}"


def test_the_shipped_workflows_and_profiles_load() -> None:
    catalog = load_catalog(None)
    assert catalog.problems == []
    assert set(catalog.workflows) == {
        "feature_with_iterative_testing",
        "architecture_discussion",
        "bugfix",
        "investigate",
        "refactor",
    }
    assert set(catalog.profiles) == {"code", "test", "security", "formatter", "analysis", "documentation"}
    assert catalog.profiles["security"].read_only and catalog.profiles["code"].role == "agent.code"


@pytest.mark.parametrize(
    ("text", "line", "where", "words"),
    [
        (
            GOOD.replace(ROUTING, "routing: {next_stage_on_success: 9}"),
            9,
            "stages.0.routing.next_stage_on_success",
            "neither a stage_id",
        ),
        (
            GOOD.replace("    name: fix\n", "    name: fix\n    reqired: false\n"),
            8,
            "stages.0.reqired",
            "unknown field",
        ),
        # a missing field: the line of the mapping that lacks it
        (GOOD.replace("workflow_type: code_fix\n", ""), 1, "metadata.workflow_type", "Field required"),
        (
            GOOD.replace(ROUTING, "routing: {next_stage_on_success: DONE, max_attempts: 0}"),
            9,
            "stages.0.routing.max_attempts",
            "greater than or equal to 1",
        ),
        (GOOD.replace("stages:", "stages: [\n"), 7, "", "not valid YAML"),
        ("- just\n- a list\n", 1, "", "expected a mapping"),
    ],
)
def test_errors_name_the_line_and_field(text: str, line: int, where: str, words: str) -> None:
    with pytest.raises(WorkflowError) as caught:
        parse_text(text, Path("/ws/.arbor/workflows/tiny.yaml"), Workflow)
    error = caught.value
    assert (error.line, error.where) == (line, where), str(error)
    assert words in str(error)
    assert str(error).startswith(f"/ws/.arbor/workflows/tiny.yaml:{line}: ")


def test_a_workspace_workflow_sits_beside_a_shipped_one_and_a_broken_one_is_reported(
    tmp_path: Path,
) -> None:
    # A repository's workflow never replaces a shipped one of the same name (tests/security/test_trust.py).
    folder = tmp_path / ".arbor" / "workflows"
    folder.mkdir(parents=True)
    (folder / "bugfix.yaml").write_text(GOOD.replace("name: tiny", "name: bugfix"))
    (folder / "broken.yaml").write_text(GOOD.replace("code_agent", "wizard_agent"))
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.workflows["workspace.bugfix"].stages] == ["fix"]
    assert catalog.origins["workspace.bugfix"] == folder / "bugfix.yaml"
    assert [s.name for s in catalog.workflows["bugfix"].stages] == ["reproduce", "fix", "verify"]
    assert "tiny" not in catalog.workflows
    [problem] = catalog.problems
    assert str(problem).startswith(
        f"{folder / 'broken.yaml'}:8: stages.0.parallel_agents.0.agent: no agent profile"
    )


def test_cli_validate_list_and_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("next_stage_on_success: DONE", "next_stage_on_sucess: DONE"))
    assert main(["workflows", "validate", str(good)]) == 0
    assert main(["workflows", "validate", str(good), str(bad)]) == 1
    out = capsys.readouterr()
    assert f"{good}: ok" in out.out
    assert f"{bad}:9: stages.0.routing" in out.err
    assert main(["workflows", "list", "--workspace", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert "feature_with_iterative_testing" in [w["name"] for w in listed["workflows"]]
    assert main(["workflows", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "stages" in schema["properties"] and "AgentProfile" in schema["$defs"]


@pytest.mark.parametrize(
    ("decisions", "order", "success_of_2"),
    [
        ({}, ["1", "2"], "DONE"),  # 3 and 4 skipped: 2 → 3 → 4 → DONE
        ({"3": True}, ["1", "2", "3"], "3"),
        ({"4": True}, ["1", "2", "4"], "4"),
        ({"3": True, "4": True}, ["1", "2", "3", "4"], "3"),
    ],
)
def test_plan_assembly_includes_optional_stages_and_routes_around_skipped_ones(
    decisions: dict[str, bool], order: list[str], success_of_2: str
) -> None:
    workflow = load_catalog(None).get("feature_with_iterative_testing")
    plan = assemble_plan(workflow, {k: StageDecision(include=v, reason="r") for k, v in decisions.items()})
    assert plan.order == order and plan.entry == "1"
    assert plan.routing_table["2"].next_on_success == success_of_2
    assert plan.routing_table["2"].next_on_failure == "1"
    assert plan.routing_table["2"].tests_must_pass
    assert plan.task_context["1"].token_budget == 30000
    assert set(plan.skipped) == {"3", "4"} - {k for k, v in decisions.items() if v}
    if "3" in order:
        assert plan.routing_table["3"].next_on_failure == "1"


async def test_the_orchestrator_decides_stages_by_name_and_falls_back_by_pattern(
    tmp_path: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from ide.llm import ModelRouter
    from ide.settings import Settings
    from ide.workflows.orchestrator import select_workflow

    workflows = load_catalog(None).workflows
    answer = {
        "workflow": "refactor",
        "reason": "renames",
        "stages": [{"stage_id": "lint_and_format", "include": True}],
    }
    script = write_script(
        [
            {"role": "orchestrator", "content": json.dumps(answer)},
            {"role": "orchestrator", "content": "I think a bugfix"},
            {"role": "orchestrator", "content": "still no JSON"},
        ]
    )
    router = ModelRouter(Settings.model_validate({"llm": {"model": f"scripted:{script}"}}), base_dir=tmp_path)
    chosen = await select_workflow(router, "rename Order.total to Order.sum", workflows)
    assert (chosen.workflow.name, chosen.chosen_by, chosen.reason) == ("refactor", "orchestrator", "renames")
    assert chosen.decisions["4"].include  # named by the stage's name, not its id
    fallback = await select_workflow(router, "add a --version flag to the CLI", workflows)
    assert fallback.chosen_by == "fallback" and fallback.workflow.name == "feature_with_iterative_testing"
    assert "unusable" in fallback.reason and "matches the task" in fallback.reason
    assert all(not d.include for d in fallback.decisions.values())


BROKEN_YAML = [
    "a: [1, 2\nb: 3\n",
    "a: b: c\n",
    "- a\nb: 1\n",
    "a: 'x\n",
    "\tkey: 1\n",
    "{x: 1\n",
    "a: *nope\n",
    "a: !!python/object/apply:os.system [x]\n",
    "k: |\n  x\n y\n",
    "",
    "- just\n- a list\n",
]


def test_one_fast_parse_gives_what_two_pure_python_parses_gave(tmp_path: Path) -> None:
    """The catalog parses each file once with libyaml (and keeps it by text); the models, nodes' lines and
    error messages are those of PyYAML's pure-Python compose + safe_load, which it replaced."""
    import yaml

    from ide.workflows import loader

    def pure(text: str) -> tuple[Any, Any]:
        try:
            return yaml.compose(text, Loader=yaml.SafeLoader), yaml.safe_load(text)
        except yaml.YAMLError as exc:
            return None, str(exc)

    def lines(node: Any) -> list[tuple[str, int, int]]:
        if node is None:
            return []
        found = [(type(node).__name__, node.start_mark.line, node.end_mark.line)]
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                found += lines(key) + lines(value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                found += lines(item)
        return found

    assert loader._FAST_LOADER is yaml.CSafeLoader, "PyYAML without libyaml: the fast path is not tested"
    shipped = [
        p for d in loader.search_dirs(None) for p in loader._yaml_files(d) + loader._yaml_files(d / "agents")
    ]
    texts = [p.read_text() for p in shipped] + [GOOD, *BROKEN_YAML]
    assert len(shipped) >= 10
    for text in texts:
        loader._parsed.cache_clear()
        node, data = pure(text)
        try:
            fast_node, fast_data = loader._parsed(text)
        except yaml.YAMLError as exc:
            fast_node, fast_data = None, str(exc)
        assert fast_data == data, text
        assert lines(fast_node) == lines(node), text
        again = loader._parsed(text) if node is not None else None
        assert again is None or again[1] is fast_data  # kept: a second read parses nothing
    for text in BROKEN_YAML:
        path = tmp_path / "w.yaml"
        path.write_text(text)
        with pytest.raises(WorkflowError) as caught:
            parse_text(text, path, Workflow)
        assert "not valid YAML" in str(caught.value) or "expected a mapping" in str(caught.value)
