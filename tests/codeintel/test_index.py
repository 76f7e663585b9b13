"""The index over real files in a temp workspace: full and incremental passes, bad input, search, CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from ide.cli import main
from ide.codeintel.index import CodeIndex, extract, parsing, store
from ide.codeintel.index.languages import TAGGED
from ide.settings import WorkspaceSettings

APP = '''"""The app."""
import os
from pkg.util import slugify

MAX_ITEMS = 10


class Catalog:
    """Holds items."""

    def add_item(self, name: str) -> None:
        self.items.append(slugify(name))

    def find_item(self, name):
        return name in self.items


def build_catalog() -> Catalog:
    return Catalog()
'''

UTIL = '''def slugify(text: str) -> str:
    """Lower-case words joined by dashes."""
    return "-".join(text.lower().split())
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "app.py").write_text(APP)
    (root / "pkg" / "util.py").write_text(UTIL)
    (root / "notes.md").write_text("# notes\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "big.py").write_text("def ignored(): pass\n")
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "index.js").write_text("function excluded() {}\n")
    return root


@pytest.fixture
def index(workspace: Path, tmp_path: Path) -> CodeIndex:
    built = CodeIndex(workspace, tmp_path / "data" / "index.sqlite", WorkspaceSettings(max_file_bytes=10_000))
    yield built
    built.close()


def names(index: CodeIndex) -> set[tuple[str, str, int]]:
    return {(s.path, s.qualname, s.line) for s in index.definitions()}


def test_full_pass_indexes_definitions_and_honours_ignores(index: CodeIndex) -> None:
    stats = index.refresh()
    assert names(index) == {
        ("pkg/app.py", "MAX_ITEMS", 5),
        ("pkg/app.py", "Catalog", 8),
        ("pkg/app.py", "Catalog.add_item", 11),
        ("pkg/app.py", "Catalog.find_item", 14),
        ("pkg/app.py", "build_catalog", 18),
        ("pkg/util.py", "slugify", 1),
    }
    assert stats.files == 3  # app.py, util.py and the file-level entry of notes.md
    assert stats.skipped == 2  # logo.png (no language) and .gitignore
    assert stats.symbols == 6
    assert stats.parsed == 4  # .gitignore has no suffix: it is read for a #! line, then skipped
    outline = index.outline("pkg/app.py")
    assert [(s.kind, s.name) for s in outline] == [
        ("constant", "MAX_ITEMS"),
        ("class", "Catalog"),
        ("method", "add_item"),
        ("method", "find_item"),
        ("function", "build_catalog"),
    ]
    add_item = outline[2]
    assert add_item.signature == "def add_item(self, name: str) -> None"
    assert (add_item.params, add_item.returns, add_item.parent) == ("(self, name: str)", "None", "Catalog")
    assert outline[1].doc == "Holds items."
    assert index.references("slugify") == [("pkg/app.py", 3 - 0 + 9)]
    assert index.file("notes.md").language == "markdown"


def test_second_pass_with_nothing_changed_parses_nothing(index: CodeIndex) -> None:
    index.refresh()
    generation = index.generation
    again = index.refresh()
    # app.py, util.py, notes.md and .gitignore (no suffix: read once for a #! line) are not read again
    assert (again.parsed, again.unchanged, again.removed) == (0, 4, 0)
    assert index.generation == generation
    assert (again.files, again.scanned, again.skipped, again.not_code) == (3, 5, 2, 2)
    assert again.describe() == "3 indexed of 5 files, 2 skipped (2 not code)"


def test_counts_say_what_they_count(index: CodeIndex, workspace: Path) -> None:
    (workspace / "blob.py").write_bytes(b"\x00\x01binary")
    (workspace / "huge.py").write_text("x = 1\n" * 3000)  # over max_file_bytes = 10,000
    seen: list[tuple[int, int]] = []
    stats = index.refresh(progress=lambda done, total: seen.append((done, total)))
    assert (stats.scanned, stats.files, stats.skipped) == (7, 3, 4)
    assert (stats.not_code, stats.binary, stats.too_large) == (2, 1, 1)
    assert stats.describe() == "3 indexed of 7 files, 4 skipped (2 not code, 1 binary, 1 too large)"
    assert seen[-1] == (7, 7) and all(total == 7 for _, total in seen)  # progress over every file
    (workspace / "pkg" / "new.py").write_text("def fresh():\n    pass\n")
    index.update_paths(["pkg/new.py"])
    assert (index.stats().files, index.stats().scanned) == (4, 8)
    (workspace / "pkg" / "new.py").unlink()
    index.update_paths(["pkg/new.py"])
    assert (index.stats().files, index.stats().scanned) == (3, 7)


def test_touched_file_is_hashed_not_parsed(index: CodeIndex, workspace: Path) -> None:
    index.refresh()
    util = workspace / "pkg" / "util.py"
    os.utime(util, ns=(util.stat().st_atime_ns, util.stat().st_mtime_ns + 5_000_000_000))
    again = index.refresh()
    assert (again.parsed, again.unchanged) == (0, 4)  # util.py hashed, the others by their stat
    assert index.refresh().parsed == 0  # the new mtime was remembered


def test_edit_rename_and_delete_reach_the_index(index: CodeIndex, workspace: Path) -> None:
    index.refresh()
    util = workspace / "pkg" / "util.py"
    util.write_text(UTIL + "\n\ndef titlecase(text):\n    return text.title()\n")
    stats = index.update_paths([util])
    assert stats.parsed == 1
    assert ("pkg/util.py", "titlecase", 6) in names(index)

    renamed = workspace / "pkg" / "text.py"
    util.rename(renamed)
    index.update_paths([util, renamed])
    assert {path for path, _name, _line in names(index)} == {"pkg/app.py", "pkg/text.py"}
    assert [hit.path for hit in index.search("titlecase", 5)] == ["pkg/text.py"]

    (workspace / "pkg" / "app.py").unlink()
    index.update_paths([workspace / "pkg" / "app.py"])
    assert index.search("Catalog", 5) == []
    assert index.references("slugify") == []


def test_a_deleted_directory_removes_everything_under_it(index: CodeIndex, workspace: Path) -> None:
    index.refresh()
    for path in (workspace / "pkg").iterdir():
        path.unlink()
    (workspace / "pkg").rmdir()
    stats = index.update_paths(["pkg"])
    assert stats.removed == 2
    assert names(index) == set()


def test_a_new_directory_is_indexed_whole(index: CodeIndex, workspace: Path) -> None:
    index.refresh()
    (workspace / "extra" / "deep").mkdir(parents=True)
    (workspace / "extra" / "deep" / "mod.py").write_text("class Deep:\n    pass\n")
    index.update_paths([workspace / "extra"])
    assert ("extra/deep/mod.py", "Deep", 1) in names(index)


def test_bad_input_is_indexed_as_far_as_possible(index: CodeIndex, workspace: Path) -> None:
    (workspace / "broken.py").write_text(
        "def good():\n    pass\n\ndef bad(:\n    pass\n\nclass AlsoGood:\n    pass\n"
    )
    (workspace / "latin1.py").write_bytes(
        b"# caf\xe9\ndef caf\xe9_name():\n    pass\n\ndef ascii_name():\n    pass\n"
    )
    (workspace / "huge.py").write_text("x = 1\n" * 3000)  # over the 10,000-byte limit of this index
    (workspace / "nul.py").write_bytes(b"def f():\x00\n")
    (workspace / "minified.js").write_text("function f(){return 1};" * 400)
    stats = index.refresh()
    found = names(index)
    assert {("broken.py", "good", 1), ("broken.py", "AlsoGood", 7)} <= found
    assert ("latin1.py", "ascii_name", 5) in found
    assert index.file("broken.py").status == "partial"
    assert index.file("huge.py").status == "skipped"
    assert "workspace.max_file_bytes" in index.file("huge.py").note
    assert index.file("nul.py").status == "skipped"
    assert stats.failed >= 1 and stats.skipped >= 3


def test_an_index_of_an_older_schema_is_rebuilt(index: CodeIndex, workspace: Path, tmp_path: Path) -> None:
    index.refresh()
    index.close()
    db = sqlite3.connect(tmp_path / "data" / "index.sqlite")
    db.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION - 1}")
    db.commit()
    db.close()
    reopened = CodeIndex(workspace, tmp_path / "data" / "index.sqlite")
    assert reopened.stats().files == 0
    assert reopened.refresh().symbols == 6
    reopened.close()


def test_search_ranks_exact_then_prefix_then_substring_then_fuzzy(index: CodeIndex, workspace: Path) -> None:
    (workspace / "more.py").write_text(
        "def item():\n    pass\n\ndef items_total():\n    pass\n\ndef get_item_name():\n    pass\n"
        "\ndef iterate_them():\n    pass\n"
    )
    index.refresh()
    hits = [hit.name for hit in index.search("item", 10)]
    assert hits[:2] == ["item", "items_total"]  # exact, then prefix
    assert set(hits[2:6]) == {"add_item", "find_item", "get_item_name", "MAX_ITEMS"}  # at a word start
    assert set(hits[6:]) == {"Catalog", "iterate_them"}  # its docstring, a fuzzy subsequence: last
    assert [hit.name for hit in index.search("bldcat", 5)] == ["build_catalog"]
    assert [hit.name for hit in index.search("dashes", 5)] == ["slugify"]  # its docstring
    scores = [hit.score for hit in index.search("item", 10)]
    assert scores == sorted(scores, reverse=True)


def test_search_finds_subsequences_anywhere_in_a_name(index: CodeIndex, workspace: Path) -> None:
    (workspace / "flags.py").write_text(
        "def get_debug_flag():\n    pass\n\ndef dbgflag():\n    pass\n\ndef dbgflag_reset():\n    pass\n"
        "\ndef do_big_flagging_things():\n    pass\n"
    )
    index.refresh()
    hits = [hit.name for hit in index.search("dbgflag", 10)]
    assert hits[:2] == ["dbgflag", "dbgflag_reset"]  # exact, then prefix, then the subsequences
    assert set(hits[2:]) == {"get_debug_flag", "do_big_flagging_things"}
    assert [hit.name for hit in index.search("gdbgflag", 5)] == ["get_debug_flag"]
    assert [hit.name for hit in index.search("dditem", 5)] == ["add_item"]
    assert [hit.name for hit in index.search("DBGFLAG", 5)][:1] == ["dbgflag"]
    assert index.search("gflagd", 5) == []  # letters out of order: no subsequence


def test_cli_index_stats_and_symbols(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(workspace), "--stats"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert {"files", "skipped", "failed", "symbols", "references", "seconds", "db_bytes"} <= figures.keys()
    assert figures["symbols"] == 6 and figures["db_bytes"] > 0

    assert main(["symbols", str(workspace), "catal", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["name"] == "Catalog"
    assert hits[0]["path"] == str(workspace.resolve() / "pkg" / "app.py")
    assert {"name", "kind", "path", "line", "signature", "score"} <= hits[0].keys()

    assert main(["symbols", str(workspace), "--all", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 6

    assert main(["symbols", str(workspace), "slugi"]) == 0
    assert "pkg/util.py:1" in capsys.readouterr().out
    assert main(["symbols", str(workspace), "zzzqqq"]) == 1
    assert "no symbol matches" in capsys.readouterr().err


def test_a_pass_killed_in_bulk_mode_is_repaired_on_open(
    index: CodeIndex, workspace: Path, tmp_path: Path
) -> None:
    index.refresh()
    index.close()
    db = sqlite3.connect(tmp_path / "data" / "index.sqlite")
    db.executescript(
        "DROP TRIGGER defs_ai; DROP TRIGGER defs_ad; DROP INDEX defs_name; DELETE FROM defs_fts;"
    )
    db.close()
    reopened = CodeIndex(workspace, tmp_path / "data" / "index.sqlite")
    found = [hit.name for hit in reopened.search("atalo", 5)]
    assert found[:2] == ["Catalog", "build_catalog"]  # the trigram table is back
    (workspace / "pkg" / "util.py").write_text("def unslug(text):\n    return text\n")
    reopened.update_paths(["pkg/util.py"])
    assert [hit.name for hit in reopened.search("nslu", 5)] == ["unslug"]  # and kept current again
    reopened.close()


def test_a_bulk_pass_checkpoints_less_and_gives_the_default_back(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    db = store.connect(path)
    default = db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    rows = (None, "ok", "", 1, [("f", "f", "function", 1, 1, "def f()", "()", "", "", "")], [], [])
    with store.bulk(db):
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == store.BULK_CHECKPOINT_PAGES
        store.write_files(db, [(f"m{i}.py", 1, 1, "", rows, None) for i in range(3000)])
        db.commit()
        assert path.stat().st_size < 100_000  # all in the WAL meanwhile
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == default
    pages, page_size = (db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
    assert path.stat().st_size == pages * page_size > 100_000  # and in the file once it is done
    with pytest.raises(RuntimeError), store.bulk(db):
        raise RuntimeError("a pass that failed")
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == default
    db.close()


def test_two_processes_on_one_folder_parse_it_once(workspace: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    for i in range(60):
        (workspace / "pkg" / f"mod{i}.py").write_text(f"def function_{i}():\n    return {i}\n")
    env = {**os.environ, "ARBOR_DATA_DIR": str(tmp_path / "shared")}
    argv = [sys.executable, "-m", "ide", "index", str(workspace), "--stats"]
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    figures = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        figures.append(json.loads(out))
    # One parsed the workspace; the other waited for its writer lock and found every file current.
    assert sorted(f["parsed"] for f in figures) == [0, 64]
    assert all(f["symbols"] == 66 for f in figures)
    [db_file] = (tmp_path / "shared").glob("workspaces/*/index.sqlite")
    assert sqlite3.connect(db_file).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_index_follows_what_another_process_wrote(workspace: Path, tmp_path: Path) -> None:
    db_path = tmp_path / "data" / "index.sqlite"
    first, second = CodeIndex(workspace, db_path), CodeIndex(workspace, db_path)
    try:
        assert first.refresh().parsed == 4
        generation = second.generation
        assert second.refresh().parsed == 0  # the other one's work is used, not done again
        assert second.generation == generation + 1  # and its caches know the index changed
    finally:
        first.close()
        second.close()


def _grammars_compiled() -> int:
    """(In a worker process) how many grammars it holds compiled."""
    return extract.compiled.cache_info().currsize


@pytest.mark.skipif(sys.platform != "linux", reason="the workers fork from a fork server on Linux only")
def test_the_index_workers_start_with_every_grammar_compiled() -> None:
    # They fork from a fork server that imported the index and compiled every tagged grammar once
    # (preload.py), instead of each worker compiling the queries it meets (~0.9 s for all nine).
    with parsing.new_pool(2) as pool:
        counts = {pool.submit(_grammars_compiled).result() for _ in range(4)}
    assert counts == {len(TAGGED)}
