"""Issue 50's speed-ups of the cold index extract the same: each faster path against the code it
replaced (kept here as the reference), file for file and field for field, over the standard library's
Python files, the language samples and sources made to reach the fallbacks. ``test_index_output.py``
pins what a whole pass writes and finds."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tree_sitter import Node

import ide.codeintel.index.extract as extract
import ide.codeintel.index.parsing as parsing
import ide.codeintel.index.store as store
from ide.codeintel.index.extract import (
    _COMMENT_MARK,
    _TRAILING_COMMENT,
    SIGNATURE_CAP,
    _doc,
    _one_line,
    _text,
)
from ide.codeintel.index.model import Definition
from tests.support.language_samples import CPP, GO, JAVA, JAVASCRIPT, PYTHON, RUST, TSX, TYPESCRIPT, C

LONG = "a" * 210
EDGES = [
    # Parameter lists and return types over lines, with comments, repeated (the caches), non-ASCII.
    'def f(\n    a,\n    b,  # two\n) -> "x" :  # note\n    """  -- marker doc\n\n more"""\n',
    "class C:  # c\n    '''#  hash doc'''\n    def m(self): '/* c-style */'\n    def n(self): pass\n",
    'def h(self) -> None:\n    """\n\n    *  starred */\n    """\n\ndef h2(self) -> None:\n'
    '    r"""; semi"""\n',
    'def ü(x: "Ä" = "ß") -> dict[\n    str, int\n]:\n    "\\t\\x0b tab first"\n',
    'def g():\n    """\n    \n    /// three\n    """\ndef g2():\n    """ ##"""\n    return 1\n',
    "def d():\n    '''   \n   -- \n   ;;; x'''\n",
    "def e():\n    f'''fmt {x}'''\n",
    "def a(self, *args, **kwargs) -> 'A':\n    ...\n" * 3,
    # Two texts of one name once cut to NAME_CAP: the references' lines interleave by name.
    f"{LONG}X()\n{LONG}Y()\nprint()\n{LONG}X()\nprint()\n",
    # Invalid UTF-8 in names and uses.
    "def \udcff():\n    pass\n".encode("utf-8", "surrogateescape").decode("latin-1"),
    "x = 1\n",
    "",
]


def _reference_python_definition(
    node: Node, body: Node, source: bytes, name: str, qualname: str, kind: str, parent: str
) -> Definition | None:
    """``_python_definition`` before issue 50."""
    node_type = node.type
    if node_type == "function_definition":
        params_node = node.child_by_field_name("parameters")
        returns_node = node.child_by_field_name("return_type")
    elif node_type != "class_definition":
        return None
    else:
        params_node = returns_node = None
    start = node.start_byte
    signature = source[start : min(body.start_byte, start + SIGNATURE_CAP * 4)].decode("utf-8", "replace")
    signature = signature.rstrip()
    if "#" in signature or "//" in signature:
        signature = _TRAILING_COMMENT.sub("", signature)
    signature = _one_line(signature.rstrip().rstrip(":{").rstrip(), SIGNATURE_CAP)
    return Definition(
        name,
        qualname,
        kind,
        node.start_point[0] + 1,
        node.end_point[0] + 1,
        signature,
        _one_line(_text(source, params_node, SIGNATURE_CAP), SIGNATURE_CAP) if params_node else "",
        _one_line(_text(source, returns_node, 120).lstrip(":").strip(), 120) if returns_node else "",
        _doc(node, body, source, "python"),
        parent,
    )


def _reference_first_line(text: str) -> str:
    for line in text.splitlines():
        line = _COMMENT_MARK.sub("", line).strip().rstrip("*/").strip()
        if line:
            return _one_line(line, extract.DOC_CAP)
    return ""


def _sources() -> list[tuple[str, bytes]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted([*stdlib.glob("*.py"), *stdlib.glob("[a-l]*/**/*.py")])
    files = [path for path in files if "site-packages" not in path.parts]
    found = [("python", path.read_bytes()) for path in files]
    found += [("python", text.encode("latin-1" if "\udcff" not in text else "utf-8")) for text in EDGES]
    found += [("python", EDGES[-3].encode("latin-1").replace(b"def \xc3\xbf", b"def \xff"))]
    samples = {
        "python": PYTHON,
        "javascript": JAVASCRIPT,
        "typescript": TYPESCRIPT,
        "tsx": TSX,
        "go": GO,
        "rust": RUST,
        "java": JAVA,
        "c": C,
        "cpp": CPP,
    }
    found += [(language, text.encode()) for language, text in samples.items()]
    found += [("cpp", b"void a::b::f() { std::make_unique<T>(); a::f(); f(); }\n")]
    return found


def test_the_faster_extraction_gives_what_the_code_before_gave(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = _sources()
    assert len(sources) > 800
    monkeypatch.setattr(extract, "_CACHED_MAX", 50)  # the caches are emptied many times over
    new = [extract.extract(source, language) for language, source in sources]
    for name, reference in (
        ("_python_definition", _reference_python_definition),
        ("_first_line", _reference_first_line),
        ("_add_references", extract._add_references_by_name),
    ):
        monkeypatch.setattr(extract, name, reference)
    old = [extract.extract(source, language) for language, source in sources]
    assert sum(len(symbols.definitions) for symbols in old) > 20_000
    assert sum(len(symbols.references) for symbols in old) > 20_000
    for (language, source), a, b in zip(sources, new, old, strict=True):
        assert a == b, (language, source[:200])


def test_references_of_one_name_from_two_texts_keep_their_order() -> None:
    """Two uses whose texts differ but whose names (cut to ``NAME_CAP``) are one: their lines in source
    order, each once, as the one-node-at-a-time code gave them."""
    symbols = extract.extract(EDGES[8].encode(), "python")
    assert symbols.references == {LONG[: extract.NAME_CAP]: [1, 2, 4], "print": [3, 5]}


def _indexes(db: sqlite3.Connection) -> set[tuple[str, str]]:
    return set(db.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('index', 'trigger')"))


def test_a_bulk_pass_on_an_empty_index_builds_the_indexes_by_file_it_dropped(tmp_path: Path) -> None:
    """A bulk pass on an empty index drops the indexes of rows by file while it fills the tables and
    builds them at its end; one killed before its end leaves them to the next connection, as the name
    indexes and triggers. Over an index with rows it keeps them (its files' old rows go by file)."""
    rows = (
        None,
        "ok",
        "",
        1,
        [("f", "f", "function", 1, 1, "def f()", "()", "", "", "")],
        [("g", "1", 1)],
        ["m"],
    )
    by_file = {("defs_file", "defs"), ("refs_file", "refs"), ("imports_file", "imports")}
    db = store.connect(tmp_path / "index.sqlite")
    schema = _indexes(db)
    assert by_file <= schema
    with store.bulk(db):
        assert not by_file & _indexes(db)
        store.write_files(db, [(f"m{i}.py", 1, 1, "", rows, None) for i in range(100)])
    assert _indexes(db) == schema
    with store.bulk(db):  # not empty now
        assert by_file <= _indexes(db)
        store.write_files(db, [(f"m{i}.py", 1, 1, "", rows, i + 1) for i in range(50)])
    assert _indexes(db) == schema
    assert db.execute("SELECT count(*) FROM defs").fetchone()[0] == 100
    plan = db.execute("EXPLAIN QUERY PLAN DELETE FROM refs WHERE file_id = 3").fetchall()
    assert "refs_file" in str(plan)
    db.close()

    killed = tmp_path / "killed.sqlite"
    script = (
        "import os, sys\n"
        "import ide.codeintel.index.store as store\n"
        "db = store.connect(__import__('pathlib').Path(sys.argv[1]))\n"
        "rows = (None, 'ok', '', 1, [('f', 'f', 'function', 1, 1, 'def f()', '()', '', '', '')], [], [])\n"
        "with store.bulk(db):\n"
        "    store.write_files(db, [(f'm{i}.py', 1, 1, '', rows, None) for i in range(10)])\n"
        "    db.commit()\n"
        "    os._exit(0)  # killed before the pass's end\n"
    )
    subprocess.run([sys.executable, "-c", script, str(killed)], check=True, cwd=Path(__file__).parents[2])
    before = sqlite3.connect(killed)
    assert not by_file & _indexes(before)
    before.close()
    again = store.connect(killed)
    assert _indexes(again) == schema
    assert [symbol.path for symbol in store.search(again, "f", 3)] == ["m0.py", "m1.py", "m2.py"]
    again.close()


def test_a_worker_parses_a_batch_without_the_cycle_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool's workers run a batch with the cyclic collector off and turn it on again after it, also
    when the batch fails; the rows are the ones the calling process makes (it leaves its collector alone)."""
    for name, text in EDGES_FILES.items():
        (tmp_path / name).write_text(text)
    jobs = [parsing.Job(name, None, "") for name in EDGES_FILES]
    pool = parsing.new_pool(1)
    assert pool._initializer is parsing._in_worker  # type: ignore[attr-defined]
    pool.shutdown()
    seen: list[bool] = []
    real = parsing._index_batch

    def watched(root: str, batch: list[parsing.Job]) -> list[parsing.Result]:
        seen.append(gc.isenabled())
        return real(root, batch)

    monkeypatch.setattr(parsing, "_index_batch", watched)
    here = parsing.index_batch(str(tmp_path), jobs)
    monkeypatch.setattr(parsing, "_worker", True)
    assert parsing.index_batch(str(tmp_path), jobs) == here
    assert seen == [True, False] and gc.isenabled()
    monkeypatch.setattr(parsing, "_index_batch", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        parsing.index_batch(str(tmp_path), jobs)
    assert gc.isenabled()
    assert sum(len(rows[4][4]) for rows in here if rows[4]) > 5


EDGES_FILES = {"a.py": EDGES[0], "b.py": EDGES[1], "c.go": GO, "d.rs": RUST, "e.txt": "text\n"}
