"""The two workflow files printed in seed 003, kept verbatim in seed_examples/: they validate as they are,
and the architecture discussion's settings take the code tools away from its agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.workflows.agents import allowed_tools
from ide.workflows.loader import check_file, load_catalog
from ide.workflows.schema import Workflow

SEEDS = Path(__file__).parent / "seed_examples"
SHIPPED = Path(__file__).resolve().parents[2] / "workflows"


@pytest.mark.parametrize("name", ["feature_with_iterative_testing", "architecture_discussion"])
def test_the_seed_examples_validate_verbatim(name: str) -> None:
    shipped = load_catalog(dirs=[SHIPPED])
    workflow, problems = check_file(SEEDS / f"{name}.yaml", Workflow, shipped.profiles)
    assert problems == []
    assert workflow is not None and workflow.name == name


def test_the_seed_architecture_discussion_offers_no_code_tools() -> None:
    """Issue 21: its analysis agent (lsp_integration off, ast_parsing off, mcp_tools: []) was offered
    find_symbol, file_outline, repo_map and the lsp_* tools."""
    workflow, _ = check_file(SEEDS / "architecture_discussion.yaml", Workflow)
    assert workflow is not None
    profile = load_catalog(dirs=[SHIPPED]).profiles["analysis"]
    stage = workflow.stages[0]
    ref = stage.parallel_agents[0]
    available = [*profile.tools, "web__fetch"]  # plus a tool of an MCP server the session has
    names = allowed_tools(profile, ref.mcp_tools, available, workflow.retrieval_strategy_config)
    assert names == ["read_file", "list_dir", "grep"]
