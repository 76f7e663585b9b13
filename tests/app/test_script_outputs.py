"""The picture and demo scripts never write into the checkout by default (issue 31, item 7): each one's
default output is a new temporary directory, and a real run of the tree picture leaves ``git status``
clean."""

from __future__ import annotations

import importlib.util
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "auth_screenshot": "output",
    "eval_screenshot": "output",
    "options_screenshot": "output",
    "review_demo": "output",
    "readme_pictures": "output_dir",
    "screenshot": "output",
    "tree_screenshot": "output",
    "steer_screenshots": "output_dir",
    "turn_screenshots": "output_dir",
}
"""Script → the option naming what it writes."""


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"arbor_script_{name}", REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def checkout_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize(("name", "option"), sorted(SCRIPTS.items()))
def test_a_scripts_default_output_is_a_new_temporary_directory(
    name: str, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the directories made here go with the test's
    first = getattr(script(name).parse_args([]), option)
    second = getattr(script(name).parse_args([]), option)
    temp = Path(tempfile.gettempdir()).resolve()
    for path in (first, second):
        assert not path.resolve().is_relative_to(REPO), f"{name} writes into the checkout by default"
        assert path.resolve().is_relative_to(temp)
    assert first != second  # a new directory each run: nothing overwritten
    assert script(name).parse_args([f"--{option.replace('_', '-')}", "/x/y"]).__dict__[option] == Path("/x/y")


def test_the_tree_picture_leaves_the_checkout_clean(
    qapp: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = checkout_status()
    module = script("tree_screenshot")
    assert module.main([]) == 0
    written = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert written.is_file() and written.stat().st_size > 10_000 and written.suffix == ".png"
    assert not written.resolve().is_relative_to(REPO)
    assert checkout_status() == before
