"""The retrieval sources of a workflow stage, each an object of its own: the code index, the documents
(sections, decision records, specifications), git history (:mod:`ide.workflows.history`), the run memory
and plugins. :class:`RetrievalSources` builds them for one workspace and answers which one serves a
source name."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ide.private import private_file
from ide.settings import Settings
from ide.workflows.history import GitHistory
from ide.workflows.ranking import Bm25, tokenize
from ide.workflows.snippets import PER_SOURCE, Snippet, document_chunks, whole_file

if TYPE_CHECKING:
    from ide.changes import ChangeSet
    from ide.codeintel.index import CodeIndex
    from ide.tools.workspace import Workspace
    from ide.workflows.retrieval import RetrievalRequest

REPO_MAP_MAX_FILES = 3000
"""Up to this many indexed files the code source adds a focused repo map (above, it takes seconds)."""
DEF_LINES = 60
"""Lines of a definition's source a code snippet holds at most."""
MIN_SYMBOL_SCORE = 20.0
"""Index hits scoring lower are fuzzy subsequence guesses ("cli" → "ClientLoader"), not named code."""
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
ADR_DIRS = ("docs/adr", "doc/adr", "adr", "docs/decisions", "doc/decisions", "architecture/decisions")
SPEC_WORDS = ("spec", "rfc", "design", "requirements", "architecture")
DOC_NAMES = ("readme", "changes", "changelog", "history", "news", "contributing", "design", "architecture")

CODE_SOURCES = {"codebase_semantic_search", "code_index", "codebase"}
DOC_SOURCES = {"doc_retrieval", "document_semantic_search", "documentation"}
ADR_SOURCES = {"decision_log_search", "decision_records"}
SPEC_SOURCES = {"specification_search", "specifications"}
LSP_SOURCES = {"lsp_tools"}

PLUGIN_DOCUMENTS: dict[tuple[str, str], str] = {}
"""What plugins returned, by (source, location): the grounding check compares snippets with it."""


def _is_document(rel: str) -> bool:
    """Markdown and reST anywhere; plain text only when it is named like a document or sits in docs/."""
    low = rel.lower()
    if low.endswith((".md", ".markdown", ".rst")):
        return True
    name = Path(low).name
    return low.endswith(".txt") and (name.startswith(DOC_NAMES) or low.startswith("docs/") or "/docs/" in low)


def _is_adr(rel: str) -> bool:
    low = rel.lower()
    return any(low.startswith(d + "/") or f"/{d}/" in low for d in ADR_DIRS)


def _is_spec(rel: str) -> bool:
    name = Path(rel).name.lower()
    return any(word in name for word in SPEC_WORDS) or "/specs/" in f"/{rel.lower()}"


DOCUMENT_KINDS: dict[str, tuple[set[str], Callable[[str], bool] | None]] = {
    "document_sections": (DOC_SOURCES, None),
    "decision_records": (ADR_SOURCES, _is_adr),
    "specifications": (SPEC_SOURCES, _is_spec),
}
"""The document kinds: the source names each serves, and the test of which documents it searches (None:
every one)."""


class RunMemory:
    """What earlier workflow runs in this workspace learned: each stage's outcome, searchable (FTS5).

    Kept at ``<workspace data>/workflow-memory.sqlite``, apart from the workspace memory (``ide.memory``),
    which it predates; its rows are grounded as ``memory:ROWID``.
    """

    def __init__(self, root: Path, settings: Settings) -> None:
        self.path = private_file(settings.workspace_data_dir(root) / "workflow-memory.sqlite")
        with self._db() as db:
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS outcomes "
                "USING fts5(task, workflow, stage, outcome, summary)"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def record(self, task: str, workflow: str, stage: str, failed: bool, summary: str) -> None:
        with self._db() as db:
            db.execute(
                "INSERT INTO outcomes (task, workflow, stage, outcome, summary) VALUES (?, ?, ?, ?, ?)",
                (task, workflow, stage, "failed" if failed else "passed", summary),
            )

    def text_of(self, rowid: int) -> str | None:
        with self._db() as db:
            row = db.execute(
                "SELECT task, workflow, stage, outcome, summary FROM outcomes WHERE rowid = ?", (rowid,)
            ).fetchone()
        return None if row is None else _memory_text(*row)

    def search(self, query: str, limit: int = 5) -> list[Snippet]:
        terms = [t for t in tokenize(query) if len(t) > 2][:16]
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        with self._db() as db:
            rows = db.execute(
                "SELECT rowid, task, workflow, stage, outcome, summary, bm25(outcomes) FROM outcomes "
                "WHERE outcomes MATCH ? ORDER BY bm25(outcomes) LIMIT ?",
                (match, limit),
            ).fetchall()
        return [
            Snippet(
                "memory", f"memory:{row[0]}", 0, 0, _memory_text(*row[1:6]), f"{row[2]} / {row[3]}", -row[6]
            )
            for row in rows
        ]


def _memory_text(task: str, workflow: str, stage: str, outcome: str, summary: str) -> str:
    return f"Earlier run ({workflow}, stage {stage}, {outcome}) for: {task}\n{summary}"


class WorkspaceFiles:
    """The workspace as the agent's read_file sees it: what the code and document sources read through."""

    def __init__(self, root: Path, settings: Settings, changeset: ChangeSet | None = None) -> None:
        self.root = root
        self.settings = settings
        self.changeset = changeset

    @cached_property
    def workspace(self) -> Workspace:
        """Built once: it compiles every pattern."""
        from ide.tools.workspace import Workspace

        return Workspace(self.root, self.settings.workspace, self.changeset)

    def read(self, rel: str) -> str | None:
        """The text of ``rel`` as read_file gives it (the change set's proposal, the disk's otherwise), or
        None for a file read_file refuses: a secret, a link out, an excluded file. Paths come from the
        index, a walk and the change set; one proposed before the secret list grew must not leak."""
        from ide.fs import ToolError

        files = self.workspace
        try:
            path = files.resolve(rel)
            return None if files.is_ignored(path) else files.read_text(path)
        except (OSError, ValueError, UnicodeDecodeError, ToolError):
            return None
        except Exception:  # ChangeError for paths the overlay refuses
            return None


class CodeSource:
    """The code index source: definitions the queries name, with their source lines, and a focused repo
    map."""

    def __init__(self, files: WorkspaceFiles, index: CodeIndex) -> None:
        self.files = files
        self.index = index

    def search(self, queries: list[str], request: RetrievalRequest) -> list[Snippet]:
        """A repo map focused on what the queries hit, then the definitions they name with their source
        lines — or windows around them, or their whole files, as the workflow's chunking says — of the
        languages and kinds its ``ast_parsing`` keeps. Files the change set touched are parsed from their
        proposed text: the index still holds their old lines, and an agent's new definitions are not in
        it at all."""
        from ide.codeintel.index.repomap import repo_map, task_focus
        from ide.tools.index import overlay_symbols

        settings = self.files.settings
        ast = request.strategy.ast_parsing
        filtered = bool(ast.languages or ast.node_kinds)
        changed = overlay_symbols(self.files.workspace)
        hits: dict[tuple[str, int], tuple[str, int, int, str, int]] = {}  # → path, line, end, name, score
        for rank, query in enumerate(queries):
            term = query.lstrip("-")
            if len(term) < 2 or "/" in term:
                continue
            score = len(queries) - rank
            for symbol in self.index.search(term, limit=24 if filtered else 6):
                if symbol.path in changed or symbol.score < MIN_SYMBOL_SCORE:
                    continue
                if not ast.keeps(symbol.path, symbol.kind):
                    continue
                name = symbol.qualname or symbol.name
                hits.setdefault(
                    (symbol.path, symbol.line), (symbol.path, symbol.line, symbol.end_line, name, score)
                )
            for rel, symbols in changed.items():
                for found in symbols.definitions if symbols is not None else ():
                    if term.lower() in found.qualname.lower() and ast.keeps(rel, found.kind):
                        hit = (rel, found.line, found.end_line, found.qualname, score)
                        hits.setdefault((rel, found.line), hit)
        snippets = self._snippets(sorted(hits.values(), key=lambda hit: -hit[4]), request)
        if self.index.file_count() > REPO_MAP_MAX_FILES:
            return snippets  # the map costs seconds on large indexes; agents call repo_map on demand
        files, names = task_focus(self.index, " ".join(queries))
        files.extend([*request.focus_files, *(s.path for s in snippets)])
        names.extend(s.title.rsplit(".", 1)[-1] for s in snippets)
        budget = request.strategy.retrieval_hints.token_budget.get(
            request.stage_name, settings.workflows.default_token_budget
        )
        text = repo_map(
            self.index,
            budget_tokens=max(64, min(settings.index.repo_map_tokens, budget // 4)),
            focus_files=list(dict.fromkeys(files)),
            focus_names=list(dict.fromkeys(names)),
            overlay_symbols=changed,
        )
        if text and not text.startswith("(the index holds no definitions"):
            snippets.insert(0, Snippet("repo_map", "repo-map", 0, 0, text, "Repo map"))
        return snippets

    def _snippets(
        self, hits: list[tuple[str, int, int, str, int]], request: RetrievalRequest
    ) -> list[Snippet]:
        """Snippets of the (path, line, end line, name, score) hits, best first, shaped as the workflow's
        ``code_chunks`` says: each definition's lines, a window of ``chunk_lines`` around each, or each
        hit file once, whole."""
        shape = request.strategy.code_chunks
        window = request.strategy.rag_strategy.chunk_lines
        snippets: list[Snippet] = []
        texts: dict[str, list[str] | None] = {}
        taken: set[tuple[str, int]] = set()
        for path, line, end_line, name, score in hits:
            if path not in texts:
                text = self.files.read(path)
                texts[path] = text.rstrip().split("\n") if text is not None else None
            lines = texts[path]
            if not lines or line < 1 or line > len(lines):
                continue
            if shape == "file":
                if (path, 1) in taken:
                    continue
                title, start, end, body = whole_file(lines)
            else:
                if shape == "window":
                    start = max(1, min(line - window // 4, len(lines) - window + 1))
                    end = min(start + window - 1, len(lines))
                else:
                    start, end = line, min(max(end_line, line), line + DEF_LINES - 1, len(lines))
                title, body = name, "\n".join(lines[start - 1 : end])
            if (path, start) in taken:
                continue
            taken.add((path, start))
            snippets.append(Snippet("code_index", path, start, end, body, title, float(score)))
            if len(snippets) >= PER_SOURCE - 1:
                break
        return snippets


class DocumentSource:
    """The document sources: heading sections of every document (``document_sections``), of decision
    records (``decision_records``) and of specifications (``specifications``), ranked by BM25. Each kind's
    chunks and their index are made once, on first use, and shared by the stages this object serves."""

    def __init__(self, files: WorkspaceFiles, index: CodeIndex | None = None) -> None:
        self.files = files
        self.index = index
        self._docs: list[str] | None = None
        self._chunks: dict[str, tuple[list[Snippet], Bm25]] = {}
        self._lock = threading.Lock()

    def search(self, queries: list[str], kind: str, request: RetrievalRequest) -> list[Snippet]:
        """The ``kind`` chunks (a key of :data:`DOCUMENT_KINDS`) that best match the queries."""
        sections, bm25 = self._chunk_index(kind, request)
        if not sections:
            return []
        scores = bm25.scores(" ".join(queries))
        ranked = sorted(range(len(sections)), key=lambda i: -scores[i])[:PER_SOURCE]
        return [
            Snippet(c.source, c.path, c.start_line, c.end_line, c.text, c.title, scores[i])
            for i in ranked
            if scores[i] > 0
            for c in [sections[i]]
        ]

    def _doc_files(self) -> list[str]:
        """The workspace's documents: from the code index when it is open (it holds every .md, .rst and
        .txt file with the same ignore rules), else from a walk of the workspace."""
        if self._docs is None:
            if self.index is not None:
                found = self.index.paths(DOC_SUFFIXES)
            else:
                found = [rel for rel, _entry in self.files.workspace.scan()]
            changeset = self.files.changeset
            proposed = changeset.changed_paths() if changeset is not None else []
            self._docs = sorted({rel for rel in [*found, *proposed] if _is_document(rel)})
        return self._docs

    def _chunk_index(self, kind: str, request: RetrievalRequest) -> tuple[list[Snippet], Bm25]:
        """Every chunk of the kind's documents (cut as the workflow's chunk_strategy says) and their BM25
        index, made once per object."""
        rag = request.strategy.rag_strategy
        shape, window = rag.document_chunks, rag.chunk_lines
        _names, keep = DOCUMENT_KINDS[kind]
        key = f"{kind}/{shape}/{window}"
        with self._lock:
            if key not in self._chunks:
                sections: list[Snippet] = []
                for rel in self._doc_files():
                    if keep is not None and not keep(rel):
                        continue
                    text = self.files.read(rel)
                    for title, start, end, body in document_chunks(text or "", rel, shape, window):
                        sections.append(Snippet(kind, rel, start, end, body, title))
                self._chunks[key] = (sections, Bm25([f"{c.title}\n{c.text}" for c in sections]))
            return self._chunks[key]


class PluginSource:
    """The sources configured under ``[workflows.sources.NAME]``: a command given the queries, answering
    with JSON lines (``location``, ``text``, ``title``)."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings

    def configured(self, name: str) -> bool:
        return name in self.settings.workflows.sources

    def search(self, name: str, queries: list[str]) -> list[Snippet]:
        config = self.settings.workflows.sources[name]
        proc = subprocess.run(
            [*config.command, " ".join(queries[:6])],
            capture_output=True,
            text=True,
            timeout=config.timeout_s,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"{config.command[0]} exited with {proc.returncode}: {tail}")
        snippets = []
        for line in proc.stdout.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            PLUGIN_DOCUMENTS[(name, str(item["location"]))] = str(item["text"])
            snippets.append(
                Snippet(name, str(item["location"]), 0, 0, str(item["text"]), str(item.get("title", "")))
            )
        return snippets


class RetrievalSources:
    """The sources of one workspace, built once for a :class:`~ide.workflows.retrieval.RetrievalAgent`
    (which writes the queries and reports on each source): the code index when one is open, documents,
    git history, the run memory when it opened, and plugins."""

    def __init__(
        self, files: WorkspaceFiles, index: CodeIndex | None = None, memory: RunMemory | None = None
    ) -> None:
        self.code = CodeSource(files, index) if index is not None else None
        self.documents = DocumentSource(files, index)
        self.history = GitHistory(files.root)
        self.memory = memory
        self.plugins = PluginSource(files.root, files.settings)

    def finder(
        self, name: str, request: RetrievalRequest
    ) -> tuple[Callable[[list[str]], list[Snippet]] | None, str]:
        """The function answering source ``name``'s queries, or None and why the source is unavailable."""
        finder: Callable[[list[str]], list[Snippet]] | None = None
        reason = ""
        if name in CODE_SOURCES:
            code = self.code
            if not request.strategy.ast_parsing.enabled:
                reason = "ast_parsing.enabled is false in this workflow (no tree-sitter code index)"
            elif code is None:
                reason = "the code index is not open for this workspace"
            else:
                finder = lambda q: code.search(q, request)  # noqa: E731
        elif kind := _document_kind(name):
            finder = lambda q: self.documents.search(q, kind, request)  # noqa: E731
        elif name == "git_history":
            finder = self.history.search
        elif name == "memory":
            memory = self.memory
            if memory is None:
                reason = "the run memory could not be opened"
            else:
                finder = lambda q: memory.search(" ".join(q), PER_SOURCE)  # noqa: E731
        elif self.plugins.configured(name):
            finder = lambda q: self.plugins.search(name, q)  # noqa: E731
        else:
            reason = (
                f"{name} is not configured: set [workflows.sources.{name}] command = [...] "
                "in your config.toml (a workspace's .arbor/config.toml applies it once you trust the "
                "workspace: arbor trust)"
            )
        return finder, reason


def _document_kind(name: str) -> str:
    """The document kind serving source ``name``, or "" when none does."""
    return next((kind for kind, (names, _keep) in DOCUMENT_KINDS.items() if name in names), "")
