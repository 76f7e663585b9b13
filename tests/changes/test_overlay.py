"""The overlay: reads see the agent's edits, the disk never does, and children are isolated."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import ChangeError, ChangeSet


def test_edits_are_seen_through_the_overlay_and_never_written(git_workspace: Path) -> None:
    cs = ChangeSet(git_workspace)
    cs.edit("pkg/greet.py", "Hello", "Hi")
    cs.create("pkg/new.py", "x = 1\n")
    cs.delete("README.md")
    assert "Hi, {name}" in cs.read_text("pkg/greet.py")
    assert "Hello" in (git_workspace / "pkg/greet.py").read_text()
    assert not (git_workspace / "pkg/new.py").exists()
    assert cs.read_text("pkg/new.py") == "x = 1\n"
    assert not cs.exists("README.md")
    with pytest.raises(FileNotFoundError):
        cs.read_text("README.md")
    assert cs.changed_paths() == ["README.md", "pkg/greet.py", "pkg/new.py"]


def test_listdir_merges_creates_deletes_and_renames(git_workspace: Path) -> None:
    cs = ChangeSet(git_workspace)
    cs.rename("pkg/greet.py", "lib/greeting.py")
    cs.delete("README.md")
    cs.create("pkg/extra.py", "")
    root = dict(cs.listdir("."))
    assert root["lib"] is True and root["pkg"] is True
    assert "README.md" not in root
    assert cs.listdir("pkg") == [("__init__.py", False), ("extra.py", False)]
    assert cs.listdir("lib") == [("greeting.py", False)]
    assert cs.is_dir("lib") and not cs.exists("pkg/greet.py")
    assert cs.diff_texts("lib/greeting.py")[0] == cs.diff_texts("lib/greeting.py")[1]
    cs.delete("pkg/__init__.py")
    cs.delete("pkg/extra.py")
    assert not cs.is_dir("pkg")
    assert "pkg" not in dict(cs.listdir("."))


def test_missing_match_shows_the_nearest_lines(git_workspace: Path) -> None:
    cs = ChangeSet(git_workspace)
    with pytest.raises(ChangeError) as err:
        cs.edit("pkg/greet.py", '    return f"Helo, {name}"', "x")
    message = str(err.value)
    assert "not found in pkg/greet.py" in message
    assert '    2:     return f"Hello, {name}!"' in message


def test_ambiguous_match_lists_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\ny = 2\nx = 1\n")
    cs = ChangeSet(tmp_path)
    with pytest.raises(ChangeError, match=r"matches 2 places in f.py \(lines 1, 3\)"):
        cs.edit("f.py", "x = 1", "x = 3")
    assert cs.edit("f.py", "x = 1\ny", "x = 3\ny") == 1
    assert cs.read_text("f.py") == "x = 3\ny = 2\nx = 1\n"


def test_create_and_rename_refuse_existing_targets(git_workspace: Path) -> None:
    cs = ChangeSet(git_workspace)
    with pytest.raises(ChangeError, match="already exists"):
        cs.create("README.md", "")
    with pytest.raises(ChangeError, match="already exists"):
        cs.rename("README.md", "pkg/greet.py")
    with pytest.raises(ChangeError, match="does not exist"):
        cs.delete("nope.txt")


def test_child_sees_parent_edits_but_not_the_reverse(git_workspace: Path) -> None:
    parent = ChangeSet(git_workspace)
    parent.edit("README.md", "demo", "parent")
    child = parent.child()
    assert child.id != parent.id
    assert "parent" in child.read_text("README.md")
    child.edit("README.md", "parent", "child")
    child.create("child.txt", "c\n")
    assert "parent" in parent.read_text("README.md")
    assert not parent.exists("child.txt")
    parent.edit("pkg/greet.py", "Hello", "Yo")
    assert "Hello" in child.read_text("pkg/greet.py")


def test_crlf_latin1_and_missing_final_newline_survive_an_edit(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"caf\xe9\r\nline2\r\nend")
    (tmp_path / "mixed.txt").write_bytes(b"a\r\nb\nc\r\n")
    cs = ChangeSet(tmp_path)
    assert cs.read_text("w.txt") == "café\nline2\nend"
    cs.edit("w.txt", "line2", "line two\nline 2b")
    assert cs.read_bytes("w.txt") == b"caf\xe9\r\nline two\r\nline 2b\r\nend"
    cs.edit("mixed.txt", "b", "B")
    assert cs.read_bytes("mixed.txt") == b"a\r\nB\r\nc\r\n"
    with pytest.raises(ChangeError, match="latin-1"):
        cs.edit("w.txt", "end", "€")
    cs.write("w.txt", "new\n")
    assert cs.read_bytes("w.txt") == b"new"


def test_a_file_reads_as_on_disk_until_an_edit_records_its_base(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("v1\n")
    cs = ChangeSet(tmp_path)
    assert cs.read_text("f.txt") == "v1\n"
    (tmp_path / "f.txt").write_text("v2\n")
    assert cs.read_text("f.txt") == "v2\n"
    cs.edit("f.txt", "v2", "v3")
    (tmp_path / "f.txt").write_text("v4\n")
    assert cs.read_text("f.txt") == "v3\n"
    assert cs.base("f.txt").data == b"v2\n"
