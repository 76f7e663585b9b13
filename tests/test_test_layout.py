"""The tests' own layout: what several test modules share lives in ``tests/support``, so no test file (a
conftest.py included) imports another test module — importing one runs its module body, duplicates its
fixtures in the importer's namespace and ties two test files' fates together.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SHARED = "tests.support"


def _module(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def foreign_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The ``tests.*`` modules outside tests/support that ``source`` (the module named ``module``) imports,
    relative imports resolved, at any depth."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            origin = ".".join(base + ([node.module] if node.module else []))
            # ``from tests import x`` names the module tests.x; ``from tests.x import y`` the module tests.x.
            targets = [f"{origin}.{alias.name}" for alias in node.names] if origin == "tests" else [origin]
        else:
            continue
        found += [
            name
            for name in targets
            if name.startswith("tests.") and name != SHARED and not name.startswith(SHARED + ".")
        ]
    return found


def test_no_test_file_imports_another_test_module() -> None:
    offenders = {
        str(path.relative_to(TESTS.parent)): names
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts  # npm's packages (node-pty ships Python 2 scripts)
        and (
            names := foreign_imports(
                path.read_text(), ".".join(_module(path, TESTS.parent)), path.name == "__init__.py"
            )
        )
    }
    assert offenders == {}, "move what they share into tests/support"


def test_the_finder_sees_every_form_of_import_and_lets_tests_support_pass() -> None:
    sample = (
        "import os\n"
        "import tests.app.support\n"
        "from tests.llm.conftest import make_settings\n"
        "from tests import conftest, support\n"
        "from .conftest import git\n"
        "from ..search import test_lats\n"
        "from tests.support.window import qloop\n"
        "import tests.support.git\n"
        "def late():\n"
        "    from tests.workflows.conftest import indexed\n"
    )
    assert foreign_imports(sample, "tests.changes.test_review") == [
        "tests.app.support",
        "tests.llm.conftest",
        "tests.conftest",
        "tests.changes.conftest",
        "tests.search",
        "tests.workflows.conftest",
    ]
    assert foreign_imports("from . import git\nfrom .runs import Run\n", "tests.support.window") == []


def test_what_the_tests_start_caches_its_bytecode_outside_the_sources(tmp_path: Path) -> None:
    """A process a test starts (here a script in a workspace of the test's) writes bytecode to the suite's
    cache directory and never a ``__pycache__`` beside the sources (tests/conftest.py)."""
    import os
    import subprocess
    import sys

    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    code = "import sys, helper; print(sys.dont_write_bytecode, sys.pycache_prefix)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", os.environ["PYTHONPYCACHEPREFIX"]]
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    assert not (tmp_path / "__pycache__").exists()
    cached = Path(os.environ["PYTHONPYCACHEPREFIX"], *tmp_path.resolve().parts[1:], "helper.cpython-*.pyc")
    assert list(cached.parent.glob(cached.name)), "the helper's bytecode was not cached"


def test_window_tests_sit_in_the_folder_of_the_feature_they_test() -> None:
    """A window test of one feature is in ``tests/app/FEATURE/``, named after the module it tests where it
    tests one (``ide/app/review/pane.py`` → ``tests/app/review/test_pane.py``): findable from the module."""
    app = TESTS.parent / "ide" / "app"
    features = {path.name for path in app.iterdir() if (path / "__init__.py").is_file()}
    folders = {
        path.name for path in (TESTS / "app").iterdir() if path.is_dir() and path.name != "__pycache__"
    }
    assert folders - features == set(), "a tests/app folder names no package of ide/app"
