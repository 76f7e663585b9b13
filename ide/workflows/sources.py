"""The retrieval sources: code index, documents, decision records, specs, git history, memory, plugins."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.gitsafe import git_argv, git_env
from ide.settings import Settings
from ide.workflows.queries import tokenize

if TYPE_CHECKING:
    from ide.changes import ChangeSet
    from ide.codeintel.index import CodeIndex
    from ide.tools.workspace import Workspace
    from ide.workflows.retrieval import RetrievalRequest

PER_SOURCE = 12
"""Snippets one source returns at most."""
REPO_MAP_MAX_FILES = 3000
"""Up to this many indexed files the code source adds a focused repo map (above, it takes seconds)."""
DEF_LINES = 60
"""Lines of a definition's source a code snippet holds at most."""
FILE_LINES = 300
"""Lines a whole-file snippet (``index_level: file``, ``chunk_strategy: file``) holds at most."""
WHOLE_FILE = "whole file"
"""How a whole-file snippet's title starts; a cut one goes on ", first N of M lines"."""
MIN_SYMBOL_SCORE = 20.0
"""Index hits scoring lower are fuzzy subsequence guesses ("cli" → "ClientLoader"), not named code."""
PICKAXE_TERMS = 3
"""Identifiers of the queries looked for in the diffs of the logged commits (``git log -G``)."""
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
ADR_DIRS = ("docs/adr", "doc/adr", "adr", "docs/decisions", "doc/decisions", "architecture/decisions")
SPEC_WORDS = ("spec", "rfc", "design", "requirements", "architecture")

CODE_SOURCES = {"codebase_semantic_search", "code_index", "codebase"}
DOC_SOURCES = {"doc_retrieval", "document_semantic_search", "documentation"}
ADR_SOURCES = {"decision_log_search", "decision_records"}
SPEC_SOURCES = {"specification_search", "specifications"}
LSP_SOURCES = {"lsp_tools"}


@dataclass(frozen=True)
class Snippet:
    source: str
    path: str
    start_line: int
    end_line: int
    text: str
    title: str = ""
    score: float = 0.0
    weight: float = 0.7
    """The source's priority in the workflow (HIGH 1.0, MEDIUM 0.7, LOW 0.4)."""

    def attribution(self) -> str:
        if self.title.startswith(WHOLE_FILE) and self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line} ({self.title})"
        if self.path.startswith(("git:", "memory:")) or "://" in self.path:
            return self.path
        if self.title and self.source in ("document_sections", "decision_records", "specifications"):
            return f"{self.path}#{self.title}"
        if self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line}"
        return self.path


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_RST_UNDER = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def document_sections(text: str, path: str) -> list[tuple[str, int, int, str]]:
    """(section path "A > B", start line, end line, text) of a Markdown or reST document."""
    lines = text.splitlines()
    heads: list[tuple[int, int, str]] = []  # (line index, level, title)
    rst_levels: list[str] = []
    in_fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            continue
        rst = path.endswith(".rst")
        match = None if rst else _MD_HEADING.match(line)
        if match:
            heads.append((i, len(match.group(1)), match.group(2).strip()))
        elif rst and i > 0 and _RST_UNDER.match(line) and lines[i - 1].strip():
            char = line.strip()[0]
            if char not in rst_levels:
                rst_levels.append(char)
            heads.append((i - 1, rst_levels.index(char) + 1, lines[i - 1].strip()))
    if not heads:
        return [(Path(path).name, 1, len(lines), text)] if text.strip() else []
    sections = []
    stack: list[tuple[int, str]] = []
    bounds = [h[0] for h in heads] + [len(lines)]
    if heads[0][0] > 0 and "\n".join(lines[: heads[0][0]]).strip():
        sections.append(("(preamble)", 1, heads[0][0], "\n".join(lines[: heads[0][0]])))
    for n, (start, level, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = bounds[n + 1]
        body = "\n".join(lines[start:end]).rstrip()
        sections.append((" > ".join(t for _l, t in stack), start + 1, start + len(body.splitlines()), body))
    return sections


def document_chunks(text: str, path: str, shape: str, window: int = 40) -> list[tuple[str, int, int, str]]:
    """(title, start line, end line, text) of a document cut as ``shape`` says: its heading
    ``sections``, its ``paragraphs`` (blank-line separated, titled by their section), ``window``s of
    ``window`` lines, or the whole ``file`` (at most FILE_LINES lines)."""
    if shape == "file":
        return [whole_file(text.split("\n"))] if text.strip() else []
    if shape == "window":
        lines = text.rstrip().split("\n")
        return [
            ("", start + 1, start + len(chunk), "\n".join(chunk))
            for start in range(0, len(lines), window)
            for chunk in [lines[start : start + window]]
            if "\n".join(chunk).strip()
        ]
    sections = document_sections(text, path)
    if shape != "paragraphs":
        return sections
    paragraphs = []
    for title, start, _end, body in sections:
        block: list[str] = []
        first, number, in_fence = start, 0, False
        for offset, line in enumerate([*body.split("\n"), ""]):
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if line.strip() or in_fence:
                if not block:
                    first = start + offset
                block.append(line)
                continue
            # A block that is only the section's heading (and its reST underline) is named by the title.
            if block and not (offset == len(block) and _is_heading(block, path)):
                number += 1
                paragraphs.append((f"{title} ¶{number}", first, first + len(block) - 1, "\n".join(block)))
            block = []
    return paragraphs


def _is_heading(block: list[str], path: str) -> bool:
    if path.endswith(".rst"):
        return len(block) <= 3 and any(_RST_UNDER.match(line) for line in block)
    return len(block) == 1 and _MD_HEADING.match(block[0]) is not None


def whole_file(lines: list[str]) -> tuple[str, int, int, str]:
    """(title, 1, last line, text) of a file's first FILE_LINES lines; the title says when it was cut."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    kept = lines[:FILE_LINES]
    title = (
        WHOLE_FILE if len(kept) == len(lines) else f"{WHOLE_FILE}, first {len(kept)} of {len(lines)} lines"
    )
    return title, 1, len(kept), "\n".join(kept)


class RunMemory:
    """What earlier workflow runs in this workspace learned: each stage's outcome, searchable (FTS5).

    Kept at ``<workspace data>/workflow-memory.sqlite``, apart from the workspace memory (``ide.memory``),
    which it predates; its rows are grounded as ``memory:ROWID``.
    """

    def __init__(self, root: Path, settings: Settings) -> None:
        self.path = settings.workspace_data_dir(root) / "workflow-memory.sqlite"
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


class RetrievalSources:
    """The sources of a :class:`~ide.workflows.retrieval.RetrievalAgent`, which adds queries and reports."""

    root: Path
    settings: Settings
    changeset: ChangeSet | None
    index: CodeIndex | None
    memory: RunMemory | None
    _docs: list[str] | None
    _sections_by_kind: dict[str, tuple[list[Snippet], Any]]
    _lock: threading.Lock

    def _finder(
        self, name: str, request: RetrievalRequest
    ) -> tuple[Callable[[list[str]], list[Snippet]] | None, str]:
        """The function answering source ``name``'s queries, or None and why the source is unavailable."""
        finder: Callable[[list[str]], list[Snippet]] | None = None
        reason = ""
        if name in CODE_SOURCES:
            if not request.strategy.ast_parsing.enabled:
                reason = "ast_parsing.enabled is false in this workflow (no tree-sitter code index)"
            elif self.index is None:
                reason = "the code index is not open for this workspace"
            else:
                finder = lambda q: self._code(q, request)  # noqa: E731
        elif name in DOC_SOURCES:
            finder = lambda q: self._sections(q, "document_sections", None, request)  # noqa: E731
        elif name in ADR_SOURCES:
            finder = lambda q: self._sections(q, "decision_records", _is_adr, request)  # noqa: E731
        elif name in SPEC_SOURCES:
            finder = lambda q: self._sections(q, "specifications", _is_spec, request)  # noqa: E731
        elif name == "git_history":
            finder = self._git
        elif name == "memory":
            if self.memory is None:
                reason = "the run memory could not be opened"
            else:
                finder = lambda q: self.memory.search(" ".join(q), PER_SOURCE) if self.memory else []  # noqa: E731
        elif name in self.settings.workflows.sources:
            finder = lambda q: self._plugin(name, q)  # noqa: E731
        else:
            reason = (
                f"{name} is not configured: set [workflows.sources.{name}] command = [...] "
                "in your config.toml (a workspace's .arbor/config.toml applies it once you trust the "
                "workspace: arbor trust)"
            )
        return finder, reason

    @cached_property
    def _files(self) -> Workspace:
        """The workspace as the agent's read_file sees it (built once: it compiles every pattern)."""
        from ide.tools.workspace import Workspace

        return Workspace(self.root, self.settings.workspace, self.changeset)

    def _read(self, rel: str) -> str | None:
        """The text of ``rel`` as read_file gives it (the change set's proposal, the disk's otherwise), or
        None for a file read_file refuses: a secret, a link out, an excluded file. Paths come from the
        index, a walk and the change set; one proposed before the secret list grew must not leak."""
        from ide.fs import ToolError

        files = self._files
        try:
            path = files.resolve(rel)
            return None if files.is_ignored(path) else files.read_text(path)
        except (OSError, ValueError, UnicodeDecodeError, ToolError):
            return None
        except Exception:  # ChangeError for paths the overlay refuses
            return None

    def _code(self, queries: list[str], request: RetrievalRequest) -> list[Snippet]:
        """A repo map focused on what the queries hit, then the definitions they name with their source
        lines — or windows around them, or their whole files, as the workflow's chunking says — of the
        languages and kinds its ``ast_parsing`` keeps. Files the change set touched are parsed from their
        proposed text: the index still holds their old lines, and an agent's new definitions are not in
        it at all."""
        from ide.codeintel.index.repomap import repo_map, task_focus
        from ide.tools.index import overlay_symbols
        from ide.tools.workspace import Workspace

        assert self.index is not None
        ast = request.strategy.ast_parsing
        filtered = bool(ast.languages or ast.node_kinds)
        changed = overlay_symbols(Workspace(self.root, self.settings.workspace, self.changeset))
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
        snippets = self._code_snippets(sorted(hits.values(), key=lambda hit: -hit[4]), request)
        if self.index.file_count() > REPO_MAP_MAX_FILES:
            return snippets  # the map costs seconds on large indexes; agents call repo_map on demand
        files, names = task_focus(self.index, " ".join(queries))
        files.extend([*request.focus_files, *(s.path for s in snippets)])
        names.extend(s.title.rsplit(".", 1)[-1] for s in snippets)
        budget = request.strategy.retrieval_hints.token_budget.get(
            request.stage_name, self.settings.workflows.default_token_budget
        )
        text = repo_map(
            self.index,
            budget_tokens=max(64, min(self.settings.index.repo_map_tokens, budget // 4)),
            focus_files=list(dict.fromkeys(files)),
            focus_names=list(dict.fromkeys(names)),
            overlay_symbols=changed,
        )
        if text and not text.startswith("(the index holds no definitions"):
            snippets.insert(0, Snippet("repo_map", "repo-map", 0, 0, text, "Repo map"))
        return snippets

    def _code_snippets(
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
                text = self._read(path)
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

    def _doc_files(self) -> list[str]:
        """The workspace's documents: from the code index when it is open (it holds every .md, .rst and
        .txt file with the same ignore rules), else from a walk of the workspace."""
        if self._docs is None:
            if self.index is not None:
                found = self.index.paths(DOC_SUFFIXES)
            else:
                from ide.tools.workspace import Workspace

                found = [
                    rel
                    for rel, _entry in Workspace(self.root, self.settings.workspace, self.changeset).scan()
                ]
            proposed = self.changeset.changed_paths() if self.changeset is not None else []
            self._docs = sorted({rel for rel in [*found, *proposed] if _is_document(rel)})
        return self._docs

    def _section_index(
        self, source: str, keep: Callable[[str], bool] | None, request: RetrievalRequest | None = None
    ) -> tuple[list[Snippet], Any]:
        """Every chunk of the kind's documents (cut as the workflow's chunk_strategy says) and their BM25
        index, made once per agent."""
        from ide.workflows.fusion import Bm25

        rag = request.strategy.rag_strategy if request is not None else None
        shape = rag.document_chunks if rag is not None else "sections"
        window = rag.chunk_lines if rag is not None else 40
        key = f"{source}/{shape}/{window}"
        with self._lock:
            if key not in self._sections_by_kind:
                sections: list[Snippet] = []
                for rel in self._doc_files():
                    if keep is not None and not keep(rel):
                        continue
                    text = self._read(rel)
                    for title, start, end, body in document_chunks(text or "", rel, shape, window):
                        sections.append(Snippet(source, rel, start, end, body, title))
                self._sections_by_kind[key] = (sections, Bm25([f"{c.title}\n{c.text}" for c in sections]))
            return self._sections_by_kind[key]

    def _sections(
        self,
        queries: list[str],
        source: str,
        keep: Callable[[str], bool] | None,
        request: RetrievalRequest | None = None,
    ) -> list[Snippet]:
        sections, bm25 = self._section_index(source, keep, request)
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

    def _git(self, queries: list[str]) -> list[Snippet]:
        if not (self.root / ".git").exists() and _git(self.root, "rev-parse", "--git-dir") is None:
            raise RuntimeError("not a git repository")
        log = _git(self.root, "log", "-n", "300", "--format=%h%x1f%s%x1f%b%x1e")
        if log is None:
            raise RuntimeError("git log failed")
        from ide.workflows.fusion import bm25_scores

        commits = _commits(log)
        # Commits whose diff adds or removes a queried identifier, though their message never names it:
        # identifiers only (plain words would match most commits), one -G pass over the commits above,
        # bounded in time so a big history cannot stall the stage.
        idents = [q for q in queries if len(q) >= 4 and _IDENTIFIER.fullmatch(q)][:PICKAXE_TERMS]
        pickaxe: set[str] = set()
        if idents and commits:
            pattern = "|".join(re.escape(term) for term in idents)
            shas = [h for h, _s, _t in commits]
            found = _git(
                self.root, "log", "--no-walk=unsorted", f"-G{pattern}", "--format=%h", *shas, timeout=3
            )
            pickaxe = set((found or "").split())
        if not commits:
            return []
        scores = bm25_scores(" ".join(queries), [text for _h, _s, text in commits])
        totals = [
            score + (2.0 if h in pickaxe else 0.0) for score, (h, _s, _t) in zip(scores, commits, strict=True)
        ]
        ranked = sorted(zip(totals, commits, strict=True), key=lambda pair: -pair[0])
        return [
            Snippet("git_history", f"git:{h}", 0, 0, text, subject, score)
            for score, (h, subject, text) in ranked
            if score > 0
        ][:PER_SOURCE]

    def _plugin(self, name: str, queries: list[str]) -> list[Snippet]:
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


PLUGIN_DOCUMENTS: dict[tuple[str, str], str] = {}
"""What plugins returned, by (source, location): the grounding check compares snippets with it."""


DOC_NAMES = ("readme", "changes", "changelog", "history", "news", "contributing", "design", "architecture")


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


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:_\w+|[a-z][A-Z]\w*)(?:\.[A-Za-z_]\w*)*")
"""snake_case or camelCase (optionally dotted): a name worth looking for in diffs."""


def _commits(log: str) -> list[tuple[str, str, str]]:
    """(short sha, subject, subject and body) of ``git log --format=%h%x1f%s%x1f%b%x1e`` output."""
    commits = []
    for record in log.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) == 3 and parts[0]:
            commits.append((parts[0], parts[1], f"{parts[1]}\n{parts[2]}".strip()))
    return commits


def _git(root: Path, *args: str, timeout: float = 20) -> str | None:
    try:
        # Through ide.gitsafe; a log (-G searches diffs) never runs a textconv or external diff driver.
        if args[:1] == ("log",):
            args = ("log", "--no-textconv", "--no-ext-diff", *args[1:])
        proc = subprocess.run(
            git_argv(root, *args), cwd=root, capture_output=True, text=True, env=git_env(), timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
