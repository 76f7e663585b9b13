"""The fuzzy tier of symbol search answered from bit sets gives exactly what the SQL path gives.

The guard of the speed-up (issue 32): on a real index of a real tree (this repository's ``ide`` package)
every query of a seeded set — whole names, prefixes, inner substrings, subsequences, one letter — finds the
same symbols in the same order with the same scores through ``CodeIndex.search`` (bit sets) as through
``store.search`` without them (the SQL ``LIKE`` pass over every name, as before), and the fuzzy names
agree with a plain Python reading of the ranking over every distinct name.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import ide.codeintel.index.store as store
import ide.codeintel.index.subsequence as subsequence
from ide.codeintel.index import CodeIndex
from ide.codeintel.index.subsequence import NameBits

REPO = Path(__file__).resolve().parents[2]
ODD_QUERIES = ["dbgflag", "dbg", "DF", "d", "gdf", "_", "$d", "-f", ".f", "é", "ｄ", "2", "x1", "zz", "#"]
WAYS = [
    {},  # as configured: name by name when few match or few are left, bit planes when many match
    {"SCORE_ONE_BY_ONE": 0, "FEW": 0},  # always the bit planes
    {"SCORE_ONE_BY_ONE": 10**9, "FEW": 10**9},  # always name by name after the first letter
]


def reference_fuzzy(names: list[str], query: str, pool: int) -> list[str]:
    """The fuzzy tier's ranking read plainly: every name holding the query's letters in order (ASCII
    letters in either case, as SQLite's LIKE), by score, then shorter, then by name; scores above zero."""
    q = query.lower()
    scored = []
    for name in names:
        folded = "".join(ch.lower() if ch.isascii() else ch for ch in name)
        at = 0
        for ch in q:
            at = folded.find(ch, at) + 1
            if not at:
                break
        else:
            score = store.fuzzy_score(name, q)
            if score > 0:
                scored.append((-score, len(name), name))
    return [name for _score, _length, name in sorted(scored)[:pool]]


def made_queries(names: list[str], count: int, seed: int) -> list[str]:
    """Real names cut as bench/index.py cuts them, plus queries that match thousands of names."""
    rng = random.Random(seed)
    made = ["e", "t", "_", "se", "get", "__", "dbgflag", "Tst", "SYMB", "x$", "a-b", "\u00e9t"]
    for name in rng.sample([n for n in names if len(n) >= 6], count):
        cut = rng.randrange(4)
        if cut == 0:
            made.append(name)
        elif cut == 1:
            made.append(name[: rng.randint(3, len(name) - 1)])
        elif cut == 2:
            start = rng.randint(1, len(name) - 4)
            made.append(name[start : start + rng.randint(3, len(name) - start)])
        else:
            made.append(name[0] + "".join(ch for ch in name[1:] if rng.random() < 0.5)[:5])
    return made


@pytest.fixture(scope="module")
def ide_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeIndex]:
    root = tmp_path_factory.mktemp("tree") / "ide"
    shutil.copytree(REPO / "ide", root, ignore=shutil.ignore_patterns("__pycache__"))
    index = CodeIndex(root, tmp_path_factory.mktemp("db") / "index.sqlite", workers=1)
    index.refresh()
    yield index
    index.close()


def test_search_through_bit_sets_is_the_sql_search(ide_index: CodeIndex) -> None:
    names = [row[0] for row in ide_index.db.execute("SELECT DISTINCT name FROM defs")]
    assert len(names) > 2000  # a real tree: enough names for queries that match thousands
    queries = made_queries(names, 300, seed=32)
    ide_index.search("zzqqxxjj", 30)  # the first fuzzy search of a generation is answered in SQL
    ide_index.search("zzqqxxjj", 30)  # the second builds the bit sets
    built = ide_index._names  # the bit sets answer below, not SQL
    assert built is not None
    for query in queries:
        assert ide_index.search(query, 30) == store.search(ide_index.db, query, 30), query
    assert ide_index._names is built  # nothing was written: the same bit sets


def test_fuzzy_names_agree_with_the_plain_ranking(
    ide_index: CodeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [row[0] for row in ide_index.db.execute("SELECT DISTINCT name FROM defs")]
    bits = NameBits(names)
    queries = made_queries(names, 150, seed=36)
    heavy = 0
    for query in queries:
        if not subsequence.handles(query):
            continue
        expected = reference_fuzzy(names, query, 60)
        assert store.fuzzy_names(ide_index.db, query, 60) == expected, query
        assert bits.best(query, 60) == expected, query
        matching = sum(subsequence.like_subsequence(name, query.lower()) for name in names)
        heavy += matching > subsequence.SCORE_ONE_BY_ONE
    assert heavy >= 3  # queries scored in bit planes, not one by one
    for ways in WAYS[1:]:  # every query again each other way
        for name, value in ways.items():
            monkeypatch.setattr(subsequence, name, value)
        for query in queries:
            if subsequence.handles(query):
                assert bits.best(query, 60) == reference_fuzzy(names, query, 60), (query, ways)


@pytest.mark.parametrize("pool", [1, 3, 50])
def test_word_starts_case_and_odd_names(pool: int, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [
        "get_debug_flag", "getDebugFlag", "GetDebugFlag", "GETDEBUGFLAG", "debug.flag", "$debug-flag",
        "gdf", "g_d_f", "gXdXf", "dbg", "ｄｂｇ_flag", "déjà_vu_debug", "line\nbreak_dbg", "d", "Ddd",
        "dbgflag", "dbg_flag2", "x1_debug_flag", "__debug__", "aDBGflag", "dB_gF", "naïve#tag",
    ]  # fmt: skip
    bits = NameBits(names)
    for ways in WAYS:
        for name, value in ways.items():
            monkeypatch.setattr(subsequence, name, value)
        for query in ODD_QUERIES:
            if subsequence.handles(query):
                assert bits.best(query, pool) == reference_fuzzy(names, query, pool), (query, ways)
        monkeypatch.undo()


def test_a_new_definition_is_found_fuzzily_after_an_update(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("".join(f"def helper_{i}():\n    pass\n" for i in range(30)))
    index = CodeIndex(root, tmp_path / "index.sqlite")
    index.refresh()
    for _ in range(2):  # answered in SQL, then from the bit sets built for this generation
        assert [hit.name for hit in index.search("hlpr29", 5)][:1] == ["helper_29"]
    (root / "pkg" / "b.py").write_text("def quarterly_report_total():\n    pass\n")
    index.update_paths([root / "pkg" / "b.py"])
    for _ in range(3):
        assert [hit.name for hit in index.search("qrtrly", 5)] == ["quarterly_report_total"]
    (root / "pkg" / "b.py").unlink()
    index.update_paths([root / "pkg" / "b.py"])
    for _ in range(3):
        assert index.search("qrtrly", 5) == []
    index.close()


def test_sqlite_like_is_what_the_bit_sets_copy(tmp_path: Path) -> None:
    """The reference's reading of LIKE (ASCII letters fold, nothing else does) is SQLite's own."""
    db = sqlite3.connect(tmp_path / "like.sqlite")
    for name, pattern, expected in [("Déjà", "%d%é%", 1), ("DÉJÀ", "%d%é%", 0), ("ABC", "%a%c%", 1)]:
        assert db.execute("SELECT ? LIKE ?", (name, pattern)).fetchone()[0] == expected
    db.close()


def test_letter_bit_sets_from_the_code_planes(ide_index: CodeIndex) -> None:
    """A letter's occurrences are ANDs of the text's seven code planes: the same bits as reading the text
    for that letter, for every character the names hold (and the separators in each)."""
    names = [row[0] for row in ide_index.db.execute("SELECT DISTINCT name FROM defs")]
    bits = NameBits([*names, "odd$name", "dash-name", "x.y", "UPPER_9"])
    assert len(bits._letters) > 30
    for letter in sorted(bits._letters - {subsequence.SEPARATOR}):
        expected = subsequence._bits(bits._lower, letter + subsequence.SEPARATOR)
        assert bits._occurs(letter) == expected, letter
