"""The retrieval agent: context for a workflow stage from the sources its workflow names (TART pattern).

The workflow's ``retrieval_strategy_config`` says which sources to use; the agent writes queries from
the task (or, in adaptive mode, from the failure), runs the sources concurrently and returns verbatim,
attributed snippets for :mod:`ide.workflows.fusion`. Offline sources: the code index (definitions and
their source lines), document sections (Markdown / reST headings), decision records (ADR folders),
specifications, git history and the run memory. Any other source name is a plugin configured under
``[workflows.sources.NAME]``; an unconfigured or failing source is reported unavailable with the reason,
never skipped silently. ``lsp_tools`` is not an upfront source: stage agents call the lsp_* tools.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ide.settings import Settings
from ide.workflows.queries import (
    MAX_QUERIES,
    STOPWORDS,
    dedupe,
    queries_from_failure,
    queries_from_task,
    tokenize,
)
from ide.workflows.schema import RagSource, RetrievalStrategy
from ide.workflows.sources import (
    ADR_DIRS,
    ADR_SOURCES,
    CODE_SOURCES,
    DEF_LINES,
    DOC_NAMES,
    DOC_SOURCES,
    DOC_SUFFIXES,
    LSP_SOURCES,
    MIN_SYMBOL_SCORE,
    PER_SOURCE,
    PICKAXE_TERMS,
    PLUGIN_DOCUMENTS,
    REPO_MAP_MAX_FILES,
    SPEC_SOURCES,
    SPEC_WORDS,
    RetrievalSources,
    RunMemory,
    Snippet,
    _git,
    document_sections,
)

if TYPE_CHECKING:
    from ide.changes import ChangeSet
    from ide.codeintel.index import CodeIndex
    from ide.search.base import Router

__all__ = [
    "ADR_DIRS",
    "ADR_SOURCES",
    "CODE_SOURCES",
    "DEF_LINES",
    "DOC_NAMES",
    "DOC_SOURCES",
    "DOC_SUFFIXES",
    "LSP_SOURCES",
    "MAX_QUERIES",
    "MIN_SYMBOL_SCORE",
    "PER_SOURCE",
    "PICKAXE_TERMS",
    "PLUGIN_DOCUMENTS",
    "REPO_MAP_MAX_FILES",
    "SPEC_SOURCES",
    "SPEC_WORDS",
    "STOPWORDS",
    "RetrievalAgent",
    "RetrievalRequest",
    "RetrievalResult",
    "RunMemory",
    "Snippet",
    "SourceReport",
    "_git",
    "document_sections",
    "queries_from_failure",
    "queries_from_task",
    "tokenize",
]


@dataclass
class SourceReport:
    name: str
    available: bool
    reason: str = ""
    snippets: int = 0
    ms: float = 0.0


@dataclass
class RetrievalRequest:
    task: str
    stage_name: str
    strategy: RetrievalStrategy
    is_code: bool
    guidance: str = ""
    focus_files: list[str] = field(default_factory=list)
    failure: str | None = None
    """Adaptive mode: the failure the stage's retry needs context for."""


@dataclass
class RetrievalResult:
    snippets: list[Snippet]
    sources: list[SourceReport]
    queries: list[str]
    mode: Literal["upfront", "adaptive"]


class RetrievalAgent(RetrievalSources):
    """Runs a workflow's retrieval strategy for one stage (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        *,
        changeset: ChangeSet | None = None,
        index: CodeIndex | None = None,
        router: Router | None = None,
        memory: RunMemory | None = None,
    ) -> None:
        self.root = Path(root)
        self.settings = settings
        self.changeset = changeset
        self.index = index
        self.router = router
        self.memory = memory
        self._docs: list[str] | None = None
        self._sections_by_kind: dict[str, tuple[list[Snippet], Any]] = {}
        self._lock = threading.Lock()

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        queries = await self._queries(request)
        avoid = request.strategy.retrieval_hints.avoid
        sources = [
            s
            for s in request.strategy.rag_strategy.sources
            if (not s.trigger_stages or request.stage_name in s.trigger_stages) and s.name not in avoid
        ]
        if not request.strategy.enabled:
            return RetrievalResult(
                [], [SourceReport("retrieval", False, "off in this workflow")], queries, "upfront"
            )
        reports = await asyncio.gather(*(self._run_source(s, queries, request) for s in sources))
        snippets = [snip for _report, found in reports for snip in found if not _avoided(snip.path, avoid)]
        return RetrievalResult(
            snippets,
            [report for report, _found in reports],
            queries,
            "adaptive" if request.failure else "upfront",
        )

    async def _queries(self, request: RetrievalRequest) -> list[str]:
        hints = request.strategy.retrieval_hints.focus_on
        if request.failure:
            heuristic = dedupe([*queries_from_failure(request.failure), *queries_from_task(request.task)])
        else:
            heuristic = queries_from_task(request.task, request.guidance, hints)
        if self.settings.workflows.retrieval_queries != "model" or self.router is None:
            return heuristic
        from langchain_core.messages import HumanMessage, SystemMessage
        from pydantic import BaseModel, Field

        from ide.search.base import StructuredOutputError, ask_structured

        class Queries(BaseModel):
            queries: list[str] = Field(description="search terms: identifiers, file names, phrases")

        about = f"Failure to fix:\n{request.failure}" if request.failure else f"Stage: {request.stage_name}"
        try:
            answer, _ = await ask_structured(
                self.router,
                "retrieval",
                [
                    SystemMessage(
                        "Write search queries for a code and document search that help with this task."
                    ),
                    HumanMessage(f"Task: {request.task}\n{about}\nFocus on: {', '.join(hints)}"),
                ],
                Queries,
            )
        except StructuredOutputError:
            return heuristic
        return dedupe([*answer.queries, *heuristic])

    async def _run_source(
        self, source: RagSource, queries: list[str], request: RetrievalRequest
    ) -> tuple[SourceReport, list[Snippet]]:
        name = source.name
        started = time.perf_counter()
        if name in LSP_SOURCES | CODE_SOURCES and not request.is_code:
            why = "not used by a non-code workflow (no code index, no language servers)"
            return SourceReport(name, False, why), []
        if name in LSP_SOURCES:
            return SourceReport(name, True, "on demand: stage agents call the lsp_* tools"), []
        finder, reason = self._finder(name, request)
        if finder is None:
            return SourceReport(name, False, reason), []
        try:
            found = await asyncio.to_thread(finder, queries)
        except Exception as exc:  # one broken source must not stop the others
            return SourceReport(name, False, f"failed: {type(exc).__name__}: {exc}", ms=_ms(started)), []
        weighted = [
            Snippet(s.source, s.path, s.start_line, s.end_line, s.text, s.title, s.score, source.weight)
            for s in found[:PER_SOURCE]
        ]
        return SourceReport(name, True, "", len(weighted), _ms(started)), weighted


def _avoided(path: str | None, avoid: list[str]) -> bool:
    """Whether ``retrieval_hints.avoid`` names this snippet's path (a prefix such as ``tests/``)."""
    return bool(path) and any(path.startswith(entry) or f"/{entry}" in f"/{path}" for entry in avoid)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
