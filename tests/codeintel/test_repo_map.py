"""The repo map: PageRank over who-uses-whom, personalised to the task, within a token budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.codeintel.index import CodeIndex
from ide.codeintel.index.extract import extract
from ide.codeintel.index.repomap import _graph, _personal_rank, repo_map, task_focus


@pytest.fixture
def index(tmp_path: Path) -> CodeIndex:
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "core.py").write_text(
        "class Engine:\n    def start(self) -> None:\n        pass\n\n    def stop(self):\n        pass\n\n"
        "def make_engine(power: int) -> Engine:\n    return Engine()\n"
    )
    for n in range(5):
        (root / "app" / f"user{n}.py").write_text(
            f"from app.core import make_engine\n\n\ndef use{n}():\n    return make_engine({n})\n"
        )
    (root / "app" / "lonely.py").write_text("def forgotten_helper(x):\n    return x\n")
    built = CodeIndex(root, tmp_path / "index.sqlite")
    built.refresh()
    yield built
    built.close()


def test_pagerank_favours_the_node_everyone_points_at(index: CodeIndex) -> None:
    graph = _graph(index)  # the map's own ranking: app/core.py is used by the five user modules
    rank = dict(zip(graph.paths, graph.base_rank, strict=True))
    assert max(rank, key=rank.__getitem__) == "app/core.py"
    assert sum(rank.values()) == pytest.approx(1.0)
    lonely = graph.by_path["app/lonely.py"]
    focused = _personal_rank(graph, {lonely: 1.0}, {})
    assert focused[lonely] > rank["app/lonely.py"]


def test_the_used_module_comes_first_with_methods_under_their_class(index: CodeIndex) -> None:
    text = repo_map(index, budget_tokens=1024)
    lines = text.splitlines()
    assert lines[:5] == [
        "app/core.py:",
        "  class Engine",
        "    def start(self) -> None",
        "    def stop(self)",
        "  def make_engine(power: int) -> Engine",
    ]
    assert text.index("app/core.py:") < text.index("app/lonely.py:")
    assert "  imports: app.core" in text


def test_the_budget_holds(index: CodeIndex) -> None:
    small = repo_map(index, budget_tokens=30)
    assert len(small) <= 30 * 4
    assert small.startswith("app/core.py:")
    assert len(repo_map(index, budget_tokens=64)) < len(repo_map(index, budget_tokens=1024))


def test_a_task_naming_a_file_or_identifier_pulls_it_up(index: CodeIndex) -> None:
    files, names = task_focus(index, "Why is forgotten_helper slow? See lonely.py")
    assert (files, names) == (["app/lonely.py"], ["forgotten_helper"])
    text = repo_map(index, budget_tokens=1024, focus_files=files, focus_names=names)
    assert text.splitlines()[0] == "app/lonely.py:"


@pytest.fixture
def ranked(tmp_path: Path) -> CodeIndex:
    """One module whose functions are used unevenly, one of them private."""
    root = tmp_path / "ws"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "util.py").write_text(
        "def aaa_rarely(x):\n    return x\n\n\ndef zzz_popular(x):\n    return x\n\n\n"
        "def _hidden(x):\n    return x\n"
    )
    for n in range(4):
        (root / "lib" / f"caller{n}.py").write_text(
            f"from lib.util import zzz_popular, _hidden\n\n\ndef call{n}():\n"
            f"    return zzz_popular({n}) + _hidden({n})\n"
        )
    built = CodeIndex(root, tmp_path / "index.sqlite")
    built.refresh()
    yield built
    built.close()


def test_the_used_definition_beats_its_unused_neighbour_in_a_small_budget(ranked: CodeIndex) -> None:
    assert repo_map(ranked, budget_tokens=10).splitlines() == ["lib/util.py:", "  def zzz_popular(x)"]
    # A private name counts a tenth, but used it still beats the unused one.
    assert repo_map(ranked, budget_tokens=16).splitlines() == [
        "lib/util.py:",
        "  def zzz_popular(x)",
        "  def _hidden(x)",
    ]


def test_a_new_file_of_the_change_set_is_ranked_by_who_uses_it(ranked: CodeIndex) -> None:
    source = b"def zzz_popular(x):\n    return -x\n"
    overlay = {"lib/util.py": None, "lib/fresh.py": extract(source, "python")}
    text = repo_map(ranked, budget_tokens=1024, overlay_symbols=overlay)
    assert text.splitlines()[:2] == ["lib/fresh.py:", "  def zzz_popular(x)"]
    assert "lib/util.py" not in text
