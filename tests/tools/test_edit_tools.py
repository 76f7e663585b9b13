"""The editing tools change only the session's change set, and every read tool sees the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import ChangeSet
from ide.settings import Settings
from ide.tools import Toolbox
from ide.tools import toolbox as make_toolbox


@pytest.fixture
def box(git_workspace: Path) -> Toolbox:
    return make_toolbox(git_workspace, Settings(), ChangeSet(git_workspace))


def test_edits_stay_in_the_overlay_and_reads_see_them(box: Toolbox, git_workspace: Path) -> None:
    before = (git_workspace / "pkg" / "greet.py").read_bytes()
    out = box.call("edit_file", {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"})
    assert not out.failed and "proposed" in out.output
    [diff] = out.diffs
    assert diff.path == str((git_workspace / "pkg" / "greet.py").resolve())
    assert "Hello" in (diff.old_text or "") and "Hi" in (diff.new_text or "")
    assert box.call("create_file", {"path": "pkg/new.py", "content": "Hi = 1\n"}).failed is False
    assert box.call("delete_file", {"path": "README.md"}).failed is False

    assert (git_workspace / "pkg" / "greet.py").read_bytes() == before
    assert not (git_workspace / "pkg" / "new.py").exists()
    assert (git_workspace / "README.md").exists()
    assert "Hi, {name}" in box.call("read_file", {"path": "pkg/greet.py"}).output
    assert "new.py" in box.call("list_dir", {"path": "pkg"}).output.splitlines()
    assert "README.md" not in box.call("list_dir", {"path": "."}).output.splitlines()
    hits = box.call("grep", {"pattern": "Hi"}).output.splitlines()
    assert "pkg/new.py:1: Hi = 1" in hits
    assert any(line.startswith("pkg/greet.py:2:") for line in hits)
    assert "does not exist" in box.call("read_file", {"path": "README.md"}).output


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("edit_file", {"path": "pkg/greet.py", "old_text": "Goodbye", "new_text": "x"}, "greet"),
        ("write_file", {"path": ".git/config", "content": "x"}, "inside git's metadata"),
        ("create_file", {"path": "../escape.py", "content": "x"}, "outside the workspace"),
        ("create_file", {"path": "README.md", "content": "x"}, "exists"),
        ("rename_file", {"path": "README.md", "new_path": "pkg/greet.py"}, "exists"),
        ("delete_file", {"path": "nope.py"}, "nope.py"),
    ],
)
def test_bad_edits_explain_themselves_and_change_nothing(
    box: Toolbox, git_workspace: Path, name: str, args: dict, message: str
) -> None:
    out = box.call(name, args)
    assert out.failed
    assert message in out.output
    assert box.workspace.overlay is not None
    assert box.workspace.overlay.changed_paths() == []
