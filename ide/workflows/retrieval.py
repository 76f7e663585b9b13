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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ide.settings import Settings
from ide.workflows.queries import MAX_QUERIES, dedupe, queries_from_failure, queries_from_task
from ide.workflows.schema import RagSource, RetrievalStrategy
from ide.workflows.snippets import PER_SOURCE, Snippet
from ide.workflows.sources import CODE_SOURCES, LSP_SOURCES, RetrievalSources, RunMemory, WorkspaceFiles

if TYPE_CHECKING:
    from ide.changes import ChangeSet
    from ide.codeintel.index import CodeIndex
    from ide.search.base import Router

MAX_QUERY_CHARS = 80
"""A model-written query longer than this is cut (queries are search terms, not prose)."""
MODEL_QUERIES = MAX_QUERIES - 4
"""Model-written queries kept at most: the task's own leading terms always follow them."""


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
    query_source: str = "heuristic"
    """Who wrote the queries: ``model`` (the retrieval model's, then the heuristic terms) or ``heuristic``."""
    notes: list[str] = field(default_factory=list)
    """What the user should know about this retrieval, e.g. a model answer that could not be used."""


class RetrievalAgent:
    """Runs a workflow's retrieval strategy for one stage (see the module docstring): writes the queries,
    runs its :class:`~ide.workflows.sources.RetrievalSources` concurrently and reports on each."""

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
        self.settings = settings
        self.router = router
        self.sources = RetrievalSources(WorkspaceFiles(Path(root), settings, changeset), index, memory)

    async def retrieve(self, request: RetrievalRequest) -> RetrievalResult:
        queries, query_source, notes = await self._queries(request)
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
            query_source,
            notes,
        )

    def model_writes_queries(self) -> bool:
        """Whether the retrieval model writes this agent's queries: always with ``retrieval_queries =
        model``; with ``auto`` when ``llm.retrieval`` names a model of its own that has not fallen back to
        the default model in this session; never with ``heuristic`` or without a router."""
        choice = self.settings.workflows.retrieval_queries
        if self.router is None or choice == "heuristic":
            return False
        if choice == "model":
            return True
        own = (self.settings.llm.retrieval or "").strip()
        return bool(own) and "retrieval" not in (getattr(self.router, "fallbacks", None) or {})

    async def _queries(self, request: RetrievalRequest) -> tuple[list[str], str, list[str]]:
        """(queries, who wrote them, notes): the retrieval model's terms first when it writes them (see
        :meth:`model_writes_queries`), then the heuristic ones; a model answer that fails or times out
        leaves the heuristic terms and a note, never an error."""
        hints = request.strategy.retrieval_hints.focus_on
        if request.failure:
            heuristic = dedupe([*queries_from_failure(request.failure), *queries_from_task(request.task)])
        else:
            heuristic = queries_from_task(request.task, request.guidance, hints)
        if not self.model_writes_queries():
            fell_back = self.settings.workflows.retrieval_queries == "auto" and self.settings.llm.retrieval
            note = "the retrieval model could not be used (see the warning): heuristic queries"
            return heuristic, "heuristic", [note] if fell_back and self.router is not None else []
        from ide.llm.errors import ModelError
        from ide.search.base import StructuredOutputError

        timeout = self.settings.workflows.retrieval_query_timeout_s
        try:
            written = await asyncio.wait_for(self._model_queries(request, hints), timeout)
        except TimeoutError:
            why = f"no answer within {timeout:g} s (workflows.retrieval_query_timeout_s)"
        except (StructuredOutputError, ModelError) as exc:
            why = " ".join(str(exc).split())[:200]
        else:
            if written:
                return dedupe([*written, *heuristic]), "model", ["queries written by the retrieval model"]
            why = "it wrote no usable query"
        return heuristic, "heuristic", [f"retrieval model failed ({why}); used the heuristic queries"]

    async def _model_queries(self, request: RetrievalRequest, hints: list[str]) -> list[str]:
        """The retrieval model's search terms for ``request`` (one line each, at most ``MODEL_QUERIES`` of
        ``MAX_QUERY_CHARS``)."""
        from langchain_core.messages import HumanMessage, SystemMessage
        from pydantic import BaseModel, Field

        from ide.search.base import ask_structured

        class Queries(BaseModel):
            queries: list[str] = Field(description="search terms: identifiers, file names, phrases")

        assert self.router is not None
        about = f"Failure to fix:\n{request.failure}" if request.failure else f"Stage: {request.stage_name}"
        answer, _ = await ask_structured(
            self.router,
            "retrieval",
            [
                SystemMessage(
                    "Write search queries for a code and document search that help with this task: "
                    "identifiers, file names and short phrases likely to appear in the relevant code and "
                    "documents, most specific first."
                ),
                HumanMessage(f"Task: {request.task}\n{about}\nFocus on: {', '.join(hints)}"),
            ],
            Queries,
        )
        cleaned = [" ".join(q.split())[:MAX_QUERY_CHARS] for q in answer.queries if isinstance(q, str)]
        return [q for q in cleaned if len(q) >= 2][:MODEL_QUERIES]

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
        finder, reason = self.sources.finder(name, request)
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
