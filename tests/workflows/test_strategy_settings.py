"""Each workflow strategy setting acts: ``ast_parsing`` (index_level, languages, node_kinds, enabled),
``rag_strategy.chunk_strategy`` and a stage's ``mcp_tools``. Every test compares the setting with its
default over a real workspace (git, tree-sitter index, documents, a real MCP server process), so it fails
when the setting is ignored."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from acp.schema import McpServerStdio

from ide.codeintel.index import CodeIndex
from ide.codeintel.index.model import DefinitionKind
from ide.llm.errors import ModelError
from ide.settings import Settings
from ide.tools import ToolServices, builtin_tool_names
from ide.tools.mcp import McpConnection, ToolAsk, connect
from ide.workflows.agents import run_agent
from ide.workflows.fusion import grounding_problem
from ide.workflows.loader import WorkflowError, parse_text
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest, RetrievalResult
from ide.workflows.schema import AgentProfile, NodeKind, RetrievalStrategy, Workflow, workflow_json_schema
from ide.workflows.snippets import Snippet
from tests.support.code_index import indexed
from tests.support.git import git
from tests.support.runs import scripted_run

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "mcp_fixture.py"

PRICING = '''"""Prices."""

TAX_RATE = 20


class PriceBook:
    """Prices by product."""

    def price_of(self, product):
        return self.prices[product]


def apply_discount(total, percent):
    """A total less a percentage."""
    cut = total * percent // 100
    return total - cut
'''

PRICING_TS = """export const TAX_RATE = 20;

export function apply_discount(total: number, percent: number): number {
  return total - Math.floor((total * percent) / 100);
}
"""

FILLER = "".join(f"def helper_{n}():\n    return {n}\n\n\n" for n in range(90))
"""360 lines of small functions: a file longer than a whole-file snippet may be."""

GUIDE = """# Pricing guide

## Discounts

A discount takes a percentage off the total.

Discounts never make a total negative.

## Taxes

Tax is added after the discount.
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "pricing-project"
    (root / "shop").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "shop" / "pricing.py").write_text(PRICING)
    (root / "shop" / "helpers.py").write_text(
        FILLER + "def apply_discount_rounding(total):\n    return total\n"
    )
    (root / "web" / "pricing.ts").write_text(PRICING_TS)
    (root / "GUIDE.md").write_text(GUIDE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Pricing")
    return root


@pytest.fixture
def index(shop: Path, tmp_path: Path) -> Iterator[CodeIndex]:
    yield from indexed(shop, tmp_path)


def strategy(source: str, **settings: Any) -> RetrievalStrategy:
    """A strategy with one source; ``settings`` are dotted paths: ``ast_parsing.index_level="file"``."""
    data: dict[str, Any] = {"rag_strategy": {"sources": [{"name": source}]}}
    for dotted, value in settings.items():
        section, key = dotted.split("__")
        data.setdefault(section, {})[key] = value
    return RetrievalStrategy.model_validate(data)


async def retrieve(
    root: Path, task: str, strategy: RetrievalStrategy, index: CodeIndex | None, *, is_code: bool = True
) -> RetrievalResult:
    request = RetrievalRequest(task=task, stage_name="code_generation", strategy=strategy, is_code=is_code)
    return await RetrievalAgent(root, Settings(), index=index).retrieve(request)


def code(result: RetrievalResult) -> list[Snippet]:
    return [s for s in result.snippets if s.source == "code_index"]


def lines_of(root: Path, rel: str) -> list[str]:
    return (root / rel).read_text().split("\n")


def assert_grounded(root: Path, snippets: list[Snippet]) -> None:
    for snippet in snippets:
        assert grounding_problem(snippet, root) is None, snippet.attribution()


# -- ast_parsing.index_level ----------------------------------------------------------------------


async def test_index_level_file_gives_each_hit_file_whole(shop: Path, index: CodeIndex) -> None:
    task = "apply_discount should round"
    by_definition = code(await retrieve(shop, task, strategy("code_index"), index))
    by_file = code(await retrieve(shop, task, strategy("code_index", ast_parsing__index_level="file"), index))

    discount = next(s for s in by_definition if s.path == "shop/pricing.py")
    assert discount.text.startswith("def apply_discount(total, percent):")
    whole = next(s for s in by_file if s.path == "shop/pricing.py")
    assert (whole.start_line, whole.text) == (1, PRICING.rstrip("\n"))
    assert whole.attribution() == f"shop/pricing.py:1-{whole.end_line} (whole file)"
    assert len([s for s in by_file if s.path == "shop/pricing.py"]) == 1  # one snippet per file
    assert_grounded(shop, by_file)


async def test_a_whole_file_snippet_of_a_long_file_is_cut_and_says_so(shop: Path, index: CodeIndex) -> None:
    found = code(
        await retrieve(
            shop, "apply_discount_rounding", strategy("code_index", ast_parsing__index_level="file"), index
        )
    )

    helpers = next(s for s in found if s.path == "shop/helpers.py")
    total = len(lines_of(shop, "shop/helpers.py")) - 1  # the file ends with a newline
    assert (helpers.start_line, helpers.end_line) == (1, 300)
    assert helpers.title == f"whole file, first 300 of {total} lines"
    assert helpers.attribution() == f"shop/helpers.py:1-300 (whole file, first 300 of {total} lines)"
    assert_grounded(shop, [helpers])


# -- rag_strategy.chunk_strategy ------------------------------------------------------------------


async def test_chunk_strategy_fixed_lines_gives_windows_of_chunk_lines(shop: Path, index: CodeIndex) -> None:
    task = "apply_discount_rounding"
    semantic = code(await retrieve(shop, task, strategy("code_index"), index))
    windows = code(
        await retrieve(
            shop,
            task,
            strategy("code_index", rag_strategy__chunk_strategy="fixed_lines", rag_strategy__chunk_lines=12),
            index,
        )
    )

    rounding = next(s for s in semantic if s.title == "apply_discount_rounding")
    assert rounding.text == "def apply_discount_rounding(total):\n    return total"
    window = next(s for s in windows if s.title == "apply_discount_rounding")
    assert window.end_line - window.start_line + 1 == 12
    assert window.start_line < rounding.start_line <= window.end_line
    assert "def helper_89():" in window.text and rounding.text in window.text
    assert_grounded(shop, windows)


async def test_chunk_strategy_file_gives_whole_files_and_documents(shop: Path, index: CodeIndex) -> None:
    whole = strategy("code_index", rag_strategy__chunk_strategy="file")
    found = code(await retrieve(shop, "apply_discount", whole, index))
    assert next(s for s in found if s.path == "shop/pricing.py").text == PRICING.rstrip("\n")

    docs = await retrieve(
        shop, "discount percentage", strategy("doc_retrieval", rag_strategy__chunk_strategy="file"), index
    )
    [guide] = [s for s in docs.snippets if s.path == "GUIDE.md"]
    assert guide.text == GUIDE.rstrip("\n") and guide.attribution() == "GUIDE.md:1-11 (whole file)"
    assert_grounded(shop, [guide])


async def test_chunk_strategy_paragraphs_cuts_documents_at_blank_lines(shop: Path) -> None:
    task = "discounts never make a total negative"
    sections = await retrieve(shop, task, strategy("doc_retrieval"), None, is_code=False)
    paragraphs = await retrieve(
        shop, task, strategy("doc_retrieval", rag_strategy__chunk_strategy="paragraphs"), None, is_code=False
    )

    assert sections.snippets[0].text.startswith("## Discounts\n")
    best = paragraphs.snippets[0]
    assert best.text == "Discounts never make a total negative."
    assert best.title == "Pricing guide > Discounts ¶2"
    assert best.attribution() == "GUIDE.md#Pricing guide > Discounts ¶2"
    assert not any(s.text.startswith("#") for s in paragraphs.snippets)  # headings name, not fill, snippets
    assert_grounded(shop, paragraphs.snippets)


async def test_chunk_strategy_fixed_lines_windows_documents(shop: Path) -> None:
    windowed = strategy(
        "doc_retrieval", rag_strategy__chunk_strategy="fixed_size", rag_strategy__chunk_lines=5
    )
    found = await retrieve(shop, "discount discounts tax", windowed, None, is_code=False)

    guide = [s for s in found.snippets if s.path == "GUIDE.md"]
    assert sorted((s.start_line, s.end_line) for s in guide) == [(1, 5), (6, 10), (11, 11)]
    assert_grounded(shop, guide)


@pytest.mark.parametrize("value", ["semantic_functions", "semantic_sections", "semantic", "sections"])
async def test_the_seed_chunk_strategies_cut_by_structure(shop: Path, value: str) -> None:
    found = await retrieve(
        shop, "tax", strategy("doc_retrieval", rag_strategy__chunk_strategy=value), None, is_code=False
    )

    assert found.snippets[0].title == "Pricing guide > Taxes"
    assert found.snippets[0].text == "## Taxes\n\nTax is added after the discount."


def test_an_unknown_chunk_strategy_is_refused_with_the_valid_values() -> None:
    text = MINIMAL.replace("retrieval_strategy_config: {}", RAG.format(chunk="by_magic"))
    with pytest.raises(WorkflowError) as caught:
        parse_text(text, Path("/ws/.arbor/workflows/tiny.yaml"), Workflow)
    assert caught.value.where == "retrieval_strategy_config.rag_strategy.chunk_strategy"
    assert "'semantic_functions'" in str(caught.value) and "'paragraphs'" in str(caught.value)


# -- ast_parsing.languages / node_kinds / enabled -------------------------------------------------


async def test_languages_keep_only_the_named_languages_definitions(shop: Path, index: CodeIndex) -> None:
    task = "apply_discount"
    every = {s.path for s in code(await retrieve(shop, task, strategy("code_index"), index))}
    typescript = code(
        await retrieve(shop, task, strategy("code_index", ast_parsing__languages=["TypeScript"]), index)
    )

    assert {"shop/pricing.py", "web/pricing.ts"} <= every
    assert typescript and {s.path for s in typescript} == {"web/pricing.ts"}


async def test_node_kinds_keep_only_the_named_kinds(shop: Path, index: CodeIndex) -> None:
    task = "PriceBook price_of TAX_RATE apply_discount"
    every = {s.title for s in code(await retrieve(shop, task, strategy("code_index"), index))}
    classes = code(
        await retrieve(shop, task, strategy("code_index", ast_parsing__node_kinds=["class"]), index)
    )

    assert {"PriceBook", "PriceBook.price_of", "apply_discount"} <= every
    assert [s.title for s in classes] == ["PriceBook"]


def test_an_unknown_language_or_kind_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown language 'klingon'.*python"):
        RetrievalStrategy.model_validate({"ast_parsing": {"languages": ["python", "klingon"]}})
    with pytest.raises(ValueError, match="'function', 'method'"):
        RetrievalStrategy.model_validate({"ast_parsing": {"node_kinds": ["gizmo"]}})


def test_node_kinds_are_the_kinds_the_index_records() -> None:
    assert set(get_args(NodeKind)) == set(get_args(DefinitionKind))


async def test_ast_parsing_off_reports_the_code_source_unavailable(shop: Path, index: CodeIndex) -> None:
    on = await retrieve(shop, "apply_discount", strategy("code_index"), index)
    off = await retrieve(shop, "apply_discount", strategy("code_index", ast_parsing__enabled=False), index)

    assert code(on) and on.sources[0].available
    assert off.snippets == []
    [report] = off.sources
    assert not report.available and "ast_parsing.enabled is false" in report.reason


# -- mcp_tools ------------------------------------------------------------------------------------


@pytest.fixture
async def tickets() -> AsyncIterator[McpConnection]:
    """The tools of a real MCP server process (tests/support/mcp_fixture.py: ticket_status)."""
    server = McpServerStdio(name="tickets", command=sys.executable, args=[str(FIXTURE)], env=[])
    connection = await connect([server], builtin_tool_names())
    assert connection.connected == ["tickets"], connection.failed

    async def allow(ask: ToolAsk) -> Any:
        return "once"

    connection.ask = allow
    yield connection
    await connection.aclose()


CALL_TICKET = {"tool_calls": [{"name": "ticket_status", "args": {"ticket": "ARB-7"}}]}
DONE = {"content": json.dumps({"status": "done", "summary": "looked"})}
ANSWER = "ARB-7: open, assigned to Ada, due Friday"


async def run_stage_agent(
    workspace: Path,
    script: Path,
    connection: McpConnection,
    mcp_tools: list[str],
    *,
    read_only: bool = False,
) -> tuple[Any, list[tuple[str, str]]]:
    """The agent's report and (label, observation or thought) of its node's children."""
    run = scripted_run(workspace, script, architecture="workflow", task="ARB-7?")
    run.ctx.services = ToolServices(extra=tuple(connection.tools))
    profile = AgentProfile(
        name="code", prompt="You work in {root}.", tools=["read_file"], read_only=read_only
    )
    try:
        report = await run_agent(
            run.ctx,
            profile,
            branch=run.ctx.changeset,
            brief="ARB-7?",
            extra_tools=mcp_tools,
            parent=None,
            max_steps=3,
        )
    except ModelError as exc:
        report = exc  # the scripted model refuses a call to a tool it was not offered
    nodes = run.ctx.recorder.tree.nodes
    [agent] = [n.id for n in nodes.values() if n.label == "code agent"]
    children = [(n.label, n.observation or n.thought or "") for n in nodes.values() if n.parent == agent]
    return report, children


NOT_OFFERED = (
    'calls tool "ticket_status", which this call (role "agent.code") does not offer; tools offered: read_file'
)


@pytest.mark.parametrize(
    ("mcp_tools", "offered"),
    [(["*"], True), (["ticket_*"], True), (["ticket_status", "lsp_get_type"], True), ([], False)],
)
async def test_mcp_tools_decide_which_mcp_server_tools_a_stage_agent_gets(
    git_workspace: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    tickets: McpConnection,
    mcp_tools: list[str],
    offered: bool,
) -> None:
    report, children = await run_stage_agent(
        git_workspace, write_script([CALL_TICKET, DONE]), tickets, mcp_tools
    )

    if offered:
        assert not report.failed
        assert ("ticket_status", ANSWER) in children
    else:
        assert isinstance(report, ModelError) and NOT_OFFERED in str(report)


def test_an_absent_mcp_tools_means_every_mcp_server_tool() -> None:
    stage = Workflow.model_validate(parse_dict(MINIMAL)).stages[0]
    assert stage.parallel_agents[0].mcp_tools == ["*"]
    assert workflow_json_schema()["$defs"]["AgentRef"]["properties"]["mcp_tools"]["default"] == ["*"]


async def test_mcp_tools_no_tool_has_is_noted_in_the_tree(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path], tickets: McpConnection
) -> None:
    tools = ["jira_lookup", "github__*", "ticket_status"]
    report, children = await run_stage_agent(git_workspace, write_script([DONE]), tickets, tools)

    assert not report.failed
    [note] = [text for label, text in children if label == "mcp_tools"]
    assert "jira_lookup is neither an Arbor tool nor a tool of this session's MCP servers" in note
    assert "github__* matches no tool of this session's MCP servers" in note
    assert "ticket_status" not in note


async def test_a_read_only_stage_agent_gets_no_mcp_server_tool(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path], tickets: McpConnection
) -> None:
    script = write_script([CALL_TICKET, DONE])
    report, children = await run_stage_agent(
        git_workspace, script, tickets, ["ticket_status"], read_only=True
    )

    assert ("mcp_tools", "ticket_status: a read-only agent gets no MCP server tools") in children
    assert isinstance(report, ModelError) and NOT_OFFERED in str(report)


def test_mcp_tools_naming_a_tool_the_workflow_withholds_is_refused_at_validation() -> None:
    text = MINIMAL.replace(
        "retrieval_strategy_config: {}", "retrieval_strategy_config:\n  lsp_integration: {enabled: false}"
    )
    text = text.replace("{agent: code_agent}", "{agent: code_agent, mcp_tools: [find_definition]}")
    with pytest.raises(WorkflowError) as caught:
        parse_text(text, Path("/ws/.arbor/workflows/tiny.yaml"), Workflow)
    assert caught.value.where == "stages.0.parallel_agents.0.mcp_tools.0"
    assert "find_definition is never offered in this workflow: lsp_integration.enabled is false" in str(
        caught.value
    )


# -- documentation --------------------------------------------------------------------------------


def test_every_strategy_setting_is_described_in_the_schema() -> None:
    defs = workflow_json_schema()["$defs"]
    for model, field in [
        ("AstParsing", "enabled"),
        ("AstParsing", "index_level"),
        ("AstParsing", "languages"),
        ("AstParsing", "node_kinds"),
        ("LspIntegration", "enabled"),
        ("RagStrategy", "chunk_strategy"),
        ("RagStrategy", "chunk_lines"),
        ("RetrievalHints", "avoid"),
        ("AgentRef", "mcp_tools"),
    ]:
        assert len(defs[model]["properties"][field].get("description", "")) > 40, f"{model}.{field}"


MINIMAL = """metadata:
  name: tiny
  description: one stage
  workflow_type: code_fix
retrieval_strategy_config: {}
stages:
  - stage_id: 1
    name: fix
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: DONE}
"""
RAG = "retrieval_strategy_config:\n  rag_strategy: {{chunk_strategy: {chunk}}}"


def parse_dict(text: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(text)
