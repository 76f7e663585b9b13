"""Paths and walks the agent cannot abuse: no ``.git`` in any spelling, no control characters, no
look-alike names, bounded length and depth checked before any file system work; walks survive link loops
and absurdly deep trees; files over ``workspace.max_file_bytes`` are never read, also through the change set.

On main: ``.git`` files and ``.GIT`` paths were written, ``a\\nb.py`` faked diff headers, ``café`` twice
made two files, a 1,000-deep ``create_file`` burned a core for minutes, a 1,400-deep tree raised
RecursionError, a symlink loop crashed ``arbor index`` and ``list_dir``, and the change set read a 1 GB
file whole."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.settings import Settings
from ide.tools import toolbox as make_toolbox
from tests.support.path_calls import calls


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "a.py").write_text("x = 1\n")
    (workspace / "sub" / ".git").write_text("gitdir: ../docs/_cache\n")  # a gitlink file
    return workspace


GIT_SPELLINGS = [
    ".git",
    ".git/config",
    "sub/.git",
    ".GIT/hooks/post-checkout",
    ".Git/config",
    ".git./config",
    ".git /config",
    "GIT~1/config",
    "docs/.git/hooks/pre-commit",
    "pkg\\.git\\config",
]


@pytest.mark.parametrize("path", GIT_SPELLINGS)
def test_no_tool_touches_git_metadata_in_any_spelling(root: Path, path: str) -> None:
    changeset = ChangeSet(root)
    toolbox = make_toolbox(root, Settings(), changeset)
    for name, args in calls(path):
        outcome = toolbox.call(name, args)
        if name == "rename_file" and args.get("path") == "pkg/a.py" and path.startswith("pkg"):
            assert outcome.failed, (name, args)
            continue
        assert outcome.failed, (name, path, outcome.output)
        assert "gitdir" not in outcome.output
    assert changeset.changed_paths() == []
    assert (root / "sub" / ".git").read_text() == "gitdir: ../docs/_cache\n"


def test_listings_searches_and_the_index_never_show_git_metadata(root: Path, tmp_path: Path) -> None:
    toolbox = make_toolbox(root, Settings(), ChangeSet(root))
    assert ".git" not in toolbox.call("list_dir", {"path": "sub"}).output
    assert toolbox.call("grep", {"pattern": "gitdir"}).output == "no matches for 'gitdir'"
    index = CodeIndex(root, tmp_path / "index.sqlite", Settings().workspace)
    index.refresh()
    assert not [p for p in index.paths((".py", "")) if ".git" in p]
    index.close()


@pytest.mark.parametrize(
    "name", ["a\nb.py", "x\r.py", "\x1b[31mred.py", "tab\there.py", "del\x7f.py", "c1\x85.py"]
)
def test_control_characters_in_names_are_refused(root: Path, name: str) -> None:
    changeset = ChangeSet(root)
    outcome = make_toolbox(root, Settings(), changeset).call("create_file", {"path": name, "content": "x"})
    assert outcome.failed and "control character" in outcome.output
    assert changeset.changed_paths() == []


@pytest.mark.parametrize("existing_form", ["NFC", "NFD"])
def test_a_name_that_looks_like_an_existing_one_is_refused(root: Path, existing_form: str) -> None:
    other_form = "NFD" if existing_form == "NFC" else "NFC"
    existing = unicodedata.normalize(existing_form, "café.py")
    (root / "pkg" / existing).write_text("BREW = 1\n")
    lookalike = unicodedata.normalize(other_form, "café.py")
    assert lookalike != existing
    changeset = ChangeSet(root)
    toolbox = make_toolbox(root, Settings(), changeset)
    created = toolbox.call("create_file", {"path": f"pkg/{lookalike}", "content": "evil"})
    assert created.failed and "looks the same" in created.output and existing in created.output
    renamed = toolbox.call("rename_file", {"path": "pkg/a.py", "new_path": f"pkg/{lookalike}"})
    assert renamed.failed
    # The name itself is fine when nothing looks like it.
    assert not toolbox.call("create_file", {"path": f"sub/{lookalike}", "content": "ok"}).failed


def test_an_absurdly_deep_path_is_refused_at_once(root: Path) -> None:
    """On main one such create_file burned a core for minutes (cost ~cubic in depth)."""
    deep = "/".join(["d"] * 1000) + "/f.py"
    toolbox = make_toolbox(root, Settings(), ChangeSet(root))
    started = time.perf_counter()
    outcome = toolbox.call("create_file", {"path": deep, "content": "x"})
    assert outcome.failed and "paths are limited" in outcome.output
    assert time.perf_counter() - started < 5
    assert (
        "100 directories deep"
        in toolbox.call("create_file", {"path": "d/" * 99 + "f.py", "content": "x"}).output
    )
    long = "x" * 5000
    assert "characters long" in toolbox.call("read_file", {"path": long}).output


def make_deep_tree(root: Path, levels: int) -> Path:
    """``levels`` nested directories, made with relative paths (one absolute path would be too long)."""
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(levels):
            os.mkdir("d")
            os.chdir("d")
        Path("deep.py").write_text("HIDDEN = 1\n")
    finally:
        os.chdir(here)
    return root


def remove_deep_tree(root: Path, levels: int) -> None:
    """Undo :func:`make_deep_tree` bottom up (shutil.rmtree recurses and fails on it, like os.walk)."""
    here = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(levels):
            os.chdir("d")
        os.remove("deep.py")
        for _ in range(levels):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


@pytest.fixture
def deep_root(root: Path) -> Iterator[Path]:
    make_deep_tree(root, 1400)
    yield root
    remove_deep_tree(root, 1400)


def test_walks_survive_a_1400_deep_tree_and_say_what_they_skipped(deep_root: Path, tmp_path: Path) -> None:
    """On main: RecursionError, and the turn ended."""
    root = deep_root
    toolbox = make_toolbox(root, Settings(), ChangeSet(root))
    found = toolbox.call("grep", {"pattern": "x = 1"})
    assert not found.failed and "pkg/a.py:1" in found.output
    assert "skipped 1 directories deeper than 64 levels" in found.output
    assert not toolbox.call("list_dir", {"path": "d/d/d"}).failed
    index = CodeIndex(root, tmp_path / "index.sqlite", Settings().workspace)
    index.refresh()
    index.close()


def test_symlink_loops_crash_nothing(root: Path, tmp_path: Path) -> None:
    """On main: OSError [Errno 40] from arbor index, arbor symbols, list_dir and grep."""
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "pkg" / "self").symlink_to(".", target_is_directory=True)
    (root / "pkg" / "greet.py").write_text("def greet():\n    return 1\n")
    toolbox = make_toolbox(root, Settings(), ChangeSet(root))
    listing = toolbox.call("list_dir", {"path": "."})
    assert not listing.failed and "loop1" not in listing.output
    assert "pkg/a.py:1" in toolbox.call("grep", {"pattern": "x"}).output
    env = {**os.environ, "ARBOR_DATA_DIR": str(tmp_path / "data")}
    for args in (["index", str(root)], ["symbols", str(root), "greet"]):
        done = subprocess.run(
            [sys.executable, "-m", "ide", *args], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_a_huge_file_is_never_read_also_not_through_the_change_set(root: Path) -> None:
    """A sparse 1 GB file: on main the change set read it whole (the backend grew to 1.1 GB)."""
    huge = root / "pkg" / "dump.sql"
    with huge.open("wb") as handle:
        handle.truncate(1 << 30)
    changeset = ChangeSet(root, max_file_bytes=Settings().workspace.max_file_bytes)
    toolbox = make_toolbox(root, Settings(), changeset)
    started = time.perf_counter()
    for name, args in (
        ("read_file", {"path": "pkg/dump.sql"}),
        ("edit_file", {"path": "pkg/dump.sql", "old_text": "a", "new_text": "b"}),
        ("write_file", {"path": "pkg/dump.sql", "content": "small"}),
    ):
        outcome = toolbox.call(name, args)
        assert outcome.failed and "over the 1000000-byte limit" in outcome.output, (name, outcome.output)
    assert time.perf_counter() - started < 5
    assert changeset.changed_paths() == []


def test_index_workers_never_exceed_the_cpus(tmp_path: Path) -> None:
    index = CodeIndex(tmp_path, tmp_path / "i.sqlite", workers=48)
    assert index.workers == (os.cpu_count() or 1)
    index.close()
