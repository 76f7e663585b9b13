"""The retrieval sources one by one, built as RetrievalSources builds them, without the agent."""

from __future__ import annotations

from pathlib import Path

from ide.settings import Settings
from ide.workflows.history import GitHistory, git_output
from ide.workflows.ranking import Bm25, bm25_scores, tokenize
from ide.workflows.retrieval import RetrievalRequest
from ide.workflows.schema import RetrievalStrategy
from ide.workflows.sources import DocumentSource, RetrievalSources, WorkspaceFiles
from tests.support.git import git


def request() -> RetrievalRequest:
    return RetrievalRequest(task="t", stage_name="s", strategy=RetrievalStrategy(), is_code=True)


def test_tokens_split_snake_and_camel_case_and_keep_the_whole_word() -> None:
    words = ["parse_args", "parse", "args", "readconfig", "read", "config"]
    assert tokenize("parse_args readConfig") == words


def test_bm25_ranks_the_document_that_names_the_query_first() -> None:
    documents = ["rounding of refunds", "the parser reads arguments", "refunds refunds cents"]
    scores = Bm25(documents).scores("refunds cents")
    assert scores.index(max(scores)) == 2 and scores[1] == 0.0
    assert bm25_scores("anything", []) == []


def test_git_history_finds_a_commit_by_its_message_and_by_what_its_diff_adds(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "commit", "-qm", "Refunds: round to whole cents")
    (tmp_path / "a.py").write_text("x = 1\nround_cents = 2\n")
    git(tmp_path, "commit", "-qam", "Tidy")
    found = GitHistory(tmp_path).search(["refunds", "round_cents"])
    subjects = [snippet.title for snippet in found]
    assert set(subjects) == {"Refunds: round to whole cents", "Tidy"}
    assert all(snippet.path.startswith("git:") for snippet in found)
    assert git_output(tmp_path, "log", "-n", "1", "--format=%s") == "Tidy\n"


def test_git_output_is_none_where_git_fails(tmp_path: Path) -> None:
    assert git_output(tmp_path, "rev-parse", "--verify", "no-such-ref") is None


def test_each_document_kind_searches_its_own_documents(tmp_path: Path) -> None:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "README.md").write_text("# Refunds\nRefunds are rounded.\n")
    (tmp_path / "docs" / "adr" / "0001-refunds.md").write_text("# Refunds\nWe round refunds.\n")
    (tmp_path / "design-spec.md").write_text("# Refunds\nRefunds round to cents.\n")
    documents = DocumentSource(WorkspaceFiles(tmp_path, Settings()))
    paths = {
        kind: {s.path for s in documents.search(["refunds"], kind, request())}
        for kind in ("document_sections", "decision_records", "specifications")
    }
    assert paths["document_sections"] == {"README.md", "docs/adr/0001-refunds.md", "design-spec.md"}
    assert paths["decision_records"] == {"docs/adr/0001-refunds.md"}
    assert paths["specifications"] == {"design-spec.md"}


def test_the_sources_say_why_one_is_unavailable(tmp_path: Path) -> None:
    sources = RetrievalSources(WorkspaceFiles(tmp_path, Settings()))
    finder, reason = sources.finder("code_index", request())
    assert finder is None and reason == "the code index is not open for this workspace"
    finder, reason = sources.finder("memory", request())
    assert finder is None and reason == "the run memory could not be opened"
    finder, reason = sources.finder("web_search", request())
    assert finder is None and reason.startswith("web_search is not configured")
    assert sources.finder("decision_log_search", request())[0] is not None
