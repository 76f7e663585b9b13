"""Hunks: any subset applied to the base gives exactly what `git apply` of that subset gives."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ide.changes.hunks import apply_hunks, patch_text, text_hunks

LINES = [
    b"a\n",
    b"b\n",
    b"c\r\n",
    b"d\r\n",
    b"caf\xe9\n",
    b"\xff\xfe\n",
    b"  x = 1\n",
    b"\n",
    b"\r\n",
    b"tail",
]


@st.composite
def base_and_edit(draw: st.DrawFn) -> tuple[bytes, bytes]:
    lines = draw(st.lists(st.sampled_from(LINES[:-1]), min_size=0, max_size=40))
    new = list(lines)
    for _ in range(draw(st.integers(0, 8))):
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        at = draw(st.integers(0, len(new)))
        if op == "insert" or not new:
            new[at:at] = draw(st.lists(st.sampled_from(LINES[:-1]), min_size=1, max_size=3))
        elif op == "replace":
            new[min(at, len(new) - 1)] = draw(st.sampled_from(LINES[:-1]))
        else:
            del new[min(at, len(new) - 1)]
    old_bytes, new_bytes = b"".join(lines), b"".join(new)
    # A missing final newline on either side, sometimes.
    if lines and draw(st.booleans()):
        old_bytes = old_bytes.rstrip(b"\r\n") + b"tail"
    if new and draw(st.booleans()):
        new_bytes = new_bytes.rstrip(b"\r\n")
    return old_bytes, new_bytes


def git_apply(base: bytes, patch: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "f.txt").write_bytes(base)
        (Path(tmp) / "p.diff").write_bytes(patch)
        subprocess.run(
            ["git", "apply", "--whitespace=nowarn", "p.diff"], cwd=tmp, check=True, capture_output=True
        )
        return (Path(tmp) / "f.txt").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base_and_edit(), st.data())
def test_any_hunk_subset_matches_git_apply(pair: tuple[bytes, bytes], data: st.DataObject) -> None:
    old, new = pair
    hunks = text_hunks("f.txt", old, new)
    assert apply_hunks(old, hunks) == new
    subset = [h for h in hunks if data.draw(st.booleans())]
    expected = git_apply(old, patch_text("f.txt", subset)) if subset else old
    assert apply_hunks(old, subset) == expected


def test_hunk_ids_are_stable_and_distinct() -> None:
    old = b"".join(b"line %d\n" % i for i in range(40))
    new = old.replace(b"line 3\n", b"LINE 3\n").replace(b"line 30\n", b"LINE 30\n")
    first, again = text_hunks("f", old, new), text_hunks("f", old, new)
    assert [h.id for h in first] == [h.id for h in again]
    assert len({h.id for h in first}) == 2
    assert first[0].header == "@@ -1,7 +1,7 @@"
    # The same edit elsewhere in the file, or in another file, is another hunk.
    only_first = text_hunks("f", old, old.replace(b"line 3\n", b"LINE 3\n"))
    assert only_first[0].id == first[0].id
    assert text_hunks("g", old, new)[0].id != first[0].id


def test_display_lines_mark_a_missing_final_newline() -> None:
    [hunk] = text_hunks("f", b"a\r\nb", b"a\r\nc")
    assert hunk.display_lines() == [
        " a",
        "-b",
        "\\ No newline at end of file",
        "+c",
        "\\ No newline at end of file",
    ]
