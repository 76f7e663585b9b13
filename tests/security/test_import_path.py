"""A repository's own Python files are never imported by Arbor's processes.

``python -m`` puts its working directory first on ``sys.path``, and Arbor starts its children (the
backend of ``arbor run`` and of the window, ``arbor jedi-language-server``) in the user's repository.
Arbor imports much of its stack lazily (the Ollama client with the first Ollama model, pygls with the
first language server), so a hostile repository's ``ollama.py`` ran when ``arbor run`` first asked the
model: code from an untrusted repository, run without asking. multiprocessing's own children (the index's
fork server and resource tracker) start as ``python -c``, which does the same, so a repository's
``multiprocessing/`` package ran at ``arbor index .``. Each file below writes a marker when it is
imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ide import cli, self_command
from tests.support.git import git

SHADOWS = (
    *("ollama.py", "langchain_ollama.py", "httpx.py", "pygls.py", "jedi.py", "ide/__init__.py"),
    "multiprocessing/__init__.py",
)
MODULES = 40
"""Python files in the repository: more than the index parses without its process pool."""


def _hostile(root: Path, markers: Path) -> Path:
    """A git repository whose root shadows modules Arbor imports, each leaving a marker when imported."""
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return 'Hello, ' + name\n")
    for n in range(MODULES):
        (root / f"mod{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n")
    for shadow in SHADOWS:
        path = root / shadow
        path.parent.mkdir(exist_ok=True)
        marker = markers / shadow.replace("/", "_")
        path.write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('hostile {shadow}')\n")
    (root / "ide" / "__main__.py").write_text(f"open({str(markers / 'ide_main')!r}, 'w').close()\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "hostile")
    return root


def _arbor_script() -> str:
    """The ``arbor`` console script of this interpreter, as a user starts it."""
    script = Path(sys.executable).with_name("arbor")
    assert script.exists(), f"no arbor script beside {sys.executable}: install Arbor (pip install -e .)"
    return str(script)


def test_arbor_run_in_a_hostile_repository_imports_none_of_its_files(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = _hostile(tmp_path / "repo", markers)
    run = subprocess.run(
        [_arbor_script(), "run", "say hi"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ.copy(),
    )
    assert sorted(path.name for path in markers.iterdir()) == []
    # The backend asked the model with the real Ollama client (the isolated env's port 9 refuses it); with
    # the repository's ollama.py first on its path it said the provider was not installed.
    assert run.returncode != 0
    assert "Ollama is not reachable at http://127.0.0.1:9" in run.stderr, run.stderr


def test_arbors_children_never_start_from_a_package_in_their_working_dir(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = _hostile(tmp_path / "repo", markers)
    child = subprocess.run(self_command("--help"), cwd=repo, capture_output=True, text=True, timeout=60)
    assert sorted(path.name for path in markers.iterdir()) == []
    assert child.returncode == 0 and "usage: arbor" in child.stdout


def test_arbor_index_in_a_hostile_repository_imports_none_of_its_files(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = _hostile(tmp_path / "repo", markers)
    run = subprocess.run(
        [_arbor_script(), "index", "."], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert sorted(path.name for path in markers.iterdir()) == []
    assert run.returncode == 0, run.stderr
    assert f"{len(list(repo.rglob('*.py')))} parsed" in run.stdout


def test_the_index_pools_children_never_import_from_the_working_dir(tmp_path: Path) -> None:
    """Whatever the core count (the pool is skipped on one core): the pool's fork server and workers, started
    by a process whose own path is clean but whose flags carry no -P."""
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = _hostile(tmp_path / "repo", markers)
    code = (
        "import sys; sys.path.remove('')\n"
        "from ide.codeintel.index.parsing import new_pool\n"
        "with new_pool(2) as pool:\n"
        "    print(pool.submit(abs, -3).result())\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120)
    assert sorted(path.name for path in markers.iterdir()) == []
    assert run.stdout.strip() == "3", run.stderr


def test_the_working_dir_leaves_the_path_unless_arbor_comes_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    cli._drop_working_dir_from_path()
    assert sys.path[0] != "" and str(repo) not in sys.path
    monkeypatch.setattr(sys, "path", [str(repo), *sys.path])
    cli._drop_working_dir_from_path()
    assert str(repo) not in sys.path
    # A source tree run in place (python -m ide in Arbor's own checkout) keeps it: ide is imported from it.
    source = Path(cli.__file__).resolve().parent.parent
    monkeypatch.chdir(source)
    monkeypatch.setattr(sys, "path", [str(source), *sys.path])
    cli._drop_working_dir_from_path()
    assert sys.path[0] == str(source)
