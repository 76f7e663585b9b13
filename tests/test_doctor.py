"""``arbor doctor``'s git identity check: a real git, with HOME and the global config in a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ide.doctor import git_identity_check
from tests.support.git import GIT_IDENTITY, git


@pytest.fixture
def no_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No identity anywhere git looks: not the variables, not the (temp) global config, no system config."""
    for name in GIT_IDENTITY:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def test_a_missing_identity_fails_with_the_one_line_fix(no_identity: Path) -> None:
    check = git_identity_check(no_identity)
    assert check.ok is False
    assert check.detail == (
        f"user.name and user.email set neither for {no_identity} nor globally: Apply's commit will fail"
    )
    assert (
        check.fix
        == 'git config --global user.name "Your Name" && git config --global user.email "you@example.com"'
    )

    git(no_identity, "config", "user.name", "Dev")  # the repository's own config counts
    check = git_identity_check(no_identity)
    assert (check.ok, check.fix) == (False, 'git config --global user.email "you@example.com"')
    assert check.detail.startswith("user.email set neither")

    git(no_identity, "config", "--global", "user.email", "dev@example.com")
    assert git_identity_check(no_identity).ok is True
    assert "dev@example.com" in (no_identity.parent / "home" / ".gitconfig").read_text()  # the temp one


def test_without_commits_a_missing_identity_is_only_a_note(no_identity: Path) -> None:
    check = git_identity_check(no_identity, "stage")
    assert check.ok is None and "review.commit = stage" in check.detail


def test_the_variables_git_reads_count_as_an_identity(
    no_identity: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    assert git_identity_check(no_identity).ok is True
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")  # a commit needs the committer's too
    assert git_identity_check(no_identity).ok is False


def test_arbor_doctor_warns_before_the_first_apply(no_identity: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ide", "doctor", "-w", str(no_identity)],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "ARBOR_MODEL": "scripted:/nowhere.jsonl"},
        check=False,
    )
    assert done.returncode == 1
    assert f"[FAIL] git identity: user.name and user.email set neither for {no_identity}" in done.stdout
    assert 'fix: git config --global user.name "Your Name" && git config --global user.email' in done.stdout
    assert "Python language server environment\n  python interpreter:" in done.stdout
