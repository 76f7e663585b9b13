"""Symbol search ranks a definition in test code after an equal one in the code under test (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.codeintel.index import CodeIndex
from ide.codeintel.index.store import in_tests


def test_a_tests_own_class_ranks_after_the_real_one(tmp_path: Path) -> None:
    root = tmp_path / "flask"
    for rel, source in {
        "src/flask/app.py": "class Flask:\n    def run(self):\n        pass\n",
        "tests/test_basic.py": "class Flask:\n    pass\n\ndef run():\n    pass\n",
        "conftest.py": "def run():\n    pass\n",
        "src/flask/cli.py": "def run():\n    pass\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    index = CodeIndex(root, tmp_path / "index.sqlite")
    index.refresh()
    hits = [(hit.path, hit.name) for hit in index.search("Flask", 5)]
    assert hits[:2] == [("src/flask/app.py", "Flask"), ("tests/test_basic.py", "Flask")]
    # Equal functions: outside tests first (shallower first among them), then the tests'.
    assert [hit.path for hit in index.search("run", 5) if hit.kind == "function"] == [
        "src/flask/cli.py",
        "conftest.py",
        "tests/test_basic.py",
    ]
    index.close()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_basic.py", True),
        ("src/pkg/tests/helpers.py", True),
        ("test_app.py", True),
        ("pkg/app_test.go", True),
        ("web/button.spec.ts", True),
        ("web/button.test.js", True),
        ("polls/tests.py", True),
        ("conftest.py", True),
        ("src/flask/app.py", False),
        ("src/contest/latest.py", False),
        ("src/testing_utils.py", False),
        ("docs/attestation.py", False),
    ],
)
def test_what_counts_as_test_code(path: str, expected: bool) -> None:
    assert in_tests(path) is expected
