"""Context fusion: retrieved snippets → the verified, ranked, budgeted context a stage's agents read.

In order: the grounding check (every snippet must exist verbatim where it says it comes from — a file's
lines as the change set leaves them, a document section, a commit message, a memory row, a plugin's
document — or it is rejected), exact and near-duplicate removal, reranking (a cross-encoder when one
is configured, else an embedding model when one is configured, else BM25; always weighted by the
source's priority in the workflow), the relevance threshold (``workflows.min_relevance``: a snippet
scoring below that fraction of the best snippet's score is dropped, the best of each source stays), then a
greedy fill of the stage's token budget, and the consistency check over what was kept (definitions of one
name with different signatures, a document and the code disagreeing on a default, decision records with
one title deciding differently, the run memory saying a stage both failed and passed), flagged as
``⚠ conflicting: …`` at the top of the context. Every snippet keeps its attribution (``path:line-line``,
``doc.md#Heading > Sub``, ``git:abc1234``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ide.settings import Settings
from ide.workflows.conflicts import collapse_space, find_conflicts
from ide.workflows.history import git_output
from ide.workflows.ranking import bm25_scores, tokenize
from ide.workflows.snippets import Snippet
from ide.workflows.sources import PLUGIN_DOCUMENTS, RunMemory

log = logging.getLogger(__name__)

NEAR_DUPLICATE = 0.8
"""Word-shingle Jaccard similarity at which two snippets count as the same."""


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as the scripted model and budgets count them (characters / 4)."""
    return max(1, len(text) // 4)


@dataclass
class FusedContext:
    snippets: list[Snippet]
    reranker: str
    reranker_note: str = ""
    tokens: int = 0
    budget: int = 0
    dropped_duplicates: int = 0
    dropped_near_duplicates: int = 0
    dropped_over_budget: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    """(attribution, why) of snippets the grounding check refused."""
    below_threshold: dict[str, int] = field(default_factory=dict)
    """Snippets dropped under ``workflows.min_relevance``, by source."""
    threshold_note: str = ""
    """Set when the threshold could not judge (no snippet shares a word with the task)."""
    conflicts: list[str] = field(default_factory=list)
    """What the consistency check found, one ``⚠ conflicting: …`` line each (the stage agent reads them)."""

    def render(self) -> str:
        """The context as a prompt block: the conflict flags, then each snippet under its attribution."""
        blocks = [render_snippet(s) for s in self.snippets]
        if self.conflicts:
            blocks.insert(0, "\n".join(self.conflicts))
        return "\n\n".join(blocks)

    def notes(self) -> list[str]:
        """What the relevance threshold and the consistency check did, for the retrieval line a user
        reads (the tree's retrieval node)."""
        out = []
        dropped = sum(self.below_threshold.values())
        if dropped:
            by = ", ".join(f"{name} {n}" for name, n in sorted(self.below_threshold.items()))
            out.append(f"{dropped} snippet{'s' * (dropped != 1)} below the relevance threshold ({by})")
        if self.threshold_note:
            out.append(self.threshold_note)
        if self.conflicts:
            n = len(self.conflicts)
            out.append(f"⚠ {n} conflict{'s' * (n != 1)} flagged to the stage agent")
        return out


def render_snippet(snippet: Snippet) -> str:
    """One snippet under its attribution, in a fence longer than any backtick run in its text (a
    Markdown snippet with its own ``` block stays one block)."""
    longest = max((len(run) for run in re.findall(r"`+", snippet.text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"[{snippet.attribution()}] ({snippet.source})\n{fence}\n{snippet.text}\n{fence}"


def describe_reranker(settings: Settings) -> str:
    """Which reranker fusion will use with ``settings`` and why (the window shows this)."""
    name, note = _reranker_choice(settings)
    return f"{name}" + (f" — {note}" if note else "")


def _reranker_choice(settings: Settings) -> tuple[str, str]:
    config = settings.workflows
    note = ""
    if config.reranker:
        model = config.reranker.removeprefix("cross-encoder:")
        try:
            import sentence_transformers  # noqa: F401
        except ImportError:
            note = (
                f"cross-encoder {model} is configured but sentence-transformers is not installed "
                "(pip install sentence-transformers)"
            )
        else:
            return f"cross-encoder ({model})", ""
    if config.embedding_model:
        return f"embeddings ({config.embedding_model})", note
    return (
        "bm25",
        note or "no reranker or embedding model configured ([workflows] reranker / embedding_model)",
    )


def grounding_problem(
    snippet: Snippet,
    root: Path,
    changeset: object | None = None,
    memory: RunMemory | None = None,
    files: dict[str, str | None] | None = None,
) -> str | None:
    """None when ``snippet.text`` exists verbatim where it says; else why not (``files``: a read cache)."""
    if not snippet.text.strip():
        return "empty snippet"
    if snippet.source == "repo_map":
        return _map_problem(snippet, root, changeset)
    if snippet.path.startswith("git:"):
        message = git_output(root, "log", "-n", "1", "--format=%s%n%b", snippet.path[4:])
        if message is None:
            return f"no commit {snippet.path[4:]}"
        found = collapse_space(snippet.text) in collapse_space(message)
        return None if found else "not in that commit's message"
    if snippet.path.startswith("memory:"):
        if memory is None or not snippet.path[7:].isdigit():
            return "no run memory to check against"
        stored = memory.text_of(int(snippet.path[7:]))
        return None if stored is not None and snippet.text in stored else "not in the run memory"
    if (snippet.source, snippet.path) in PLUGIN_DOCUMENTS:
        return (
            None
            if snippet.text in PLUGIN_DOCUMENTS[(snippet.source, snippet.path)]
            else "not in the document"
        )
    files = {} if files is None else files
    if snippet.path not in files:
        try:
            if changeset is not None:
                files[snippet.path] = changeset.read_text(snippet.path)  # type: ignore[attr-defined]
            else:
                files[snippet.path] = (Path(root) / snippet.path).read_text(
                    encoding="utf-8", errors="replace"
                )
        except Exception:
            files[snippet.path] = None
    text = files[snippet.path]
    if text is None:
        return f"{snippet.path} does not exist"
    if snippet.start_line:
        lines = text.splitlines()
        at = "\n".join(lines[snippet.start_line - 1 : snippet.end_line])
        if snippet.text.strip("\n") != at.strip("\n"):
            where = f"{snippet.path}:{snippet.start_line}-{snippet.end_line}"
            return f"{where} does not hold this text" + (
                " (it is elsewhere in the file)" if snippet.text in text else ""
            )
        return None
    return None if snippet.text in text else f"not in {snippet.path}"


_MAP_FILE = re.compile(r"^(\S.*):$")


def _map_problem(snippet: Snippet, root: Path, changeset: object | None) -> str | None:
    """The repo map is derived, not quoted: every file it names must exist (through the change set), and
    every word of each signature under a file must occur in that file."""
    current: str | None = None
    for line in snippet.text.split("\n"):
        header = _MAP_FILE.match(line)
        if header:
            rel = header.group(1)
            try:
                if changeset is not None:
                    current = changeset.read_text(rel)  # type: ignore[attr-defined]
                else:
                    current = (Path(root) / rel).read_text(encoding="utf-8", errors="replace")
            except Exception:
                return f"the repo map names {rel}, which does not exist"
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("imports:") or current is None:
            continue
        words = re.findall(r"\w+", stripped.removesuffix("…"))
        if stripped.endswith("…") and words:
            words.pop()  # cut mid-word by the map's signature cap
        missing = [w for w in words if len(w) >= 3 and w not in current]
        if missing:
            return f"the repo map shows {stripped[:80]!r}, but {missing[0]!r} is not in that file"
    return None


def _shingles(text: str, size: int = 3) -> set[str]:
    # Three-word shingles: with five, one changed word in a 40-word snippet already falls under 0.8.
    words = tokenize(text)
    return {" ".join(words[i : i + size]) for i in range(max(1, len(words) - size + 1))}


async def _embedding_scores(settings: Settings, query: str, texts: list[str]) -> list[float]:
    from ide.llm.embeddings import cosine, ollama_embeddings

    spec = settings.workflows.embedding_model or ""
    embedder = ollama_embeddings(spec, settings.llm.ollama_host, "workflows.embedding_model")
    vectors = await embedder.aembed_documents([query, *texts])
    return [cosine(vectors[0], v) for v in vectors[1:]]


_cross_encoders: dict[str, object] = {}
_cross_lock = threading.Lock()


def _cross_encoder_scores(model: str, query: str, texts: list[str]) -> list[float]:
    from sentence_transformers import CrossEncoder

    with _cross_lock:  # loading takes seconds: once per process, not once per stage
        if model not in _cross_encoders:
            _cross_encoders[model] = CrossEncoder(model)
        encoder = _cross_encoders[model]
    return [float(s) for s in encoder.predict([(query, t) for t in texts])]  # type: ignore[attr-defined]


async def fuse(
    snippets: Sequence[Snippet],
    query: str,
    *,
    budget_tokens: int,
    root: Path,
    settings: Settings,
    changeset: object | None = None,
    memory: RunMemory | None = None,
) -> FusedContext:
    """Ground, deduplicate, rerank and budget ``snippets`` for ``query`` (see the module docstring)."""
    name, note = _reranker_choice(settings)
    fused = FusedContext([], name, note, budget=budget_tokens)
    grounded: list[Snippet] = []
    # File reads (cached per path) and `git log` per commit: off the event loop.
    files: dict[str, str | None] = {}
    problems = await asyncio.to_thread(
        lambda: [grounding_problem(snippet, root, changeset, memory, files) for snippet in snippets]
    )
    for snippet, problem in zip(snippets, problems, strict=True):
        if problem is None:
            grounded.append(snippet)
        else:
            fused.rejected.append((snippet.attribution(), problem))
    unique: list[Snippet] = []
    hashes: set[str] = set()
    for snippet in sorted(grounded, key=lambda s: (-s.weight, -len(s.text))):
        digest = hashlib.blake2b(collapse_space(snippet.text).encode(), digest_size=16).hexdigest()
        if digest in hashes:
            fused.dropped_duplicates += 1
            continue
        hashes.add(digest)
        unique.append(snippet)
    kept: list[tuple[Snippet, set[str]]] = []
    for snippet in unique:
        shingles = _shingles(snippet.text)
        if any(len(shingles & other) / (len(shingles | other) or 1) >= NEAR_DUPLICATE for _s, other in kept):
            fused.dropped_near_duplicates += 1
            continue
        kept.append((snippet, shingles))
    candidates = [s for s, _sh in kept]
    texts = [f"{s.title}\n{s.text}" for s in candidates]
    scores: list[float] = []
    if name.startswith("cross-encoder") and candidates:
        model = name[len("cross-encoder (") : -1]
        try:
            scores = await asyncio.to_thread(_cross_encoder_scores, model, query, texts)
        except Exception as exc:  # weights that cannot load (offline, not downloaded) fall back to bm25
            fused.reranker = "bm25"
            fused.reranker_note = f"cross-encoder {model} failed ({type(exc).__name__}: {exc}); used bm25"
            log.info("cross-encoder rerank failed: %s", exc)
    elif name.startswith("embeddings") and candidates:
        try:
            scores = await _embedding_scores(settings, query, texts)
        except Exception as exc:  # an unreachable embedding server falls back, and says so
            fused.reranker = "bm25"
            fused.reranker_note = (
                f"{settings.workflows.embedding_model} failed ({type(exc).__name__}: {exc}); used bm25"
            )
            log.info("embedding rerank failed: %s", exc)
    if not scores:
        scores = bm25_scores(query, texts)
    top = max(scores, default=0.0) or 1.0
    ranked = sorted(
        zip(candidates, scores, strict=True), key=lambda pair: -(0.5 + 0.5 * pair[1] / top) * pair[0].weight
    )
    ranked = _above_threshold(ranked, settings.workflows.min_relevance, fused)
    used = 0
    for snippet, _score in ranked:
        cost = estimate_tokens(snippet.text) + 12
        if used + cost > budget_tokens:
            fused.dropped_over_budget += 1
            continue
        used += cost
        fused.snippets.append(snippet)
    fused.tokens = used
    changed = set(changeset.changed_paths()) if changeset is not None else set()  # type: ignore[attr-defined]
    fused.conflicts = find_conflicts(fused.snippets, changed)
    return fused


def _above_threshold(
    ranked: list[tuple[Snippet, float]], threshold: float, fused: FusedContext
) -> list[tuple[Snippet, float]]:
    """``ranked`` without the snippets whose score is below ``threshold`` × the best score; the best
    snippet of each source stays. Counts what went in ``fused.below_threshold``."""
    top = max((score for _s, score in ranked), default=0.0)
    if threshold <= 0 or not ranked:
        return ranked
    if top <= 0:
        fused.threshold_note = "no snippet scored above 0 for the task: the relevance threshold kept them all"
        return ranked
    best: dict[str, float] = {}
    for snippet, score in ranked:
        best[snippet.source] = max(best.get(snippet.source, score), score)
    kept: list[tuple[Snippet, float]] = []
    spared: set[str] = set()
    for snippet, score in ranked:
        if score >= threshold * top:
            kept.append((snippet, score))
        elif score == best[snippet.source] and score > 0 and snippet.source not in spared:
            spared.add(snippet.source)  # the best of its source, though weak: one stays
            kept.append((snippet, score))
        else:
            fused.below_threshold[snippet.source] = fused.below_threshold.get(snippet.source, 0) + 1
    return kept
