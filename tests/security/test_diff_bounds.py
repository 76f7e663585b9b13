"""Review diffs that no file can abuse: bounded work on any content (on main, 4,000 separated edits took
28 s and a 200,000-line rewrite with repeated lines never finished), and names quoted as git quotes them
(on main ``a\\nb.py`` printed a fake ``+++ b/`` header)."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ide.changes import BatchStore, ChangeSet, Review
from ide.changes.hunks import apply_hunks, text_hunks
from ide.linediff import diff_opcodes
from ide.protocol.diff import quote_path
from ide.protocol.review import unified_diff
from tests.support.git import git


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=40),
    st.lists(st.tuples(st.integers(0, 40), st.sampled_from("abcdxyz"), st.sampled_from("idr")), max_size=8),
)
def test_the_line_diff_turns_one_side_into_the_other(a: list[str], edits: list[tuple[int, str, str]]) -> None:
    b = list(a)
    for position, line, kind in edits:
        at = min(position, len(b))
        if kind == "i":
            b.insert(at, line)
        elif b:
            if kind == "d":
                del b[min(at, len(b) - 1)]
            else:
                b[min(at, len(b) - 1)] = line
    rebuilt: list[str] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in diff_opcodes(a, b):
        assert (i1, j1) == (i, j)
        rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b)) and rebuilt == b


def test_many_separated_edits_are_many_small_hunks() -> None:
    old = [f"line {i}\n" for i in range(40_000)]
    new = list(old)
    for i in range(0, 40_000, 10):
        new[i] = f"changed {i}\n"
    hunks = text_hunks("a.py", "".join(old).encode(), "".join(new).encode())
    assert len(hunks) == 4000 and all(h.old_count <= 7 for h in hunks)
    assert apply_hunks("".join(old).encode(), hunks) == "".join(new).encode()


def test_a_huge_rewrite_of_repeated_lines_is_one_whole_range_hunk() -> None:
    """Bounded by the suite's timeout: on main this never finished."""
    kinds = ["}\n", "\n", "    return x\n", "{\n", "    x += 1\n"]
    rng = random.Random(7)
    old = "".join(rng.choice(kinds) for _ in range(200_000)).encode()
    new = "".join(rng.choice(kinds) for _ in range(200_000)).encode()
    hunks = text_hunks("c.js", old, new)
    assert apply_hunks(old, hunks) == new
    assert len(hunks) <= 3


NAMES = ["plain.py", "a\nb.py", "cr\r.py", 'quote".py', "back\\slash.py", "café.py", "tab\t.py"]


def test_names_are_quoted_exactly_as_git_quotes_them(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for name in NAMES:
        (root / name).write_text("x\n")
    git(root, "add", "-A")
    listed = set(git(root, "-c", "core.quotePath=true", "ls-files").splitlines())
    assert listed == {quote_path(name) for name in NAMES}


def test_a_name_with_a_newline_cannot_fake_a_diff_header(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    changes = ChangeSet(root)
    changes.create("x\n+++ b/etc/passwd", "pwned\n")
    view = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "d")).view()
    text = unified_diff(view)
    headers = [line for line in text.splitlines() if line.startswith(("+++ ", "--- ", "diff --git"))]
    assert headers == [
        'diff --git "a/x\\n+++ b/etc/passwd" "b/x\\n+++ b/etc/passwd"',
        "--- /dev/null",
        '+++ "b/x\\n+++ b/etc/passwd"',
    ]


def test_a_patch_with_a_quoted_name_applies_with_git(tmp_path: Path) -> None:
    from ide.changes.hunks import patch_text

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    name = 'caf\u00e9 "q".txt'
    (root / name).write_bytes(b"one\ntwo\nthree\n")
    hunks = text_hunks(name, b"one\ntwo\nthree\n", b"one\nTWO\nthree\n")
    subprocess.run(["git", "apply", "-"], cwd=root, input=patch_text(name, hunks), check=True)
    assert (root / name).read_bytes() == b"one\nTWO\nthree\n"
