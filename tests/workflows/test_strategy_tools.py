"""A workflow's lsp_integration.enabled and ast_parsing.enabled decide which tools its stage agents get."""

from __future__ import annotations

from ide.workflows.agents import allowed_tools
from ide.workflows.schema import AgentProfile, RetrievalStrategy

AVAILABLE = ["read_file", "find_symbol", "file_outline", "repo_map", "lsp_find_definition", "lsp_get_type"]
PROFILE = AgentProfile(name="architect", prompt="You discuss architecture.", tools=AVAILABLE, read_only=True)


def test_lsp_disabled_offers_no_lsp_tools() -> None:
    strategy = RetrievalStrategy.model_validate({"lsp_integration": {"enabled": False}})
    names = allowed_tools(PROFILE, [], AVAILABLE, strategy)
    assert names == ["read_file", "find_symbol", "file_outline", "repo_map"]


def test_ast_parsing_disabled_offers_no_index_tools() -> None:
    strategy = RetrievalStrategy.model_validate({"ast_parsing": {"enabled": False}})
    names = allowed_tools(PROFILE, [], AVAILABLE, strategy)
    assert names == ["read_file", "lsp_find_definition", "lsp_get_type"]


def test_enabled_settings_keep_every_tool() -> None:
    assert allowed_tools(PROFILE, [], AVAILABLE, RetrievalStrategy()) == AVAILABLE


def test_the_schemas_index_tool_names_are_the_index_tools() -> None:
    """ast_parsing.enabled: false withholds exactly the tools ide.tools.index provides."""
    from ide.tools import builtin_tool_names
    from ide.tools.index import INDEX_TOOLS

    off = RetrievalStrategy.model_validate({"ast_parsing": {"enabled": False}})
    withheld = {name for name in builtin_tool_names() if off.withheld(name) == "ast_parsing.enabled is false"}
    assert withheld == {spec.name for spec in INDEX_TOOLS}
