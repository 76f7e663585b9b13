"""The feature workflow's project and script: a tiny real CLI project in git (``greeter``), the scripted
lines that add its ``--version`` flag, and the check that the change works."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.support.git import git
from tests.support.runs import Run, scripted_run

CLI = '''"""greeter's command line."""

import argparse

from greeter import __version__


def main(argv=None):
    parser = argparse.ArgumentParser(prog="greeter")
    parser.add_argument("name", nargs="?", default="world")
    args = parser.parse_args(argv)
    print(f"Hello, {args.name}!")
    return 0
'''

TESTS = """from greeter.cli import main


def test_greets(capsys):
    assert main(["Ada"]) == 0
    assert capsys.readouterr().out == "Hello, Ada!\\n"
"""

OLD_ARG = '    parser.add_argument("name", nargs="?", default="world")\n'
NEW_ARG = (
    OLD_ARG + '    parser.add_argument("--version", action="version", version=f"greeter {__version__}")\n'
)
OLD_TEST_END = '    assert capsys.readouterr().out == "Hello, Ada!\\n"\n'
NEW_TEST = (
    OLD_TEST_END
    + """

def test_version(capsys):
    import pytest

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == "greeter 1.2.0\\n"
"""
)

TASK = "add a --version flag to the CLI"


@pytest.fixture
def cli_project(tmp_path: Path) -> Path:
    """A tiny real Python CLI project with one passing test, committed in git."""
    root = tmp_path / "greeter-project"
    (root / "greeter").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "greeter" / "__init__.py").write_text('__version__ = "1.2.0"\n')
    (root / "greeter" / "cli.py").write_text(CLI)
    (root / "tests" / "test_cli.py").write_text(TESTS)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "greeter"\nversion = "1.2.0"\n\n[tool.pytest.ini_options]\n'
    )
    (root / "README.md").write_text("# greeter\n\nSays hello.\n\n## Usage\n\n`greeter NAME` greets NAME.\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "greeter 1.2.0")
    return root


def orchestrator_line(workflow: str = "feature_with_iterative_testing", **stages: bool) -> dict[str, Any]:
    return {
        "role": "orchestrator",
        "content": __import__("json").dumps(
            {
                "workflow": workflow,
                "reason": "the task adds a feature to the CLI",
                "stages": [
                    {"stage_id": k, "include": v, "reason": f"{'needed' if v else 'not needed'}"}
                    for k, v in stages.items()
                ],
            }
        ),
    }


def done(role: str, summary: str, status: str = "done") -> dict[str, Any]:
    return {"role": role, "content": f'{summary}\n{{"status": "{status}", "summary": "{summary}"}}'}


def code_lines() -> list[dict[str, Any]]:
    return [
        {"role": "agent.code", "tool_calls": [{"name": "read_file", "args": {"path": "greeter/cli.py"}}]},
        {
            "role": "agent.code",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "args": {"path": "greeter/cli.py", "old_text": OLD_ARG, "new_text": NEW_ARG},
                }
            ],
        },
        done("agent.code", "added --version, printing greeter's __version__"),
    ]


def lines_of_test_agent() -> list[dict[str, Any]]:
    return [
        {
            "role": "agent.test",
            "tool_calls": [
                {
                    "name": "edit_file",
                    "args": {"path": "tests/test_cli.py", "old_text": OLD_TEST_END, "new_text": NEW_TEST},
                }
            ],
        },
        done("agent.test", "added test_version"),
    ]


FEATURE_SCRIPT = [orchestrator_line(**{"3": False, "4": False}), *code_lines(), *lines_of_test_agent()]


@pytest.fixture
def make_ctx(write_script: Callable[[list[dict[str, Any]]], Path]) -> Callable[..., Run]:
    """``make_ctx(root, lines, task=…, **settings sections)`` → a RunContext with a scripted model."""

    def make(root: Path, lines: list[dict[str, Any]], *, task: str = TASK, **overrides: Any) -> Run:
        script = write_script(lines)
        return scripted_run(
            root, script, architecture="workflow", task=task, checkpointer=InMemorySaver(), **overrides
        )

    return make


def assert_tests_pass_and_version_prints(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    version = subprocess.run(
        [sys.executable, "-c", "from greeter.cli import main; main(['--version'])"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert version.stdout == "greeter 1.2.0\n"
