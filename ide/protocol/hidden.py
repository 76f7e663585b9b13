"""Characters that make text read differently than it runs (Trojan Source, CVE-2021-42574): found in a
diff's added lines, refused in file names (with control characters: :func:`name_refusal`, the one check
of a name for every author), and escaped in what a terminal prints.

Three kinds: bidirectional controls (they reorder what a reader sees), invisible characters (zero-width
and other Unicode format characters, category Cf), and identifiers that mix Latin with Cyrillic or Greek
letters (a homoglyph: ``pаy`` with a Cyrillic ``а`` is another name than ``pay``). Qt-free; both the
backend's review and the window read it. Every scan is one linear pass.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from ide.protocol.wire import WireModel

BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
"""Embedding, override and isolate controls, and the implicit direction marks."""

Kind = Literal["bidi", "invisible", "mixed-script"]

KIND_WHY: dict[str, str] = {
    "bidi": "bidirectional control characters: the text shows in another order than it runs",
    "invisible": "invisible characters: zero-width or format characters that are not shown",
    "mixed-script": "an identifier mixing Latin with Cyrillic or Greek letters: it looks like another name",
}

_WORD = re.compile(r"\w+")
_CONFUSABLE_SCRIPTS = ("CYRILLIC", "GREEK")


class HiddenFinding(WireModel):
    """One kind of hidden character on one line of a hunk (line numbers of the new side)."""

    kind: Kind
    line: int
    chars: list[str]
    """What was found: code points as ``U+202E``, or the mixed-script identifiers."""


def is_hidden_char(ch: str) -> bool:
    """A bidi control or an invisible format character (category Cf), U+00AD and U+FEFF included."""
    return ch in BIDI or unicodedata.category(ch) == "Cf"


def code_point(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _scripts(word: str) -> set[str]:
    found: set[str] = set()
    for ch in word:
        if ch.isascii():
            if ch.isalpha():
                found.add("LATIN")
            continue
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("LATIN"):
            found.add("LATIN")
        else:
            for script in _CONFUSABLE_SCRIPTS:
                if name.startswith(script):
                    found.add(script)
    return found


def mixed_script_words(text: str) -> list[str]:
    """Identifiers in ``text`` that mix Latin with Cyrillic or Greek letters."""
    words: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            continue
        scripts = _scripts(word)
        if "LATIN" in scripts and len(scripts) > 1 and word not in words:
            words.append(word)
    return words


def scan_line(text: str, line: int) -> list[HiddenFinding]:
    """What ``text`` hides, one finding per kind."""
    if text.isascii():
        return []
    bidi: list[str] = []
    invisible: list[str] = []
    for ch in text:
        if ch in BIDI:
            if code_point(ch) not in bidi:
                bidi.append(code_point(ch))
        elif unicodedata.category(ch) == "Cf" and code_point(ch) not in invisible:
            invisible.append(code_point(ch))
    findings = [HiddenFinding(kind="bidi", line=line, chars=bidi)] if bidi else []
    if invisible:
        findings.append(HiddenFinding(kind="invisible", line=line, chars=invisible))
    words = mixed_script_words(text)
    if words:
        findings.append(HiddenFinding(kind="mixed-script", line=line, chars=words))
    return findings


def describe(findings: list[HiddenFinding]) -> str:
    """One sentence for a hunk's findings: the kinds, what was seen, and on which lines."""
    parts = []
    for kind in ("bidi", "invisible", "mixed-script"):
        of_kind = [f for f in findings if f.kind == kind]
        if not of_kind:
            continue
        seen = sorted({c for f in of_kind for c in f.chars})
        lines = ", ".join(str(f.line) for f in of_kind[:5]) + ("…" if len(of_kind) > 5 else "")
        parts.append(f"{KIND_WHY[kind]} ({', '.join(seen[:6])}; line {lines})")
    return "; ".join(parts)


def show_hidden(text: str) -> str:
    """``text`` with each bidi or invisible character replaced by a visible ``⟪U+202E⟫``."""
    if text.isascii():
        return text
    return "".join(f"⟪{code_point(ch)}⟫" if is_hidden_char(ch) else ch for ch in text)


_TERMINAL_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def escape_terminal(text: str) -> str:
    """``text`` safe to print to a terminal: control characters other than newline and tab (ESC, a bare
    CR, C1 controls) as ``\\x1b``-style escapes, bidi and invisible characters as ``<U+202E>``. A
    model's or a file's text can then neither drive the terminal (OSC 52 clipboard writes, OSC 8 links,
    hidden text, clearing the screen) nor overwrite a line the user reads."""
    text = _TERMINAL_UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if text.isascii():
        return text
    return "".join(f"<{code_point(ch)}>" if is_hidden_char(ch) else ch for ch in text)


_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_git_name(name: str) -> bool:
    """``.git`` as any file system may read it: any case, trailing dots or spaces (Windows drops them),
    or its 8.3 short name ``GIT~1``."""
    bare = name.rstrip(". ").lower()
    return bare == ".git" or (bare.startswith("git~") and bare[4:].isdigit())


def name_refusal(path: str) -> str | None:
    """Why ``path`` may not name a file, or None when it may: a control character (C0, DEL, C1: it fakes
    lines in listings, diffs and terminals), a bidi control or invisible character (a name that reads
    as another), or a ``.git`` component in any spelling (a nested repository's config or hooks make git
    run programs). The one check of a name, for every author: Arbor's tools (ide.fs), another agent's
    writes and captured files (the change set) and Apply."""
    if any(is_git_name(part) for part in re.split(r"[/\\]", path)):
        return (
            "a path component is named .git (in some spelling): that is git's metadata, and config or "
            "hooks there make git run programs — no agent writes it"
        )
    if path.isascii() and path.isprintable():
        return None
    found = _NAME_CONTROL.search(path)
    if found is not None:
        char = found.group()
        return (
            f"the path contains the control character {code_point(char)} ({char!r}); use a name without "
            "control characters (they would fake lines in listings and diffs)"
        )
    hidden = next((ch for ch in path if is_hidden_char(ch)), None)
    if hidden is not None:
        what = unicodedata.name(hidden, "a format character") + (", a bidi control" if hidden in BIDI else "")
        return (
            f"the path contains the invisible character {code_point(hidden)} ({what}); use a name without "
            "bidi controls or zero-width characters (they make a name read as another: "
            "notes<U+202E>txt.py looks like notesyp.txt)"
        )
    return None


def scan_hunk(lines: list[str], new_start: int) -> list[HiddenFinding]:
    """What a hunk's added lines hide (``lines`` as the review shows them: ``+``/``-``/`` `` prefixed),
    with new-side line numbers. Removed and context lines are the user's already."""
    findings: list[HiddenFinding] = []
    number = new_start
    for line in lines:
        prefix = line[:1]
        if prefix == "+":
            findings.extend(scan_line(line[1:], number))
        if prefix in ("+", " "):
            number += 1
    return findings
