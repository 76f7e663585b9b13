"""The read-only tools over a real workspace: results, confinement and ignore rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ide.settings import Settings, ToolSettings, WorkspaceSettings
from ide.tools import Toolbox, Workspace
from ide.tools import toolbox as make_toolbox
from ide.tools.read import READ_TOOLS


@pytest.fixture
def toolbox(git_workspace: Path, tmp_path: Path) -> Toolbox:
    outside = tmp_path / "outside.txt"
    outside.write_text("top secret\n")
    os.symlink(outside, git_workspace / "escape.txt")
    os.symlink(tmp_path, git_workspace / "escape_dir")
    (git_workspace / "node_modules" / "lib").mkdir(parents=True)
    (git_workspace / "node_modules" / "lib" / "x.js").write_text("greet()\n")
    (git_workspace / "pkg" / "sub").mkdir()
    (git_workspace / "pkg" / "sub" / ".gitignore").write_text("gen_*.py\n!gen_keep.py\n")
    (git_workspace / "pkg" / "sub" / "gen_a.py").write_text("greet = 1\n")
    (git_workspace / "pkg" / "sub" / "gen_keep.py").write_text("greet = 2\n")
    (git_workspace / "blob.bin").write_bytes(b"\x00\x01greet")
    return make_toolbox(git_workspace, Settings(), read_only=True)


def test_read_file_numbers_lines_and_pages(toolbox: Toolbox) -> None:
    out = toolbox.call("read_file", {"path": "pkg/greet.py"})
    assert not out.failed
    assert out.output.splitlines() == ["1| def greet(name):", '2|     return f"Hello, {name}!"']
    part = toolbox.call("read_file", {"path": "pkg/greet.py", "start_line": 2, "end_line": 2})
    assert part.output.startswith('2|     return f"Hello')
    assert "(lines 2-2 of 2)" in part.output


def test_read_file_caps_lines_and_says_how_to_continue(git_workspace: Path) -> None:
    (git_workspace / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 51)))
    box = Toolbox(Workspace(git_workspace), ToolSettings(read_max_lines=10), READ_TOOLS)
    out = box.call("read_file", {"path": "long.py"}).output
    assert out.splitlines()[-1] == "(lines 1-10 of 50; call read_file with start_line=11 for more)"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.txt", "outside the workspace"),
        ("/etc/passwd", "outside the workspace"),
        ("escape.txt", "outside the workspace"),
        ("escape_dir/outside.txt", "outside the workspace"),
        ("pkg/../../outside.txt", "outside the workspace"),
        ("debug.log", "excluded from the workspace"),
        ("node_modules/lib/x.js", "excluded from the workspace"),
        ("pkg", "is a directory"),
        ("greet.py", "did you mean pkg/greet.py"),
        ("blob.bin", "binary file"),
        ("a\x00b", "NUL"),
    ],
)
def test_read_file_refuses(toolbox: Toolbox, path: str, message: str) -> None:
    out = toolbox.call("read_file", {"path": path})
    assert out.failed
    assert message in out.output
    assert "top secret" not in out.output


def test_list_dir_honours_gitignore_and_excludes(toolbox: Toolbox) -> None:
    listing = toolbox.call("list_dir", {"path": "."}).output.splitlines()
    assert "pkg/" in listing
    assert "README.md" in listing
    assert "debug.log" not in listing
    assert "node_modules/" not in listing
    assert ".git/" not in listing
    sub = toolbox.call("list_dir", {"path": "pkg/sub"}).output.splitlines()
    assert sub == [".gitignore", "gen_keep.py"]


def test_grep_finds_matches_without_leaving_the_workspace(toolbox: Toolbox) -> None:
    out = toolbox.call("grep", {"pattern": r"greet"}).output.splitlines()
    assert "pkg/greet.py:1: def greet(name):" in out
    assert "pkg/sub/gen_keep.py:1: greet = 2" in out
    assert not any("node_modules" in line or "gen_a" in line or "blob.bin" in line for line in out)
    assert not any("escape" in line for line in out)
    assert toolbox.call("grep", {"pattern": "secret"}).output == "no matches for 'secret'"


def test_grep_caps_matches(git_workspace: Path) -> None:
    (git_workspace / "many.txt").write_text("hit\n" * 30)
    box = Toolbox(Workspace(git_workspace), ToolSettings(grep_max_matches=5), READ_TOOLS)
    out = box.call("grep", {"pattern": "hit", "path": "many.txt"}).output.splitlines()
    assert len(out) == 6
    assert out[-1].startswith("(stopped at 5 matches")


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("grep", {"pattern": "("}, "invalid regular expression"),
        ("read_file", {}, "bad arguments for read_file: path: Field required"),
        ("read_file", {"path": "README.md", "start_line": 0}, "start_line"),
        ("write_file", {"path": "x"}, "there is no tool 'write_file'"),
        ("list_dir", {"path": "README.md"}, "is not a directory"),
    ],
)
def test_bad_calls_explain_themselves(toolbox: Toolbox, name: str, args: dict, message: str) -> None:
    out = toolbox.call(name, args)
    assert out.failed
    assert message in out.output


def test_describe_gives_acp_metadata(toolbox: Toolbox, git_workspace: Path) -> None:
    title, kind, locations = toolbox.describe("read_file", {"path": "pkg/greet.py", "start_line": 2})
    assert (title, kind) == ("Read pkg/greet.py lines 2-end", "read")
    assert locations == [(str(git_workspace.resolve() / "pkg" / "greet.py"), 2)]
    assert toolbox.describe("grep", {"pattern": "x"})[1] == "search"


def test_large_files_are_refused(git_workspace: Path) -> None:
    (git_workspace / "big.txt").write_text("x" * 2000)
    box = Toolbox(
        Workspace(git_workspace, WorkspaceSettings(max_file_bytes=1000)), ToolSettings(), READ_TOOLS
    )
    assert "over the 1000-byte limit" in box.call("read_file", {"path": "big.txt"}).output
