"""Names and modes checked for every author (issue 45 item 4, issue 46 item 3).

On main a foreign agent's files, captured from its shadow into the change set, could be named with a
newline, a carriage return, a tab, an escape sequence or U+202E — ``arbor run --apply`` wrote and committed
them, though Arbor's own tools refuse such names — and files it created 4755 or 6755 kept their setuid and
setgid bits on disk after Apply. Here the change set is fed as the shadow feeds it (``rebase`` to the
baseline, then ``set_entry``); an entry that got in some other way (a restored snapshot) is refused again
at Apply.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review
from ide.changes.overlay import Base, Entry
from ide.fs import ToolError, check_path_text
from ide.protocol.review import DecideParams, unified_diff
from tests.support.git import git

BAD_NAMES = [
    ("new\nline.py", "U+000A"),
    ("ends-cr\r.py", "U+000D"),
    ("tab\there.py", "U+0009"),
    ("\x1b[2Jclear.py", "U+001B"),
    ("notes\u202etxt.py", "U+202E"),
    ("pkg/del\x7f.py", "U+007F"),
    ("c1\x9b31m.py", "U+009B"),
    ("pkg/zero\u200bwidth.py", "U+200B"),
]


@pytest.mark.parametrize(("name", "code"), BAD_NAMES)
def test_a_captured_file_with_such_a_name_is_refused_with_the_character(
    git_workspace: Path, name: str, code: str
) -> None:
    changes = ChangeSet(git_workspace)
    with pytest.raises(ChangeError, match=f"{re.escape(code)}.*characters") as refused:
        changes.rebase(name, Base(None, None))
    assert name not in str(refused.value)  # the name is quoted, never printed raw
    with pytest.raises(ChangeError, match=re.escape(code)):
        changes.set_entry(name, Entry(b"print(1)\n", 0o644))
    with pytest.raises(ChangeError, match=re.escape(code)):
        changes.set_entry("moved.py", Entry(b"x\n", 0o644, origin=name))  # renamed from such a name
    assert changes.recorded() == ({}, {}) and changes.changed_paths() == []
    changes.set_entry(name, None)  # forgetting one is always allowed
    # Names in other scripts, and spaces, stay allowed.
    changes.set_entry("docs/привет.md", Entry(b"hi\n", 0o644))
    changes.write_bytes("src/café.py", b"x = 1\n")
    changes.write_bytes("a name with spaces.txt", b"x\n")
    assert changes.changed_paths() == ["a name with spaces.txt", "docs/привет.md", "src/café.py"]


@pytest.mark.parametrize(("name", "code"), BAD_NAMES)
def test_every_edit_of_the_change_set_refuses_it_as_arbor_s_tools_do(
    git_workspace: Path, name: str, code: str
) -> None:
    changes = ChangeSet(git_workspace)
    for edit in (
        lambda: changes.write_bytes(name, b"x\n"),  # another agent's write (_arbor/external/write)
        lambda: changes.create(name, "x\n"),
        lambda: changes.rename("README.md", name),
    ):
        with pytest.raises(ChangeError, match=re.escape(code)):
            edit()
    assert changes.changed_paths() == []
    with pytest.raises(ToolError) as tool:
        check_path_text(name)
    with pytest.raises(ChangeError) as change:
        changes.write_bytes(name, b"x")
    assert str(tool.value) in str(change.value)  # one check, one reason, for the tools and the change set


@pytest.mark.parametrize(("name", "code"), BAD_NAMES[:5])
def test_apply_refuses_such_an_entry_that_got_in_another_way_and_writes_nothing(
    git_workspace: Path, tmp_path: Path, name: str, code: str
) -> None:
    root = git_workspace
    head = git(root, "rev-parse", "HEAD")
    bases = {name: Base(None, None), "ok.py": Base(None, None)}
    entries = {name: Entry(b"print(1)\n", 0o644), "ok.py": Entry(b"ok\n", 0o644)}
    store = BatchStore(tmp_path / "data")
    review = Review(ChangeSet.from_recorded(root, bases, entries), session_id="s", title="t", store=store)
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    with pytest.raises(ChangeError, match=f"Apply wrote nothing: .*{re.escape(code)}.*Reject that file"):
        review.apply()
    assert not (root / name).exists() and not (root / "ok.py").exists()
    assert git(root, "rev-parse", "HEAD") == head and store.history(str(root)) == []
    review.decide(DecideParams(session_id="s", decision="rejected", paths=[name]))
    result = review.apply()
    assert result.batch is not None and result.batch.paths == ["ok.py"] and not (root / name).exists()


@pytest.mark.parametrize("special", [0o4755, 0o6755, 0o2755, 0o1755, 0o4644])
def test_setuid_setgid_and_sticky_bits_are_never_written(
    git_workspace: Path, tmp_path: Path, special: int
) -> None:
    root = git_workspace
    written = 0o755 if special & 0o111 else 0o644
    changes = ChangeSet(root)
    changes.rebase("tool.sh", Base(None, None))  # a file the agent created, as the shadow captures it
    changes.set_entry("tool.sh", Entry(b"#!/bin/sh\necho hi\n", special))
    greet = root / "pkg/greet.py"  # and an existing file it chmod-ed
    changes.rebase("pkg/greet.py", Base(greet.read_bytes(), 0o644))
    changes.set_entry("pkg/greet.py", Entry(greet.read_bytes(), special))
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    text = unified_diff(review.view())
    assert f"new file mode 100{written:o}\n" in text
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    result = review.apply()
    assert result.batch is not None and result.batch.commit
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == written
    listed = git(root, "ls-tree", "HEAD", "--", "tool.sh", "pkg/greet.py").splitlines()
    committed = {line.split("\t")[1]: line.split(" ")[0] for line in listed}
    assert committed == {"tool.sh": f"100{written:o}", "pkg/greet.py": f"100{written:o}"}
    assert stat.S_IMODE(greet.stat().st_mode) == written
    assert {e.post_mode for e in review.store.files(result.batch.id)} == {written}
