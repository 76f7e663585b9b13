"""Retrieval that judges what it found (issue 21, item 7), over real git repositories, a real code index and
real SQLite memory, with FakeOllama as the retrieval model: who writes the queries (``auto``), a failed model
answer falling back to the heuristic terms, the relevance threshold, and the consistency check whose
``⚠ conflicting: …`` flags reach the text a stage agent reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.llm import ModelRouter
from ide.search.base import RunContext
from ide.search.tree import TreeRecorder
from ide.settings import Settings
from ide.tools import ToolServices
from ide.workflows.conflicts import find_conflicts
from ide.workflows.fusion import FusedContext, fuse
from ide.workflows.loader import load_catalog
from ide.workflows.plan import StageDecision, assemble_plan
from ide.workflows.queries import queries_from_task
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest, RetrievalResult
from ide.workflows.runner import WorkflowRun
from ide.workflows.schema import RagSource, RetrievalStrategy
from ide.workflows.snippets import Snippet
from ide.workflows.sources import RunMemory
from tests.support.code_index import indexed
from tests.support.fake_ollama import FakeOllama
from tests.support.git import git

RETRIEVER = "retriever:1b"
MODELS = {RETRIEVER: {"context_length": 8192}}

FETCH = '''"""Downloads for the ledger."""


def fetch(url, timeout=10):
    """Download ``url``; give up after ``timeout`` seconds."""
    return url, timeout
'''

LEGACY = '''"""The old ledger totals, kept for the importer."""


def ledger_total(entries):
    return sum(entries)
'''

BOOK = '''"""The ledger book."""


def ledger_total(entries):
    return sum(e for e in entries if e)
'''

README = """# Ledger

Keeps a household ledger.

## Fetching rates

`fetch` downloads the exchange rates. `timeout` defaults to 30 seconds.
"""

ADR_OLD = """# 3. Store money as integer cents

## Decision

Amounts are integer cents everywhere.
"""

ADR_NEW = """# 7. Store money as integer cents

## Decision

Amounts are Decimal values with two places.
"""

TASK = "make fetch retry when the timeout expires"


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """A git repository: code (one function defined twice), a README that states a default the code does
    not have, and two decision records with one title that decide differently."""
    root = tmp_path / "ledger-project"
    (root / "ledger").mkdir(parents=True)
    (root / "docs" / "adr").mkdir(parents=True)
    (root / "ledger" / "__init__.py").write_text("")
    (root / "ledger" / "fetch.py").write_text(FETCH)
    (root / "ledger" / "legacy.py").write_text(LEGACY)
    (root / "ledger" / "book.py").write_text(BOOK)
    (root / "README.md").write_text(README)
    (root / "docs" / "adr" / "0003-money.md").write_text(ADR_OLD)
    (root / "docs" / "adr" / "0007-money.md").write_text(ADR_NEW)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Ledger: fetch rates, totals")
    return root


@pytest.fixture
def index(ledger: Path, tmp_path: Path) -> Iterator[CodeIndex]:
    yield from indexed(ledger, tmp_path)


def strategy(*sources: str) -> RetrievalStrategy:
    listed = [RagSource(name=name).model_dump() for name in sources]
    return RetrievalStrategy.model_validate({"rag_strategy": {"sources": listed}})


def request(task: str = TASK, *sources: str) -> RetrievalRequest:
    return RetrievalRequest(
        task=task,
        stage_name="code_generation",
        strategy=strategy(*(sources or ("doc_retrieval",))),
        is_code=True,
    )


def settings_with(server: FakeOllama | None, script: Path | None = None, **workflows: Any) -> Settings:
    llm: dict[str, Any] = {"model": f"scripted:{script}" if script else f"ollama:{RETRIEVER}"}
    if server is not None:
        llm |= {"ollama_host": server.url, "retrieval": f"ollama:{RETRIEVER}", "retry_backoff_s": 0}
    return Settings.model_validate({"llm": llm, "workflows": workflows})


async def judged(
    root: Path, task: str, *sources: str, settings: Settings | None = None, **agent: Any
) -> tuple[RetrievalResult, FusedContext]:
    """What the retrieval agent found for ``task`` and the context fusion made of it."""
    settings = settings or Settings()
    result = await RetrievalAgent(root, settings, **agent).retrieve(request(task, *sources))
    fused = await fuse(
        result.snippets,
        task,
        budget_tokens=8000,
        root=root,
        settings=settings,
        changeset=agent.get("changeset"),
        memory=agent.get("memory"),
    )
    return result, fused


# -- who writes the queries -------------------------------------------------------------------------


async def test_auto_lets_the_retrieval_model_write_the_queries_only_when_one_is_configured(
    ledger: Path, write_script: Any
) -> None:
    answer = {"queries": ["fetch", "retry_after"]}
    heuristic = queries_from_task(TASK, "", [])
    with FakeOllama(responses=[{"json": answer, "content": "{}"}], models=MODELS) as server:
        settings = settings_with(server)
        assert settings.workflows.retrieval_queries == "auto"
        router = ModelRouter(settings, base_dir=ledger)
        result = await RetrievalAgent(ledger, settings, router=router).retrieve(request())
        assert result.queries[:2] == ["fetch", "retry_after"]
        assert result.query_source == "model" and "queries written by the retrieval model" in result.notes
        assert [body["model"] for body in server.chat_bodies] == [RETRIEVER]

        # `heuristic` still forces the heuristic terms, with the retrieval model configured.
        forced = settings_with(server, retrieval_queries="heuristic")
        result = await RetrievalAgent(ledger, forced, router=ModelRouter(forced)).retrieve(request())
        assert result.queries == heuristic and result.query_source == "heuristic"
        assert len(server.chat_bodies) == 1

    # No model of its own for the retrieval role: auto asks nobody (the script has no line to give).
    script = write_script([])
    plain = settings_with(None, script)
    router = ModelRouter(plain, base_dir=ledger)
    result = await RetrievalAgent(ledger, plain, router=router).retrieve(request())
    assert result.queries == heuristic and result.query_source == "heuristic" and result.notes == []
    assert "retrieval" not in router.usage_snapshot()

    # `model` still forces the model: llm.model answers for the retrieval role. A long answer is bounded:
    # eight model terms, each one line of at most 80 characters, then the task's own leading terms.
    terms = ["rates  \n now", *(f"term{n}" for n in range(20))]
    script = write_script([{"role": "retrieval", "content": json.dumps({"queries": terms})}])
    forced = settings_with(None, script, retrieval_queries="model")
    router = ModelRouter(forced, base_dir=ledger)
    result = await RetrievalAgent(ledger, forced, router=router).retrieve(request())
    assert result.queries == ["rates now", *(f"term{n}" for n in range(7)), *heuristic[:4]]
    assert router.usage_snapshot()["retrieval"].calls == 1


@pytest.mark.parametrize(
    ("responses", "timeout_s", "why"),
    [
        ([{"status": 500, "error": "boom"}] * 2, 60.0, "boom"),
        ([{"content": "I would search for the fetch function."}] * 2, 60.0, "malformed"),
        (
            [{"json": {"queries": ["late"]}, "content": "{}", "latency_ms": 4000}],
            0.2,
            "no answer within 0.2 s",
        ),
    ],
    ids=["model-error", "malformed-twice", "timeout"],
)
async def test_a_failed_model_answer_falls_back_to_the_heuristic_queries_with_a_note(
    ledger: Path, responses: list[dict[str, Any]], timeout_s: float, why: str
) -> None:
    with FakeOllama(responses=responses, models=MODELS) as server:
        settings = settings_with(server, retrieval_query_timeout_s=timeout_s)
        router = ModelRouter(settings, base_dir=ledger)
        result = await RetrievalAgent(ledger, settings, router=router).retrieve(
            request(TASK, "doc_retrieval")
        )
    assert result.queries == queries_from_task(TASK, "", [])
    assert result.query_source == "heuristic"
    (note,) = result.notes
    assert note.startswith("retrieval model failed") and why in note and "heuristic queries" in note
    assert any(s.path == "README.md" for s in result.snippets)  # the run went on with the heuristic terms


async def test_a_retrieval_model_that_cannot_be_used_falls_back_once_then_auto_goes_heuristic(
    ledger: Path, write_script: Any
) -> None:
    """The router sends a role whose own model is missing to llm.model, with a warning (issue 21, item 2);
    auto then stops asking a model for queries: the default model is not what the user chose for them."""
    script = write_script([{"role": "retrieval", "content": '{"queries": ["rates"]}'}])
    with FakeOllama(responses=[], models={"other:7b": {}}) as server:
        settings = settings_with(server, script)
        router = ModelRouter(settings, base_dir=ledger)
        agent = RetrievalAgent(ledger, settings, router=router)
        first = await agent.retrieve(request())
        second = await agent.retrieve(request())
    assert first.queries[0] == "rates" and first.query_source == "model"
    assert "retrieval" in router.fallbacks
    assert second.queries == queries_from_task(TASK, "", []) and second.query_source == "heuristic"
    assert second.notes == ["the retrieval model could not be used (see the warning): heuristic queries"]
    assert router.usage_snapshot()["retrieval"].calls == 1


# -- the relevance threshold ------------------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> list[Snippet]:
    snippets = []
    for rel, text in files.items():
        (root / rel).write_text(text + "\n")
        source = "document_sections" if rel.endswith(".md") else "code_index"
        snippets.append(Snippet(source, rel, 1, 1, text))
    return snippets


async def test_snippets_below_the_relevance_threshold_are_dropped_counted_and_the_best_of_a_source_stays(
    tmp_path: Path,
) -> None:
    filler = " ".join(f"filler{n}" for n in range(60))
    snippets = _write(
        tmp_path,
        {
            "refunds.md": "Refunds are rounded to whole cents: a refund returns the order total in cents.",
            "install.md": f"Install with pip. {filler} Ask support about a refund.",
            "weak.py": "# " + " ".join(f"padding{n}" for n in range(60)) + " refund",
            "unrelated.py": "def render_logo(canvas): return canvas",
        },
    )
    query = "why is a refund rounded to whole cents"

    fused = await fuse(snippets, query, budget_tokens=5000, root=tmp_path, settings=Settings())

    assert [s.path for s in fused.snippets] == ["refunds.md", "weak.py"]  # weak.py: best of code_index
    assert fused.below_threshold == {"document_sections": 1, "code_index": 1}
    assert "2 snippets below the relevance threshold (code_index 1, document_sections 1)" in fused.notes()
    keep_all = Settings.model_validate({"workflows": {"min_relevance": 0}})
    everything = await fuse(snippets, query, budget_tokens=5000, root=tmp_path, settings=keep_all)
    assert len(everything.snippets) == 4 and everything.below_threshold == {}


async def test_when_nothing_shares_a_word_with_the_task_the_threshold_keeps_all_and_says_so(
    tmp_path: Path,
) -> None:
    snippets = _write(tmp_path, {"a.md": "Parcels ship on weekdays.", "b.md": "Logs go to stderr."})

    fused = await fuse(snippets, "refund rounding", budget_tokens=5000, root=tmp_path, settings=Settings())

    assert len(fused.snippets) == 2 and fused.below_threshold == {}
    assert any("no snippet scored above 0 for the task" in note for note in fused.notes())


# -- the consistency check --------------------------------------------------------------------------


async def test_a_document_stating_another_default_than_the_code_is_flagged(
    ledger: Path, index: CodeIndex
) -> None:
    _result, fused = await judged(ledger, TASK, "codebase_semantic_search", "doc_retrieval", index=index)

    flags = [c for c in fused.conflicts if "`timeout`" in c]
    assert flags == [
        "⚠ conflicting: README.md#Ledger > Fetching rates says `timeout` defaults to `30`, but "
        "ledger/fetch.py:4-6 has `timeout=10`; the code is what runs — say so if the document is out of date"
    ]
    assert fused.render().startswith(flags[0])
    # Agreeing documents raise nothing: the README brought up to date.
    (ledger / "README.md").write_text(README.replace("30 seconds", "10 seconds"))
    _result, agreed = await judged(ledger, TASK, "codebase_semantic_search", "doc_retrieval", index=index)
    assert not any("`timeout`" in c for c in agreed.conflicts)
    assert any(s.path == "README.md" for s in agreed.snippets)


def test_defaults_are_compared_only_as_literals() -> None:
    """A settings class's attributes (pydantic ``Field``), a signature's parameters and a document's claims:
    numbers compare as numbers, prose ("the current directory") and advice ("set `retries=8`") are no claims,
    and only real differences are flagged."""
    code = [
        Snippet(
            "code_index",
            "app/config.py",
            1,
            3,
            'class Config(BaseModel):\n    timeout_s: float = Field(60.0, gt=0)\n    mode: str = "fast"',
            "Config",
        ),
        Snippet("code_index", "app/db.py", 1, 1, "def open_db(path=None, retries=3): ...", "open_db"),
    ]
    doc = (
        "`timeout_s` defaults to 60 seconds. `mode` defaults to `slow`. `path` defaults to the current "
        "directory. `retries` (default: 5) tries; set `retries=8` on flaky disks (advice, not a default)."
    )
    docs = [Snippet("document_sections", "docs/config.md", 1, 1, doc, "Config")]

    flags = find_conflicts([*code, *docs])

    assert flags == [
        "⚠ conflicting: docs/config.md#Config says `mode` defaults to `slow`, but app/config.py:1-3 has "
        '`mode="fast"`; the code is what runs — say so if the document is out of date',
        "⚠ conflicting: docs/config.md#Config says `retries` defaults to `5`, but app/db.py:1-1 has "
        "`retries=3`; the code is what runs — say so if the document is out of date",
    ]


async def test_a_proposed_definition_that_differs_from_the_indexed_one_is_flagged(
    ledger: Path, index: CodeIndex
) -> None:
    changeset = ChangeSet(ledger)
    before = "def ledger_total(entries):\n    return sum(e for e in entries if e)"
    changeset.edit(
        "ledger/book.py", before, "def ledger_total(entries, *, currency):\n    return sum(entries)"
    )

    _result, fused = await judged(
        ledger, "fix ledger_total", "codebase_semantic_search", index=index, changeset=changeset
    )

    (flag,) = [c for c in fused.conflicts if "`ledger_total`" in c]
    assert flag.startswith("⚠ conflicting: `ledger_total` is defined differently in two places")
    assert "`def ledger_total(entries, *, currency)` at ledger/book.py:4-5 (proposed change)" in flag
    assert "`def ledger_total(entries)` at ledger/legacy.py:4-5" in flag
    assert flag in fused.render()


def test_a_definition_conflict_needs_a_related_place_and_other_parameters() -> None:
    """What a big corpus (the standard library and site-packages) holds and is no conflict: a stub that
    writes the annotations another way, unrelated modules sharing a name, a class and a function of one
    name, private helpers. A vendored copy of the module whose parameters differ is one."""

    def code(path: str, text: str, title: str) -> Snippet:
        return Snippet("code_index", path, 1, 1, text, title)

    quiet = [
        code("asyncio/timeouts.py", "def timeout(delay: Optional[float]) -> Timeout:", "timeout"),
        code("typeshed/asyncio/timeouts.pyi", "def timeout(delay: float | None) -> Timeout: ...", "timeout"),
        code("distro/distro.py", "def version(pretty=False, best=False):", "version"),
        code("platform.py", "def version():", "version"),
        code("ensurepip/__init__.py", "def version():", "version"),
        code("importlib_metadata/__init__.py", "def version(distribution_name):", "version"),
        code("docutils/nodes.py", "class version(Bibliographic, TextElement): pass", "version"),
        code("a.py", "def _helper(x): pass", "_helper"),
        code("b.py", "def _helper(x, y): pass", "_helper"),
    ]
    assert find_conflicts(quiet) == []

    vendored = code("vendor/asyncio/timeouts.py", "def timeout(delay, *, loop=None):", "timeout")
    (flag,) = find_conflicts([*quiet, vendored])
    assert flag.startswith("⚠ conflicting: `timeout` is defined differently in two places")
    assert "`def timeout(delay: Optional[float]) -> Timeout` at asyncio/timeouts.py:1-1 and" in flag
    assert flag.count("vendor/asyncio/timeouts.py:1-1") == 1


async def test_decision_records_with_one_title_that_decide_differently_are_flagged(ledger: Path) -> None:
    _result, fused = await judged(ledger, "store money amounts as integer cents", "decision_log_search")

    (flag,) = fused.conflicts
    assert flag.startswith("⚠ conflicting: two decision records titled '")
    assert "docs/adr/0003-money.md#3. Store money as integer cents > Decision" in flag
    assert "docs/adr/0007-money.md#7. Store money as integer cents > Decision" in flag
    assert "integer cents everywhere" in flag and "Decimal values" in flag


async def test_memory_saying_a_stage_failed_and_passed_is_flagged(ledger: Path) -> None:
    settings = Settings()
    memory = RunMemory(ledger, settings)
    task = "make fetch retry on timeout"
    memory.record(task, "feature_with_iterative_testing", "code_generation", True, "retry loop hung")
    memory.record(task, "feature_with_iterative_testing", "code_generation", False, "retry with backoff")
    memory.record("rename ledger", "refactor", "code_generation", False, "renamed")

    _result, fused = await judged(ledger, task, "memory", settings=settings, memory=memory)

    (flag,) = fused.conflicts
    assert flag.startswith(
        "⚠ conflicting: the run memory says stage code_generation of 'make fetch retry on timeout' failed "
        "(memory:"
    )
    assert ") and passed (memory:" in flag


async def test_the_stage_agent_reads_the_flags_and_the_retrieval_line_counts_them(
    ledger: Path, index: CodeIndex, write_script: Any
) -> None:
    """Upfront retrieval of the feature workflow, as a run does it: the context a stage agent gets starts
    with the flag, and the retrieval node of the tree says what the threshold and the check did."""
    settings = Settings.model_validate({"llm": {"model": f"scripted:{write_script([])}"}})
    thoughts: list[str] = []

    async def progress(event: dict[str, Any]) -> None:
        thoughts.append(str(event.get("text", "")))

    ctx = RunContext(
        task=TASK,
        settings=settings,
        router=ModelRouter(settings, base_dir=ledger),
        changeset=ChangeSet(ledger),
        recorder=TreeRecorder(architecture="workflow"),
        progress=progress,
        services=ToolServices(index=index),
    )
    catalog = load_catalog(None)
    workflow = catalog.get("feature_with_iterative_testing")
    plan = assemble_plan(workflow, {"3": StageDecision(include=False), "4": StageDecision(include=False)})
    run = WorkflowRun(ctx, catalog, workflow, plan)

    context = await run.upfront_context()

    first = context[plan.order[0]]
    assert first.startswith("⚠ conflicting: README.md#Ledger > Fetching rates says `timeout` defaults to")
    nodes = ctx.recorder.tree.nodes.values()
    lines = [n.thought or "" for n in nodes if n.label.startswith("retrieval: ")]
    assert len(lines) == len(plan.order)
    assert all("⚠ 1 conflict flagged to the stage agent" in line for line in lines)
    assert any(line.startswith("Retrieval for ") and "conflict flagged" in line for line in thoughts)
