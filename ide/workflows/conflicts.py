"""The consistency check of context fusion: where a stage's retrieved snippets contradict each other.

Deterministic and model-free: definitions of one name with different signatures (a proposed change
against the index, or one module in two places), a document stating a default the code does not have,
decision records with one title deciding differently, the run memory saying a stage both failed and
passed. Each becomes one ``⚠ conflicting: …`` line at the top of the stage's context. Workspace text is
hostile input: every scan is bounded (:data:`SCAN_CHARS`, :data:`LINE_CHARS`, :data:`MAX_CONFLICTS`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from ide.workflows.snippets import Snippet


def collapse_space(text: str) -> str:
    """``text`` with every run of whitespace one space (comparisons that ignore layout)."""
    return " ".join(text.split())


MAX_CONFLICTS = 6
"""Conflict flags one stage's context carries at most (the first found, in a fixed order)."""
SCAN_CHARS = 4000
"""The consistency check reads this much of a code snippet (its definition line and the start of its body)."""
LINE_CHARS = 500
"""… and this much of a document line: workspace text is hostile input, every scan stays bounded."""

_DEF = re.compile(
    r"^[ \t]*(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(def|class|function|func|fn)\s+"
    r"([A-Za-z_]\w*)\s*(\((?:[^()]|\([^()]*\))*\))?(\s*->\s*[^:{\n]+)?",
    re.M,
)
_PARAM_DEFAULT = re.compile(
    r"(?<!\w)([A-Za-z_]\w{0,63})\s*(?::\s*[^=,()]{1,120}?)?\s*=\s*((?:[^,()\s]|\([^()]*\)){1,200})"
)
_CONSTANT = re.compile(r"^([A-Za-z_]\w{0,63})\s*(?::\s*[^=\n]{1,120})?=\s*([^\n#]+?)\s*(?:#.*)?$")
_FIELD = re.compile(r"^[ \t]+([A-Za-z_]\w{0,63})\s*:\s*[^=\n]{1,120}?=\s*([^\n#]+?)\s*(?:#.*)?$")
"""An annotated class attribute with its default (dataclass, pydantic model, settings)."""
_FIELD_CALL = re.compile(r"^(?:\w+\.)?(?:Field|field)\(\s*(?:default\s*=\s*)?([^,()\n]+)")
_VALUE = r"(`[^`\n]+`|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;)]+)"
_DOC_DEFAULTS = (
    re.compile(r"`?-{0,2}([A-Za-z_][\w-]{0,63})`?\s+defaults\s+to\s+" + _VALUE, re.I),
    re.compile(r"`?-{0,2}([A-Za-z_][\w-]{0,63})`?\s*\(defaults?(?:\s+to|\s+is|:)?\s+" + _VALUE + r"\)", re.I),
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_DOC_SOURCES = ("document_sections", "specifications", "decision_records")
_MEMORY_ROW = re.compile(r"^Earlier run \((.+?), stage (.+?), (failed|passed)\) for: (.*)$")
_ADR_NUMBER = re.compile(r"^(?:adr[-_ ]?)?\d+[.:)\-\s]*", re.I)


def find_conflicts(snippets: Sequence[Snippet], changed: Collection[str] = ()) -> list[str]:
    """Where ``snippets`` contradict each other, one ``⚠ conflicting: …`` line each (deterministic,
    no model): definitions of one name with different signatures in different files (``changed``: paths
    of the proposed change set, marked as such), a document stating a default the code's definition does
    not have, decision records with one title whose same section differs, and run-memory rows saying one
    stage of one task both failed and passed."""
    found = [
        *_definition_conflicts(snippets, changed),
        *_default_conflicts(snippets),
        *_decision_conflicts(snippets),
        *_memory_conflicts(snippets),
    ]
    return list(dict.fromkeys(found))[:MAX_CONFLICTS]


def _flag(finding: str, advice: str) -> str:
    """One conflict line as the stage agent reads it: what contradicts what, then what to do about it."""
    return f"⚠ conflicting: {finding}; {advice}"


def _where(snippet: Snippet, changed: Collection[str]) -> str:
    return snippet.attribution() + (" (proposed change)" if snippet.path in changed else "")


def _definition_conflicts(snippets: Sequence[Snippet], changed: Collection[str]) -> list[str]:
    """One name defined twice, of one kind, with different parameter names: when one side is a proposed
    change (an agent redefining what exists), or when both are one module in two places (a vendored copy,
    a stub). Unrelated modules that happen to share a name (``distro.version``, ``platform.version``) and
    annotations written two ways (``Optional[float]``, ``float | None``) are no conflict."""
    seen: dict[str, list[tuple[Snippet, str, str, tuple[str, ...]]]] = {}
    out: dict[str, str] = {}
    for snippet in snippets:
        match = _DEF.search(snippet.text[:SCAN_CHARS]) if snippet.source == "code_index" else None
        if match is None or match.group(2).startswith("_"):
            continue
        kind, name, params = match.group(1), match.group(2), match.group(3) or ""
        key = snippet.title if snippet.title.rsplit(".", 1)[-1] == name else name
        signature = re.sub(r",\s*\)", ")", collapse_space(f"{kind} {name}{params}{match.group(4) or ''}"))
        names = _param_names(params)
        for other, other_kind, other_signature, other_names in seen.get(key, []):
            related = snippet.path in changed or other.path in changed or _module(snippet) == _module(other)
            if key in out or other.path == snippet.path or other_kind != kind or other_names == names:
                continue
            if related:
                out[key] = _flag(
                    f"`{key}` is defined differently in two places — `{other_signature}` at "
                    f"{_where(other, changed)} and `{signature}` at {_where(snippet, changed)}",
                    "check which one the task means before calling or changing it",
                )
        seen.setdefault(key, []).append((snippet, kind, signature, names))
    return list(out.values())


def _param_names(params: str) -> tuple[str, ...]:
    """The parameter names of ``(a: int = 1, *, b, **kw)``: ``("a", "*", "b", "**kw")``, types and
    defaults left out."""
    inner = re.sub(r"\([^()]*\)|\[[^\[\]]*\]|<[^<>]*>", "", params.strip()[1:-1])
    names = []
    for part in inner.split(","):
        found = re.match(r"\s*(\*{0,2})\s*([A-Za-z_]\w*)?", part)
        if found and (found.group(1) or found.group(2)):
            names.append(found.group(1) + (found.group(2) or ""))
    return tuple(names)


def _module(snippet: Snippet) -> str:
    """The module a definition lives in, by name: ``pkg/mod.py`` and ``stubs/pkg/mod.pyi`` are both ``mod``;
    a package's ``__init__``/``index``/``mod`` file is its folder's name."""
    parts = Path(snippet.path).with_suffix("").parts
    if len(parts) > 1 and parts[-1] in ("__init__", "index", "mod", "lib"):
        return parts[-2]
    return parts[-1] if parts else ""


def _literal(value: str, *, bare_words: bool) -> str | None:
    """``value`` as a comparable literal (number, true/false/none, string), or None when it is not one (an
    expression, a name, prose): only literals are compared. ``bare_words``: an unquoted word counts as a
    string (a document's backticked value)."""
    text = value.strip().rstrip(".,;:").strip("`").strip()
    called = _FIELD_CALL.match(text)
    if called:
        text = called.group(1).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return "str:" + text[1:-1]
    if _NUMBER.fullmatch(text):
        return f"num:{float(text):g}"
    low = text.lower()
    if low in ("true", "false", "yes", "no", "on", "off"):
        return "bool:" + str(low in ("true", "yes", "on"))
    if low in ("none", "null", "nil", "undefined"):
        return "none"
    return f"str:{text}" if bare_words and re.fullmatch(r"[\w.:/+-]+", text) else None


def _code_defaults(snippets: Sequence[Snippet]) -> dict[str, list[tuple[str, str, Snippet]]]:
    """name → [(literal, as written, snippet)] of the defaults the code snippets give: parameters of a
    function's signature, annotated attributes of a class, a module constant."""
    found: dict[str, list[tuple[str, str, Snippet]]] = {}
    for snippet in snippets:
        if snippet.source != "code_index":
            continue
        head = snippet.text[:SCAN_CHARS]
        definition = _DEF.search(head)
        if definition is None:
            pairs = _CONSTANT.findall(head.split("\n", 1)[0][:LINE_CHARS])
        elif definition.group(1) == "class":
            pairs = [pair for line in head.split("\n") for pair in _FIELD.findall(line[:LINE_CHARS])]
        else:
            pairs = _PARAM_DEFAULT.findall(definition.group(3) or "")
        for name, written in pairs:
            literal = _literal(written, bare_words=False)
            if literal is not None:
                found.setdefault(name, []).append((literal, written.strip(), snippet))
    return found


def _default_conflicts(snippets: Sequence[Snippet]) -> Iterator[str]:
    code = _code_defaults(snippets)
    for snippet in snippets if code else ():
        if snippet.source not in _DOC_SOURCES:
            continue
        lines = [line[:LINE_CHARS] for line in snippet.text.split("\n") if "default" in line.lower()]
        for pattern, line in ((p, line) for p in _DOC_DEFAULTS for line in lines):
            for raw, said in pattern.findall(line):
                name = raw.replace("-", "_")
                literal = _literal(said, bare_words=said.startswith("`"))
                if name not in code or literal is None or any(literal == c for c, _w, _s in code[name]):
                    continue
                _c, written, where = code[name][0]
                stated = said.strip("`").rstrip(".,;:")
                yield _flag(
                    f"{snippet.attribution()} says `{name}` defaults to `{stated}`, but "
                    f"{where.attribution()} has `{name}={written}`",
                    "the code is what runs — say so if the document is out of date",
                )


def _decision_conflicts(snippets: Sequence[Snippet]) -> Iterator[str]:
    seen: dict[tuple[str, str], Snippet] = {}
    for snippet in snippets:
        if snippet.source != "decision_records" or not snippet.title:
            continue
        title, _sep, section = snippet.title.partition(" > ")
        key = (collapse_space(_ADR_NUMBER.sub("", title)).lower(), section.lower())
        body = collapse_space("\n".join(snippet.text.split("\n")[1:]))
        if not body or not key[0]:
            continue
        other = seen.setdefault(key, snippet)
        other_body = collapse_space("\n".join(other.text.split("\n")[1:]))
        if other.path != snippet.path and other_body != body:
            yield _flag(
                f"two decision records titled {title!r} differ — {other.attribution()}: "
                f"{other_body[:100]!r}; {snippet.attribution()}: {body[:100]!r}",
                "find out which one is current (a later record may supersede the other)",
            )


def _memory_conflicts(snippets: Sequence[Snippet]) -> list[str]:
    outcomes: dict[tuple[str, str, str], dict[str, Snippet]] = {}
    for snippet in snippets:
        first = snippet.text.split("\n", 1)[0][:LINE_CHARS]
        row = _MEMORY_ROW.match(first) if snippet.source == "memory" else None
        if row is not None:
            workflow, stage, outcome, task = row.groups()
            key = (workflow, stage, collapse_space(task).lower())
            outcomes.setdefault(key, {}).setdefault(outcome, snippet)
    return [
        _flag(
            f"the run memory says stage {stage} of {task!r} failed ({by['failed'].path}) and passed "
            f"({by['passed'].path})",
            "read both summaries before relying on either",
        )
        for (_workflow, stage, task), by in outcomes.items()
        if len(by) == 2
    ]
