"""Retrieval and context fusion on real files, git history and SQLite: the grounding check refuses what is
not where it claims to be, duplicates go, the budget holds, and every source says what it did."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.changes import ChangeSet
from ide.settings import Settings
from ide.workflows.fusion import describe_reranker, fuse, grounding_problem
from ide.workflows.loader import load_catalog
from ide.workflows.queries import queries_from_failure, queries_from_task
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from ide.workflows.snippets import Snippet
from ide.workflows.sources import RunMemory
from tests.support.fake_ollama import FakeOllama
from tests.support.git import git

CLI_MAIN = "def main(argv=None):"


def test_queries_come_from_the_task_and_the_failure() -> None:
    queries = queries_from_task("add a --version flag to greeter/cli.py using `parse_args`")
    assert queries[:3] == ["parse_args", "greeter/cli.py", "version"]
    assert "add" not in queries and "flag" in queries
    failure = (
        'File "greeter/cli.py", line 9, in main\n'
        "AttributeError: module 'greeter' has no attribute 'VERSION'\nE   assert 2 == 0"
    )
    queries = queries_from_failure(failure)
    assert queries[:3] == ["VERSION", "main", "cli.py"]
    assert "AttributeError" in queries


def test_grounding_rejects_a_fabricated_snippet_and_accepts_real_and_proposed_text(cli_project: Path) -> None:
    cli = (cli_project / "greeter" / "cli.py").read_text().splitlines()
    line = cli.index(CLI_MAIN) + 1
    real = Snippet("code_index", "greeter/cli.py", line, line, CLI_MAIN)
    assert grounding_problem(real, cli_project) is None
    fabricated = Snippet("code_index", "greeter/cli.py", line, line, "def main(argv, verbose=True):")
    assert "does not hold this text" in (grounding_problem(fabricated, cli_project) or "")
    moved = Snippet("code_index", "greeter/cli.py", 1, 1, CLI_MAIN)
    assert "it is elsewhere in the file" in (grounding_problem(moved, cli_project) or "")
    missing = Snippet("code_index", "greeter/auth.py", 1, 1, "def login():")
    assert "does not exist" in (grounding_problem(missing, cli_project) or "")
    # Text the agent proposed (in the change set) is where the change set says it is.
    changeset = ChangeSet(cli_project)
    changeset.edit("greeter/cli.py", CLI_MAIN, "def main(argv=None, *, out=None):")
    proposed = Snippet("code_index", "greeter/cli.py", line, line, "def main(argv=None, *, out=None):")
    assert grounding_problem(proposed, cli_project, changeset) is None
    assert grounding_problem(proposed, cli_project) is not None
    commit = git(cli_project, "log", "-n1", "--format=%h").strip()
    assert (
        grounding_problem(Snippet("git_history", f"git:{commit}", 0, 0, "greeter 1.2.0"), cli_project) is None
    )
    fake_commit = Snippet("git_history", f"git:{commit}", 0, 0, "add OAuth login")
    assert grounding_problem(fake_commit, cli_project) == "not in that commit's message"


async def test_fusion_drops_duplicates_and_fabrications_and_keeps_the_budget(cli_project: Path) -> None:
    settings = Settings()
    readme = (cli_project / "README.md").read_text()
    usage = readme[readme.index("## Usage") :].rstrip("\n")
    start = readme[: readme.index("## Usage")].count("\n") + 1
    snippets = [
        Snippet("document_sections", "README.md", start, start + usage.count("\n"), usage, "greeter > Usage"),
        Snippet("document_sections", "README.md", start, start + usage.count("\n"), usage, "greeter > Usage"),
        Snippet("code_index", "greeter/cli.py", 1, 1, '"""greeter\'s command line."""'),
        Snippet("code_index", "greeter/cli.py", 3, 3, "import click"),
    ]
    fused = await fuse(
        snippets, "usage greeter NAME", budget_tokens=1000, root=cli_project, settings=settings
    )
    assert fused.dropped_duplicates == 1
    assert fused.rejected == [("greeter/cli.py:3-3", "greeter/cli.py:3-3 does not hold this text")]
    assert [s.attribution() for s in fused.snippets] == ["README.md#greeter > Usage", "greeter/cli.py:1-1"]
    assert fused.reranker == "bm25" and "no reranker" in fused.reranker_note
    assert "[README.md#greeter > Usage]" in fused.render()
    tight = await fuse(snippets, "usage", budget_tokens=20, root=cli_project, settings=settings)
    assert tight.tokens <= 20 and tight.dropped_over_budget >= 1


async def test_embedding_rerank_through_ollama_and_the_fallback_when_it_is_down(cli_project: Path) -> None:
    texts = {
        "README.md": (cli_project / "README.md").read_text(),
        "greeter/cli.py": (cli_project / "greeter" / "cli.py").read_text(),
    }
    snippets = [Snippet("document_sections", path, 0, 0, text) for path, text in texts.items()]
    with FakeOllama(responses=[]) as server:
        settings = Settings.model_validate(
            {"llm": {"ollama_host": server.url}, "workflows": {"embedding_model": "ollama:nomic-embed-text"}}
        )
        assert describe_reranker(settings) == "embeddings (ollama:nomic-embed-text)"
        fused = await fuse(
            snippets, "argparse parser main argv", budget_tokens=5000, root=cli_project, settings=settings
        )
        assert fused.reranker == "embeddings (ollama:nomic-embed-text)"
        assert fused.snippets[0].path == "greeter/cli.py"
        assert any(r.path == "/api/embed" for r in server.requests)
    down = Settings.model_validate(
        {
            "llm": {"ollama_host": "http://127.0.0.1:9"},
            "workflows": {"embedding_model": "ollama:nomic-embed-text"},
        }
    )
    fused = await fuse(
        snippets, "argparse parser main argv", budget_tokens=5000, root=cli_project, settings=down
    )
    assert fused.reranker == "bm25" and "failed" in fused.reranker_note
    assert fused.snippets[0].path == "greeter/cli.py"


async def test_sources_report_what_they_did(cli_project: Path) -> None:
    docs = cli_project / "docs" / "adr"
    docs.mkdir(parents=True)
    (docs / "0001-argparse.md").write_text(
        "# Use argparse\n\n## Decision\n\nThe CLI uses argparse, not click.\n"
    )
    settings = Settings()
    memory = RunMemory(cli_project, settings)
    memory.record(
        "add --quiet", "feature_with_iterative_testing", "code_generation", True, "argparse flag clash"
    )
    catalog = load_catalog(None)
    agent = RetrievalAgent(cli_project, settings, memory=memory)
    discussion = catalog.get("architecture_discussion").retrieval_strategy_config
    result = await agent.retrieve(
        RetrievalRequest(
            task="should the CLI move from argparse to click?",
            stage_name="architectural_analysis",
            strategy=discussion,
            is_code=False,
        )
    )
    reports = {r.name: r for r in result.sources}
    assert reports["decision_log_search"].snippets == 2  # the record and its Decision section
    assert any(s.title == "Use argparse > Decision" for s in result.snippets)
    assert reports["document_semantic_search"].available
    assert reports["memory"].snippets == 1
    assert not reports["web_search"].available
    assert "[workflows.sources.web_search] command" in reports["web_search"].reason
    # A code workflow without an open index says so instead of skipping quietly.
    feature = catalog.get("feature_with_iterative_testing").retrieval_strategy_config
    result = await agent.retrieve(
        RetrievalRequest(
            task="add a --version flag", stage_name="code_generation", strategy=feature, is_code=True
        )
    )
    reports = {r.name: r for r in result.sources}
    assert reports["codebase_semantic_search"].reason == "the code index is not open for this workspace"
    assert reports["lsp_tools"].available and "on demand" in reports["lsp_tools"].reason
    assert "cve_database" not in reports  # only triggered for the security_review stage
    assert reports["git_history"].available
    # Every snippet found passes the grounding check.
    for snippet in result.snippets:
        assert grounding_problem(snippet, cli_project, None, memory) is None, snippet.attribution()


async def test_a_broken_plugin_source_is_reported_not_raised(cli_project: Path) -> None:
    settings = Settings.model_validate({"workflows": {"sources": {"web_search": {"command": ["false"]}}}})
    feature = load_catalog(None).get("feature_with_iterative_testing").retrieval_strategy_config
    result = await RetrievalAgent(cli_project, settings).retrieve(
        RetrievalRequest(task="add a flag", stage_name="code_generation", strategy=feature, is_code=True)
    )
    web = next(r for r in result.sources if r.name == "web_search")
    assert not web.available and web.reason.startswith("failed: RuntimeError: false exited with 1")


def _section(path: Path, rel: str, text: str) -> Snippet:
    """A snippet of ``text`` where it stands in ``path`` (lines counted, so it grounds)."""
    content = path.read_text()
    start = content[: content.index(text)].count("\n") + 1
    return Snippet("code_index", rel, start, start + text.count("\n"), text)


async def test_near_duplicates_go_and_the_higher_priority_copy_stays(tmp_path: Path) -> None:
    words = " ".join(f"word{n}" for n in range(40))
    near = words.replace("word20", "changed")
    (tmp_path / "a.md").write_text(f"{words}\n")
    (tmp_path / "b.md").write_text(f"{near}\n")
    (tmp_path / "c.md").write_text("something else entirely about refunds\n")
    low = Snippet("code_index", "a.md", 1, 1, words, weight=0.4)
    high = Snippet("code_index", "b.md", 1, 1, near, weight=1.0)
    other = Snippet("code_index", "c.md", 1, 1, "something else entirely about refunds")

    fused = await fuse([low, high, other], "word20", budget_tokens=5000, root=tmp_path, settings=Settings())

    assert fused.dropped_near_duplicates == 1
    assert sorted(s.path for s in fused.snippets) == ["b.md", "c.md"]


async def test_the_budget_skips_what_does_not_fit_and_still_takes_smaller_snippets(tmp_path: Path) -> None:
    big = "refund " * 400
    (tmp_path / "big.txt").write_text(big + "\n")
    (tmp_path / "small.txt").write_text("refund policy: whole cents\n")
    snippets = [
        Snippet("code_index", "big.txt", 1, 1, big),
        Snippet("code_index", "small.txt", 1, 1, "refund policy: whole cents"),
    ]

    fused = await fuse(snippets, "refund", budget_tokens=200, root=tmp_path, settings=Settings())

    assert [s.path for s in fused.snippets] == ["small.txt"]
    assert fused.snippets[0].text == "refund policy: whole cents"  # whole, never cut
    assert fused.dropped_over_budget == 1 and 0 < fused.tokens <= 200


async def test_bm25_puts_the_relevant_snippet_first(tmp_path: Path) -> None:
    texts = {
        "install.md": "Install with pip and run the server on port 8080.",
        "refunds.md": "Refunds are rounded to whole cents before the order total is returned.",
        "logging.md": "Logs go to stderr; set LOG_LEVEL to change the verbosity.",
    }
    for rel, text in texts.items():
        (tmp_path / rel).write_text(text + "\n")
    snippets = [Snippet("code_index", rel, 1, 1, text) for rel, text in texts.items()]

    fused = await fuse(
        snippets, "why is the refund rounded", budget_tokens=5000, root=tmp_path, settings=Settings()
    )

    assert fused.reranker == "bm25"
    assert fused.snippets[0].path == "refunds.md"


async def test_memory_and_repo_map_snippets_are_grounded_too(cli_project: Path) -> None:
    settings = Settings()
    memory = RunMemory(cli_project, settings)
    memory.record("add --quiet", "feature_with_iterative_testing", "code_generation", True, "flag clash")
    (row,) = memory.search("quiet flag")
    assert grounding_problem(row, cli_project, None, memory) is None
    forged = Snippet("memory", row.path, 0, 0, row.text.replace("flag clash", "all tests passed"))
    assert grounding_problem(forged, cli_project, None, memory) is not None

    real_map = Snippet("repo_map", "repo-map", 0, 0, "greeter/cli.py:\n  def main(argv=None)")
    assert grounding_problem(real_map, cli_project) is None
    invented = Snippet("repo_map", "repo-map", 0, 0, "greeter/cli.py:\n  def main(argv=None, verbose=False)")
    assert "verbose" in (grounding_problem(invented, cli_project) or "")
    missing = Snippet("repo_map", "repo-map", 0, 0, "greeter/auth.py:\n  def login()")
    assert grounding_problem(missing, cli_project) is not None


async def test_a_snippet_with_its_own_fence_stays_one_block(tmp_path: Path) -> None:
    text = "Run it:\n\n```\ngreeter Ada\n```"
    (tmp_path / "README.md").write_text(text + "\n")

    fused = await fuse(
        [Snippet("code_index", "README.md", 1, 5, text)],
        "run",
        budget_tokens=500,
        root=tmp_path,
        settings=Settings(),
    )

    rendered = fused.render()
    assert rendered.startswith("[README.md:1-5] (code_index)\n````\n")
    assert rendered.endswith("\n```\n````")


async def test_a_cross_encoder_that_is_not_installed_is_named_with_the_fix(tmp_path: Path) -> None:
    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    (tmp_path / "a.md").write_text("refunds\n")
    settings = Settings.model_validate({"workflows": {"reranker": "cross-encoder:BAAI/bge-reranker-base"}})

    fused = await fuse(
        [Snippet("code_index", "a.md", 1, 1, "refunds")],
        "refunds",
        budget_tokens=100,
        root=tmp_path,
        settings=settings,
    )

    assert fused.reranker == "bm25"
    assert "sentence-transformers" in fused.reranker_note and "pip install" in fused.reranker_note
    assert describe_reranker(settings).startswith("bm25")


async def test_the_retrieval_model_can_write_the_queries(
    cli_project: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    from ide.llm import ModelRouter

    script = write_script([{"role": "retrieval", "content": '{"queries": ["ArgumentParser", "prog"]}'}])
    settings = Settings.model_validate(
        {"llm": {"model": f"scripted:{script}"}, "workflows": {"retrieval_queries": "model"}}
    )
    router = ModelRouter(settings, base_dir=cli_project)
    feature = load_catalog(None).get("feature_with_iterative_testing").retrieval_strategy_config
    result = await RetrievalAgent(cli_project, settings, router=router).retrieve(
        RetrievalRequest(
            task="add a --version flag", stage_name="code_generation", strategy=feature, is_code=True
        )
    )
    assert result.queries[:2] == ["ArgumentParser", "prog"]
    assert "version" in result.queries  # the heuristic terms follow the model's
    assert router.usage_snapshot()["retrieval"].calls == 1
