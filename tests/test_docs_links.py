"""Every relative link and ``#anchor`` in README.md and docs/*.md resolves, as GitHub renders them: a moved
section or a renamed heading fails here, not in a reader's browser."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
"""A fence opens a code block; a backtick fence's info string holds no backtick (```` ```x ```` is code)."""
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with their 1-based numbers."""
    lines: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        else:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without markup, lowercase, punctuation other than '-' and
    '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's (or image's) text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # emphasis underscores, not those inside names
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = "".join(char for char in text if char.isalnum() or char in "-_ ")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of ``page``; a repeated heading gets -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(page.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[int, str]]:
    """The targets of the links and images in ``page``'s prose (not in code), with their line numbers."""
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(page.read_text()):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            found.append((number, match.group(1)))
    return found


def broken(page: Path) -> list[str]:
    """Each link of ``page`` that leads nowhere: a missing file, or an anchor no heading has."""
    problems: list[str] = []
    for number, target in links(page):
        if target.startswith(EXTERNAL):
            continue
        path_part, _, fragment = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{number}: {target}"
        if not destination.exists():
            problems.append(f"{where} — no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            problems.append(f"{where} — no heading with this anchor in {destination.name}")
    return problems


def test_every_relative_link_and_anchor_in_the_readme_and_docs_resolves() -> None:
    problems = [problem for page in PAGES for problem in broken(page)]
    assert problems == []
    readme = [target for _, target in links(ROOT / "README.md")]
    # The check has something to check: the README links its docs, pictures and its own sections.
    assert sum(t.startswith("docs/") for t in readme) >= 8 and any(t.startswith("#") for t in readme)
    assert any(t.startswith("resources/screenshots/") for t in readme)


def test_the_check_finds_a_broken_file_link_a_broken_anchor_and_ignores_code(tmp_path: Path) -> None:
    other = "# Other\n\n## Setup: `arbor run --agent` (CLI)\n\n## Setup\n\n## Setup\n"
    (tmp_path / "other.md").write_text(other)
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Five minutes\n\n"
        "[ok](#five-minutes) [ok](other.md#setup-arbor-run---agent-cli) [ok](other.md#setup-1)\n"
        "![ok](other.md) [web](https://example.invalid/#nowhere)\n"
        "  ```` ```json ```` is inline code, not a fence: the links below are checked\n"
        "[gone](missing.md) [bad](#five-minute) [bad](other.md#setup-2)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n"
    )
    assert slug("Measure the architectures: `arbor eval`") == "measure-the-architectures-arbor-eval"
    assert slug("Use Arbor's agent from Zed") == "use-arbors-agent-from-zed"
    assert [problem.split(": ", 1)[1] for problem in broken(page)] == [
        "missing.md — no such file",
        "#five-minute — no heading with this anchor in page.md",
        "other.md#setup-2 — no heading with this anchor in other.md",
    ]
