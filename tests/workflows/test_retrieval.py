"""The retrieval agent over a real workspace: a git repository, a real code index, real documents, real
SQLite memory and real plugin processes. Each source must find the right thing, and report (never raise,
never skip silently) when it cannot."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.settings import Settings, SourceSettings
from ide.workflows.queries import queries_from_failure, queries_from_task
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest, RetrievalResult
from ide.workflows.schema import RagSource
from ide.workflows.sources import RunMemory
from tests.support.git import git
from tests.support.retrieval_shop import strategy


async def retrieve(
    root: Path,
    task: str,
    *sources: str | RagSource,
    is_code: bool = True,
    stage: str = "code_generation",
    settings: Settings | None = None,
    failure: str | None = None,
    **agent: Any,
) -> RetrievalResult:
    request = RetrievalRequest(
        task=task, stage_name=stage, strategy=strategy(*sources), is_code=is_code, failure=failure
    )
    return await RetrievalAgent(root, settings or Settings(), **agent).retrieve(request)


def report(result: RetrievalResult, name: str) -> Any:
    return next(r for r in result.sources if r.name == name)


def lines_of(root: Path, rel: str, start: int, end: int) -> str:
    return "\n".join((root / rel).read_text().split("\n")[start - 1 : end])


# -- queries --------------------------------------------------------------------------------------


def test_queries_from_a_task_keep_identifiers_flags_files_and_meaningful_words() -> None:
    queries = queries_from_task("add a --version flag to the CLI")
    assert any("version" in q for q in queries)
    assert {"add", "a", "to", "the"}.isdisjoint(q.lower() for q in queries)

    queries = queries_from_task('Fix `parse_config` so ConfigLoader.load reads settings.toml for "dry run"')
    assert {"parse_config", "settings.toml", "dry run"} <= set(queries)
    assert any(q.startswith("ConfigLoader") for q in queries)
    assert {"so", "for"}.isdisjoint(q.lower() for q in queries)
    # Identifiers come before plain words; the list is deterministic and capped.
    assert queries.index("parse_config") < queries.index(next(q for q in queries if q.lower() == "reads"))
    long_task = " ".join(f"word{n} name_{n}" for n in range(40))
    assert len(queries_from_task(long_task)) <= 12
    assert queries_from_task(long_task) == queries_from_task(long_task)


def test_queries_from_a_failure_name_what_broke() -> None:
    failure = """\
Traceback (most recent call last):
  File "/home/me/greeter/greeter/cli.py", line 14, in main
    print(get_version())
NameError: name 'get_version' is not defined
greeter/cli.py:14: in main
E       assert result.exit_code == 0
"""
    queries = queries_from_failure(failure)
    assert "get_version" in queries
    assert "NameError" in queries
    assert "main" in queries
    assert any("cli.py" in q for q in queries)
    assert any("exit_code" in q for q in queries)
    assert len(queries) <= 12


# -- code -----------------------------------------------------------------------------------------


async def test_code_source_returns_the_definition_a_task_names_with_its_source_lines(
    shop: Path, index: CodeIndex
) -> None:
    result = await retrieve(
        shop, "refund should use sum_prices in cents", "codebase_semantic_search", index=index
    )

    assert result.mode == "upfront"
    code = [s for s in result.snippets if s.source == "code_index"]
    refund = next(s for s in code if s.title.endswith("refund"))
    assert refund.path == "shop/cart.py"
    assert refund.text.startswith("def refund(order):")
    assert refund.text == lines_of(shop, "shop/cart.py", refund.start_line, refund.end_line)
    assert refund.attribution() == f"shop/cart.py:{refund.start_line}-{refund.end_line}"
    assert any(s.title.endswith("sum_prices") and s.path == "shop/models.py" for s in code)
    assert report(result, "codebase_semantic_search").available


async def test_code_source_adds_a_repo_map_focused_on_what_the_queries_hit(
    shop: Path, index: CodeIndex
) -> None:
    result = await retrieve(shop, "refund should use sum_prices", "code_index", index=index)

    (repo_map,) = [s for s in result.snippets if s.source == "repo_map"]
    assert "shop/cart.py:" in repo_map.text
    assert "def refund(order)" in repo_map.text


async def test_code_snippets_are_read_through_the_change_set(shop: Path, index: CodeIndex) -> None:
    changeset = ChangeSet(shop)
    changeset.edit(
        "shop/cart.py", "    return -sum_prices(order.items)", "    return -round(sum_prices(order.items))"
    )
    changeset.edit(
        "shop/models.py", "def sum_prices", "def refund_total(order):\n    return 0\n\n\ndef sum_prices"
    )

    result = await retrieve(shop, "refund", "code_index", index=index, changeset=changeset)

    refund = next(s for s in result.snippets if s.source == "code_index" and s.title == "refund")
    assert "-round(sum_prices(order.items))" in refund.text
    # A definition the agent just proposed is found too, at its proposed lines.
    added = next(s for s in result.snippets if s.title == "refund_total")
    assert added.text == "def refund_total(order):\n    return 0"
    assert (
        changeset.read_text("shop/models.py").split("\n")[added.start_line - 1] == "def refund_total(order):"
    )


async def test_lsp_tools_are_on_demand_not_an_upfront_source(shop: Path, index: CodeIndex) -> None:
    result = await retrieve(shop, "refund", "lsp_tools", index=index)

    lsp = report(result, "lsp_tools")
    assert lsp.available and "on demand" in lsp.reason
    assert result.snippets == []


async def test_a_non_code_workflow_never_touches_the_code_index(shop: Path, index: CodeIndex) -> None:
    class WatchedIndex(CodeIndex):
        touched = 0

        def search(self, query: str, limit: int = 50) -> list[Any]:
            WatchedIndex.touched += 1
            return super().search(query, limit)

    watched = WatchedIndex(shop, index.db_path)
    try:
        result = await retrieve(
            shop,
            "refund policy",
            "codebase_semantic_search",
            "lsp_tools",
            "doc_retrieval",
            is_code=False,
            index=watched,
        )
    finally:
        watched.close()

    assert WatchedIndex.touched == 0
    assert {s.source for s in result.snippets} == {"document_sections"}
    for name in ("codebase_semantic_search", "lsp_tools"):
        skipped = report(result, name)
        assert not skipped.available and "code" in skipped.reason


async def test_without_an_index_the_code_source_says_so(shop: Path) -> None:
    result = await retrieve(shop, "refund", "code_index")

    missing = report(result, "code_index")
    assert not missing.available and "index" in missing.reason


# -- documents ------------------------------------------------------------------------------------


async def test_document_retrieval_finds_the_readme_section_and_honours_gitignore(shop: Path) -> None:
    result = await retrieve(shop, "how are refunds rounded", "doc_retrieval", is_code=False)

    best = result.snippets[0]
    assert (best.source, best.path, best.title) == ("document_sections", "README.md", "Shop > Refunds")
    assert best.attribution() == "README.md#Shop > Refunds"
    assert best.text.startswith("## Refunds\n")
    assert best.text == lines_of(shop, "README.md", best.start_line, best.end_line)
    assert all(not s.path.startswith("build/") for s in result.snippets)


async def test_restructuredtext_sections_have_their_heading_path(shop: Path) -> None:
    result = await retrieve(shop, "when do parcels ship", "document_semantic_search", is_code=False)

    guide = next(s for s in result.snippets if s.path == "docs/guide.rst")
    assert guide.title == "Guide > Shipping"
    assert "Parcels ship on weekdays." in guide.text


async def test_decision_log_search_reads_only_decision_records(shop: Path) -> None:
    result = await retrieve(shop, "store money as cents", "decision_log_search", is_code=False)

    assert result.snippets
    assert {s.path for s in result.snippets} == {"docs/adr/0003-money-as-cents.md"}
    assert {s.source for s in result.snippets} == {"decision_records"}
    assert any(s.title.endswith("> Decision") for s in result.snippets)


async def test_specification_search_reads_only_specs(shop: Path) -> None:
    result = await retrieve(shop, "receipt total in cents", "specification_search", is_code=False)

    assert {s.path for s in result.snippets} == {"docs/spec-checkout.md"}
    assert result.snippets[0].title == "Checkout specification > Receipts"


# -- git history ----------------------------------------------------------------------------------


async def test_git_history_finds_the_commit_whose_message_matches(shop: Path) -> None:
    result = await retrieve(shop, "refunds lose a cent when rounding", "git_history")

    best = result.snippets[0]
    short = git(shop, "rev-parse", "--short", "HEAD").strip()
    assert best.path == f"git:{short}" and best.attribution() == f"git:{short}"
    assert best.title == "Refunds: round to whole cents"
    assert "Summing float prices lost a cent" in best.text
    assert best.start_line == 0


async def test_git_history_finds_a_commit_whose_diff_mentions_the_name(shop: Path) -> None:
    result = await retrieve(shop, "apply_discount returns the wrong value", "git_history")

    assert "Tidy up the cart module" in [s.title for s in result.snippets]


async def test_git_history_outside_a_repository_is_reported_not_raised(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "README.md").write_text("# Plain\n\nNo git here.\n")

    result = await retrieve(plain, "anything at all", "git_history", "doc_retrieval", is_code=False)

    history = report(result, "git_history")
    assert not history.available and "git" in history.reason
    assert report(result, "doc_retrieval").available


# -- memory ---------------------------------------------------------------------------------------


async def test_memory_source_finds_an_earlier_outcome(shop: Path) -> None:
    settings = Settings()
    memory = RunMemory(shop, settings)
    memory.record("rename the exporter", "refactor", "code_generation", False, "renamed Exporter everywhere")
    memory.record("make refunds round to cents", "bugfix", "fix", True, "tests failed: off by one cent")

    result = await retrieve(shop, "refunds are off by a cent", "memory", settings=settings, memory=memory)

    best = result.snippets[0]
    assert best.source == "memory" and best.path.startswith("memory:")
    assert "off by one cent" in best.text
    assert all("Exporter" not in s.text for s in result.snippets[:1])
    assert memory.search("refunds cents")[0].path == best.path


# -- plugins --------------------------------------------------------------------------------------


async def test_an_unconfigured_web_search_is_reported_with_the_fix(shop: Path) -> None:
    result = await retrieve(shop, "refund rules", "web_search", "cve_database")

    web = report(result, "web_search")
    assert not web.available
    assert web.reason == (
        "web_search is not configured: set [workflows.sources.web_search] command = [...] "
        "in your config.toml (a workspace's .arbor/config.toml applies it once you trust the "
        "workspace: arbor trust)"
    )
    assert not report(result, "cve_database").available


async def test_a_configured_plugin_returns_documents_with_their_location(shop: Path) -> None:
    program = (
        "import json, sys\n"
        "print(json.dumps({'location': 'https://example.invalid/refunds', 'title': 'Refund law',"
        " 'text': 'Query was: ' + sys.argv[-1]}))\n"
    )
    settings = Settings()
    settings.workflows.sources["web_search"] = SourceSettings(command=[sys.executable, "-c", program])

    result = await retrieve(shop, "refund law", "web_search", settings=settings)

    (found,) = result.snippets
    assert found.source == "web_search" and found.path == "https://example.invalid/refunds"
    assert found.text.startswith("Query was: ") and "refund" in found.text
    assert report(result, "web_search").snippets == 1


@pytest.mark.parametrize(
    ("program", "timeout_s", "expected"),
    [
        ("import sys; sys.stderr.write('search backend exploded\\n'); sys.exit(3)", 20.0, "exploded"),
        ("import time; time.sleep(30)", 0.3, "0.3"),
    ],
    ids=["crash", "timeout"],
)
async def test_a_failing_plugin_is_reported_and_the_other_sources_still_answer(
    shop: Path, program: str, timeout_s: float, expected: str
) -> None:
    settings = Settings()
    settings.workflows.sources["web_search"] = SourceSettings(
        command=[sys.executable, "-c", program], timeout_s=timeout_s
    )

    result = await retrieve(shop, "refund rules", "web_search", "doc_retrieval", settings=settings)

    web = report(result, "web_search")
    assert not web.available and expected in web.reason
    assert any(s.source == "document_sections" for s in result.snippets)


# -- strategy -------------------------------------------------------------------------------------


async def test_trigger_stages_limit_a_source_to_its_stages(shop: Path) -> None:
    history = RagSource(name="git_history", trigger_stages=["debugging"])

    elsewhere = await retrieve(shop, "refunds round cents", history, "doc_retrieval", stage="code_generation")
    there = await retrieve(shop, "refunds round cents", history, "doc_retrieval", stage="debugging")

    assert not any(s.source == "git_history" for s in elsewhere.snippets)
    assert any(s.source == "git_history" for s in there.snippets)


async def test_snippets_carry_their_source_priority(shop: Path) -> None:
    result = await retrieve(
        shop,
        "refunds round cents",
        RagSource(name="doc_retrieval", priority="HIGH"),
        RagSource(name="git_history", priority="LOW"),
    )

    assert {s.weight for s in result.snippets if s.source == "document_sections"} == {1.0}
    assert {s.weight for s in result.snippets if s.source == "git_history"} == {0.4}


async def test_adaptive_retrieval_queries_from_the_failure(shop: Path, index: CodeIndex) -> None:
    failure = "File \"/x/shop/models.py\", line 9, in sum_prices\nAttributeError: has no attribute 'price'"

    result = await retrieve(shop, "make checkout faster", "code_index", index=index, failure=failure)

    assert result.mode == "adaptive"
    assert "sum_prices" in result.queries
    assert any(s.title.endswith("sum_prices") for s in result.snippets)
