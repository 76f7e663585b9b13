"""Every git Arbor runs goes through ``ide.gitsafe.run_git``: no module of ``ide/`` builds git's argv and
environment by hand (``git_argv`` or ``base_argv`` with ``git_env``), and ``run_git`` runs what those
callers ran: the repository's programs blanked, our secrets left out, their extra variables added,
messages untranslated."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from ide.changes.gitutil import cat_blob, find_repo
from ide.gitsafe import run_git
from tests.support.git import git

ROOT = Path(__file__).resolve().parents[1]
PAIR = frozenset({"git_argv", "base_argv", "git_env"})
"""The pieces of a hand-built git call; only ide/gitsafe.py puts them together."""

NEEDS_THE_PAIR: dict[str, str] = {}
"""Modules of ide/ that truly need the raw pair, and why: none (run_git takes stdin, text, a timeout,
extra variables and a git without the repository's overrides)."""

NOT_MOVED_YET: dict[str, str] = {}
"""Modules still to move to run_git; an entry that no longer uses the pair fails the test, so this empties."""


def pair_uses(source: str) -> set[str]:
    """The names of :data:`PAIR` that ``source`` imports from ide.gitsafe or refers to."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "gitsafe":
            found |= {alias.name for alias in node.names} & PAIR
        elif isinstance(node, ast.Attribute) and node.attr in PAIR:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in PAIR:
            found.add(node.id)
    return found


def test_no_module_of_ide_pairs_git_argv_and_git_env_by_hand() -> None:
    users = {
        path.relative_to(ROOT).as_posix(): sorted(names)
        for path in sorted((ROOT / "ide").rglob("*.py"))
        if path != ROOT / "ide" / "gitsafe.py" and (names := pair_uses(path.read_text(encoding="utf-8")))
    }
    unexplained = {path: names for path, names in users.items() if path not in NEEDS_THE_PAIR | NOT_MOVED_YET}
    assert unexplained == {}, "run git through ide.gitsafe.run_git (or say in NEEDS_THE_PAIR why not)"
    stale = sorted(path for path in NEEDS_THE_PAIR | NOT_MOVED_YET if path not in users)
    assert stale == [], "these no longer build the pair: take them off the list"


def test_the_finder_sees_every_way_of_reaching_the_pair() -> None:
    assert pair_uses("from ide.gitsafe import git_argv, run_git\n") == {"git_argv"}
    assert pair_uses("from ..gitsafe import git_env as env\n") == {"git_env"}
    assert pair_uses("import ide.gitsafe as g\ng.base_argv()\n") == {"base_argv"}
    assert pair_uses("from ide import gitsafe\nargv = gitsafe.git_argv\n") == {"git_argv"}
    assert pair_uses("from ide.gitsafe import run_git\nrun_git('.', 'status')\n") == set()


def test_run_git_blanks_the_repositorys_programs(git_workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "payload-ran"
    script = tmp_path / "payload.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(0o755)
    (git_workspace / ".gitattributes").write_text("*.py filter=evil\n")
    git(git_workspace, "config", "filter.evil.clean", str(script))

    done = run_git(git_workspace, "hash-object", "pkg/greet.py")

    assert done.returncode == 0 and len(done.stdout.strip()) == 40, done.stderr
    assert not marker.exists(), "the repository's clean filter ran"


def test_run_git_gives_git_our_environment_without_secrets_plus_the_callers_extras(
    git_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    # An alias given on the command line (ours, not the repository's) prints what git's children get.
    done = run_git(
        git_workspace, "-c", "alias.showenv=!env", "showenv", env_extra={"GIT_INDEX_FILE": "x"}, text=True
    )

    assert done.returncode == 0, done.stderr
    env = dict(line.partition("=")[::2] for line in done.stdout.splitlines())
    assert env["LC_ALL"] == "C" and env["GIT_INDEX_FILE"] == "x"
    assert env["GIT_ALLOW_PROTOCOL"] == "" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert "OPENAI_API_KEY" not in env


def test_run_git_passes_on_subprocess_runs_answers(git_workspace: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError):
        run_git(git_workspace, "rev-parse", "--verify", "-q", "no-such-branch", check=True)
    assert b" commit " in run_git(git_workspace, "cat-file", "--batch-check", input=b"HEAD\n").stdout
    with pytest.raises(ValueError, match="null byte"):
        run_git(git_workspace, "cat-file", "blob", "HEAD:a\0b")


def test_a_blob_name_git_cannot_be_given_is_no_blob(git_workspace: Path) -> None:
    repo = find_repo(git_workspace)
    assert repo is not None
    assert cat_blob(repo, "HEAD:pkg/greet.py") == (git_workspace / "pkg" / "greet.py").read_bytes()
    assert cat_blob(repo, "HEAD:pkg/\0greet.py") is None
