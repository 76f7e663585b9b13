"""Retrieval queries: the search terms of a task or of a failure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

MAX_QUERIES = 12

_STOP = """a an and are as at be by can do does for from has have how i in into is it its make me my of on or
our should so that the their then there this to use used using want was we what when where which who why
will with would you your add new please need change code file files function"""
STOPWORDS = frozenset(_STOP.split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_QUOTED = re.compile(r"[\"'`]([^\"'`\n]{2,60})[\"'`]")
_FILE = re.compile(r"[\w./-]+\.[A-Za-z]{1,5}\b")


def dedupe(items: Sequence[str], limit: int = MAX_QUERIES) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out[:limit]


def queries_from_task(task: str, guidance: str = "", focus_on: Sequence[str] = ()) -> list[str]:
    """Search terms from a task, most specific first: quoted text, file names, flags, identifiers
    (snake_case, CamelCase, dotted), then the remaining meaningful words."""
    quoted = _QUOTED.findall(task)
    files = _FILE.findall(task)
    flags = [f.lstrip("-") for f in _FLAG.findall(task)]
    idents = [w for w in _IDENT.findall(task) if ("_" in w or "." in w or re.search(r"[a-z][A-Z]", w))]
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]{2,}", task) if w.lower() not in STOPWORDS]
    hints = [h.replace("_", " ") for h in focus_on][:2]
    return dedupe([*quoted, *files, *flags, *idents, *words, *hints])


_ERROR_TYPE = re.compile(r"\b([A-Z][A-Za-z]+(?:Error|Exception|Failure|Warning))\b")
_TRACE_FILE = re.compile(r'File "([^"]+)", line (\d+), in (\w+)')
_PATH_LINE = re.compile(r"([\w./-]+\.[A-Za-z]{1,5}):(\d+)")
_NAME_ERR = re.compile(r"name '(\w+)' is not defined|has no attribute '(\w+)'|cannot import name '(\w+)'")


def queries_from_failure(failure: str) -> list[str]:
    """Search terms from a failure: missing names, functions and files in tracebacks, error types,
    ``path:line`` references, then words of the assertion lines."""
    names = [n for groups in _NAME_ERR.findall(failure) for n in groups if n]
    trace = _TRACE_FILE.findall(failure)
    funcs = [fn for _f, _l, fn in trace if fn != "<module>"]
    files = [Path(f).name for f, _l, _fn in trace] + [p for p, _l in _PATH_LINE.findall(failure)]
    errors = _ERROR_TYPE.findall(failure)
    asserts = " ".join(
        line for line in failure.splitlines() if "assert" in line.lower() or line.startswith("E ")
    )
    return dedupe([*names, *funcs, *files, *errors, *queries_from_task(asserts)])
